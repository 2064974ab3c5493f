"""The plan's choice of cold-start inputs: which image, which weights from where, which accelerator.

components/specs/startup.py does the arithmetic; the figures live in components/catalog/startup_figures.py.
The weight source is a choice of the plan: Hugging Face today, a shared model cache when a stack has one.
"""

from __future__ import annotations

import math

from components.catalog import startup_figures as figures
from components.catalog import weight_loading as cache_figures
from components.catalog.accelerators import ACCELERATORS
from components.catalog.cloud_resources import CLOUD_RESOURCES
from components.catalog.models import ModelSpec
from components.catalog.startup_figures import WeightSource
from components.specs import payoff_table
from components.specs.connectors import OWN_IMAGES
from components.specs.model_cache import ModelCache
from components.specs.startup import ColdStart, StartupInputs, cold_start
from stacks.config import StackConfig
from stacks.config.backend_choice import filesystem_of

# The sizes of the images accelerators and connectors pin themselves, by repository.
_OWN_IMAGE_BYTES = {cache_figures.image_repository(i.reference): i.compressed_bytes for i in OWN_IMAGES}


def known_image_bytes(image: str) -> int | None:
    """The catalog's size of an image by repository (tag or digest stripped): the shared images' table, else
    the size an accelerator or a connector pins with its own image; None: an image the catalog does not know."""
    repository = cache_figures.image_repository(image)
    return figures.IMAGE_BYTES.get(repository, _OWN_IMAGE_BYTES.get(repository))


def image_bytes(image: str) -> int:
    """`known_image_bytes`, unknown images the largest."""
    known = known_image_bytes(image)
    return figures.UNKNOWN_IMAGE_BYTES if known is None else known


def weight_source(config: StackConfig, cache: ModelCache | None, readers: int = 1) -> WeightSource:
    """Where one model-server pod reads its weights: Hugging Face, or the model cache's volume, whose
    bandwidth `readers` pods reading at once share (the tier's backend, as the payoff table derives it)."""
    if cache is None:
        return figures.HUGGING_FACE
    if cache.shared_with_tier:
        fs = filesystem_of(config, readers)
        share = payoff_table.filesystem_share(fs)
        if share is not None:
            name = f"model cache, {fs.backend}"
            return WeightSource(name, int(share), f"{fs.aggregate_from}; {fs.per_client_from}; {readers} reading")
    return WeightSource(
        "model cache, assumed class",
        cache_figures.ASSUMED_DEDICATED_READ_BYTES_PER_SECOND,
        "a ReadWriteMany class of unknown bandwidth (assumed, components/catalog/weight_loading.py)",
    )


def model_server_cold_start(
    config: StackConfig,
    accelerator: str,
    model: ModelSpec,
    image: str,
    cache: ModelCache | None = None,
    *,
    readers: int = 1,
    image_on_node: bool = False,
    image_streamed: bool = False,
    warm: bool = False,
) -> ColdStart:
    """One model-server pod. By default on a node that has neither its image nor its weights, with an
    empty compile cache; `readers` pods read the model cache at once; `warm`: its compile cache is filled
    (a restart, or any pod after the first, when the compile cache is kept); `image_streamed`: GKE
    streams the image (not its first pull), so the pod waits only for what it reads at start."""
    accelerator_profile = ACCELERATORS[accelerator]
    profile = accelerator_profile.load
    streamed = cache is not None and cache.load_format == "runai_streamer"
    compile_seconds = profile.compile_seconds
    if warm and cache is not None and cache.compile_cache:
        compile_seconds = math.ceil(compile_seconds * accelerator_profile.warm_compile_ratio)
    return cold_start(
        StartupInputs(
            image=image,
            image_bytes=0 if image_on_node else _pulled_bytes(image, image_streamed),
            pull_bytes_per_second=figures.PULL_BYTES_PER_SECOND,
            weight_bytes=model.weight_bytes.bytes,
            weight_source=weight_source(config, cache, readers),
            load_bytes_per_second=(
                cache_figures.STREAMED_LOAD_BYTES_PER_SECOND if streamed else profile.load_bytes_per_second
            ),
            compile_seconds=compile_seconds,
            margin_ratio=figures.MARGIN_RATIO,
            margin_floor_seconds=figures.MARGIN_FLOOR_SECONDS,
        )
    )


def _pulled_bytes(image: str, streamed: bool) -> int:
    size = image_bytes(image)
    return math.ceil(size * figures.STREAMED_IMAGE_READ_RATIO) if streamed else size


def fetch_job_cold_start(config: StackConfig, cache: ModelCache, model: ModelSpec) -> ColdStart:
    """The model cache's Job: the weights from Hugging Face, written to the volume (its "load")."""
    return cold_start(
        StartupInputs(
            image=config.model_cache.image,
            image_bytes=image_bytes(config.model_cache.image),
            pull_bytes_per_second=figures.PULL_BYTES_PER_SECOND,
            weight_bytes=model.weight_bytes.bytes,
            weight_source=figures.HUGGING_FACE,
            load_bytes_per_second=weight_source(config, cache).bytes_per_second,
            compile_seconds=0,
            margin_ratio=figures.MARGIN_RATIO,
            margin_floor_seconds=figures.MARGIN_FLOOR_SECONDS,
        )
    )


def daemon_cold_start(image: str, pinned_bytes: int) -> ColdStart:
    """A per-node cache daemon: pull, start, and touch the host memory it pins up front."""
    pin_seconds = math.ceil(pinned_bytes / figures.PIN_BYTES_PER_SECOND)
    return _weightless_cold_start([image], figures.MARGIN_RATIO, figures.DAEMON_START_SECONDS + pin_seconds)


def prepull_cold_start(pulled: list[str]) -> ColdStart:
    """The image pre-pull pod: its images pulled one after the other (the kubelet pulls serially by
    default), its tiny containers' own start within the margin."""
    return _weightless_cold_start(pulled, figures.MARGIN_RATIO, 0)


def job_cold_start(image: str, active_deadline_seconds: int) -> ColdStart:
    """A Job Pulumi waits on: its own deadline bounds it, so Pulumi waits at least that long (the Job's
    failure, with its message, arrives before the engine gives up)."""
    return _weightless_cold_start([image], 0.0, active_deadline_seconds)


def _weightless_cold_start(pulled: list[str], margin_ratio: float, other_seconds: int) -> ColdStart:
    """A workload that loads no weights: its images pulled, then `other_seconds` of its own."""
    return cold_start(
        StartupInputs(
            image=", ".join(pulled),
            image_bytes=sum(image_bytes(i) for i in pulled),
            pull_bytes_per_second=figures.PULL_BYTES_PER_SECOND,
            weight_bytes=0,
            weight_source=figures.HUGGING_FACE,
            load_bytes_per_second=1,
            compile_seconds=0,
            margin_ratio=margin_ratio,
            margin_floor_seconds=figures.MARGIN_FLOOR_SECONDS,
            other_seconds=other_seconds,
        )
    )


def cloud_create_timeout(resource_type: str) -> str | None:
    """A create timeout above the resource's documented worst case (`customTimeouts.create`), e.g. "120m"."""
    record = CLOUD_RESOURCES.get(resource_type)
    worst = record.create_worst_seconds if record is not None else None
    if worst is None:
        return None
    return f"{math.ceil(worst * figures.CLOUD_TIMEOUT_RATIO / 60)}m"
