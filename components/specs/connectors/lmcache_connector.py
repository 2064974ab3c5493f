"""LMCache's in-process connector (LMCacheConnectorV1): a CPU tier in each pod and, with the fs variant,
a local-disk tier on the shared claim; its sizes come from LMCACHE_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.catalog import labels
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.formulas.payoff import LMCACHE_CHUNK_TOKENS
from components.manifest import Manifest
from components.specs.connectors.interface import Choice, SizingInputs
from components.specs.connectors.vllm_family import (
    VLLM_HBM_EVENTS,
    XPU_LOG_ARGS,
    XPU_TAIL_ARGS,
    VllmConnector,
    shared_tier_volumes,
    xpu_dtype_args,
)
from components.specs.kv_events import TierEvents
from components.specs.metric_family import Alert, MetricFamily, Panel, Thresholds
from components.specs.servers.base import empty_dir, env_var, tier_dir
from components.specs.servers.limits import GuideLimits, limit_args, limits
from components.specs.sizing import SHM_HEADROOM, Derivation, Sizes, TierSizing, sized, sizes_of
from components.units import ByteSize, GiB

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

LMCACHE_METRICS_DIR = "/tmp/lmcache_prometheus"
XPU_MAX_MODEL_LEN = 20_480  # the Intel XPU LMCache overlay's


def gib_text(size: ByteSize) -> str:
    """GiB as LMCache reads them: a float, "100.0"."""
    value = f"{size.bytes / GiB:g}"
    return value if "." in value or "e" in value else value + ".0"


@dataclass(frozen=True)
class LMCacheSizes(Sizes):
    cpu_per_rank: ByteSize  # `LMCACHE_MAX_LOCAL_CPU_SIZE`
    disk_per_rank: ByteSize | None  # `LMCACHE_MAX_LOCAL_DISK_SIZE`, with the filesystem tier


def size_tiers(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tensor_parallelism: int,
    cpu_tier_per_pod: ByteSize,
    disk_per_pod: ByteSize | None,
) -> TierSizing:
    """LMCache sizes its CPU (and local disk) cache per tensor-parallel rank, in GiB."""
    per_rank = ByteSize(cpu_tier_per_pod.bytes // tensor_parallelism)
    steps = [
        Derivation(
            "`LMCACHE_MAX_LOCAL_CPU_SIZE` (GiB per rank)",
            gib_text(per_rank),
            f"CPU tier {cpu_tier_per_pod.human()} per pod / {tensor_parallelism} ranks",
        )
    ]
    disk = None
    if disk_per_pod is not None:
        disk = ByteSize(disk_per_pod.bytes // tensor_parallelism)
        steps.append(
            Derivation(
                "`LMCACHE_MAX_LOCAL_DISK_SIZE` (GiB per rank)",
                gib_text(disk),
                f"disk tier {disk_per_pod.human()} per pod / {tensor_parallelism} ranks",
            )
        )
    shm = SHM_HEADROOM
    return sized(
        model, accelerator, tensor_parallelism, cpu_tier_per_pod,
        [("CPU tier", cpu_tier_per_pod), ("/dev/shm", shm)], shm, LMCacheSizes(per_rank, disk), steps,
    )  # fmt: skip


def lmcache_connector() -> dict[str, Any]:
    """LMCache's in-process connector; its sizes come from LMCACHE_* environment variables."""
    return {"kv_connector": LMCacheInProcess.kv_connector_class, "kv_role": "kv_both"}


def lmcache_alerts(t: Thresholds) -> list[Alert]:
    """LMCache's retrieve hit rate."""
    return [
        Alert(
            "LMCacheHitRateNearZero",
            f"max by (pod) (lmcache:retrieve_hit_rate) < {t.lmcache_hit_rate_floor}"
            " and on (pod) max by (pod) (lmcache:local_cache_usage) > 0",
            "30m",
            "LMCache on {{ $labels.pod }} holds KV but retrieves almost none of it",
            "Check that every process sets the same PYTHONHASHSEED, that prompts exceed one LMCache chunk, and"
            " (LMCache server) that the pod talks to the server on its own node.",
        )
    ]


def lmcache_panels(window: str) -> list[Panel]:
    return [
        (
            "LMCache retrieve hit rate and usage",
            "percentunit",
            [
                ("hit rate {{pod}}", "max by (pod) (lmcache:retrieve_hit_rate)"),
                ("usage {{pod}}", "max by (pod) (lmcache:local_cache_usage)"),
            ],
        )
    ]


# lmcache:*, from the pods (in-process) or the server.
LMCACHE_METRICS = MetricFamily(
    "lmcache",
    50,
    lmcache_alerts,
    panels=lmcache_panels,
    watch=("lmcache:retrieve_hit_rate, lmcache:local_cache_usage",),
)


# LMCache's CPU tier through vLLM's LMCacheConnectorV1: stores only, and nothing from its local-disk tier.
LMCACHE_CPU_EVENTS = TierEvents(
    "cpu",
    "cpu",
    stores=True,
    evictions=False,
    source="vLLM 0.26.0 lmcache_connector.py get_kv_connector_kv_cache_events builds BlockStored only, from"
    " LMCache 0.5.6 v1/cache_engine.py get_kv_events (store events, medium cpu)",
)
LMCACHE_DISK_EVENTS = TierEvents(
    "fs",
    None,
    stores=False,
    evictions=False,
    source="LMCache 0.5.6 v1/cache_engine.py: its events are the CPU tier's stores; its local-disk backend reports"
    " none",
)


class LMCacheInProcess(VllmConnector):
    key = "lmcache-connector"
    kv_connector_class = "LMCacheConnectorV1"
    metric_families = (LMCACHE_METRICS,)

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        disk = i.disk if i.variant == "fs" else None
        return size_tiers(i.model, i.accelerator, i.tensor_parallelism, i.tier, disk)

    def kv_events(self, filesystem_tier: bool) -> tuple[TierEvents, ...]:
        return (VLLM_HBM_EVENTS, LMCACHE_CPU_EVENTS, *((LMCACHE_DISK_EVENTS,) if filesystem_tier else ()))

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        """`LMCACHE_MAX_LOCAL_CPU_SIZE` in each of the pod's ranks."""
        return sizes_of(LMCacheSizes, sizing).cpu_per_rank * sizing.tensor_parallelism

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        return LMCACHE_CHUNK_TOKENS, "LMCache chunk"

    def image(self, choice: Choice) -> str:
        """The guide's image for the LMCache connector where it differs from the accelerator's vLLM image (XPU).

        On NVIDIA the guide runs its own vLLM image, built with the KV connectors (LMCache included), so the
        vLLM version under the connector stays the guide's; LMCache's image is for the LMCache server
        integration only, where client and server must share a tag.
        """
        return choice.accelerator.lmcache_image or choice.accelerator.vllm_image

    def pod_labels(self, accelerator: AcceleratorProfile) -> dict[str, str]:
        return {labels.SUBGUIDE_LABEL: accelerator.lmcache_subguide} if accelerator.lmcache_subguide else {}

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        return lmcache_connector()

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        """The Intel XPU LMCache overlay writes its context length (and no utilization: vLLM's default)."""
        if spec.accelerator.intel_xpu_flags:
            return GuideLimits(max_model_len=(XPU_MAX_MODEL_LEN, "the Intel XPU LMCache overlay's `--max-model-len`"))
        return GuideLimits()

    def vllm_args(self, spec: ServerSpec, model: list[str], tp: str, kv: list[str]) -> list[str]:
        own = limit_args(spec)
        if spec.accelerator.intel_xpu_flags:
            context = str(limits(spec).max_model_len)
            xpu = [*xpu_dtype_args(spec), tp, *XPU_TAIL_ARGS, "--max-model-len", context, *XPU_LOG_ARGS]
            return [*model, *xpu, *kv, *own]
        return [*model, f"--port={labels.MODEL_SERVER_PORT}", tp, *kv, "--max-num-seqs=1024", *own]

    def env(self, spec: ServerSpec) -> list[Manifest]:
        sizes = sizes_of(LMCacheSizes, spec.sizing)
        env = [
            env_var("LMCACHE_MAX_LOCAL_CPU_SIZE", gib_text(sizes.cpu_per_rank)),
            env_var("PYTHONHASHSEED", "123"),
            env_var("PROMETHEUS_MULTIPROC_DIR", LMCACHE_METRICS_DIR),
        ]
        if spec.filesystem_tier:
            assert sizes.disk_per_rank is not None, "the filesystem tier sizes the local disk"
            env += [
                env_var("LMCACHE_LOCAL_DISK", f"file://{tier_dir(spec)}/"),
                env_var("LMCACHE_EXTRA_CONFIG", '{"use_odirect":true}'),
                env_var("LMCACHE_MAX_LOCAL_DISK_SIZE", gib_text(sizes.disk_per_rank)),
            ]
        return env

    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
        volumes = [empty_dir("lmcache-prometheus-metrics")]
        mounts: list[Manifest] = [{"name": "lmcache-prometheus-metrics", "mountPath": LMCACHE_METRICS_DIR}]
        tier_volumes, tier_mounts = shared_tier_volumes(spec)
        return volumes + tier_volumes, mounts + tier_mounts


LMCACHE_CONNECTOR = LMCacheInProcess()
