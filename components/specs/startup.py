"""The cold-start model: how long one pod takes from scheduled to serving, from its parts.

Pure arithmetic over figures the plan chooses (stacks/planning/cold_starts.py) from the catalog
(components/catalog/startup_figures.py). Each part is a separate field so that a faster source of one part
(weights from a shared model cache instead of Hugging Face, a warm compile cache) replaces just
that part. The await budget (what Pulumi waits before it fails `pulumi up`) is the modeled cold
start plus a margin; the startup probe must allow at least the part that runs inside the container.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.catalog.startup_figures import WeightSource
from components.manifest import Manifest


def seconds_for(size_bytes: int, bytes_per_second: int) -> int:
    return math.ceil(size_bytes / bytes_per_second) if size_bytes else 0


@dataclass(frozen=True)
class StartupInputs:
    image: str
    image_bytes: int
    pull_bytes_per_second: int
    weight_bytes: int  # what one pod reads (0: no weights, e.g. a daemon)
    weight_source: WeightSource
    load_bytes_per_second: int  # local disk / page cache into device memory
    compile_seconds: int  # compilation, graph capture, warm-up
    margin_ratio: float
    margin_floor_seconds: int
    other_seconds: int = 0  # anything else a workload does before it is ready (daemons: pinning memory)


@dataclass(frozen=True)
class ColdStart:
    """Seconds per part of one pod's cold start (image pull on a node that has never seen the image)."""

    image_pull: int
    weight_fetch: int
    load: int
    compile: int
    other: int
    margin: int
    weight_source: str

    @property
    def in_container(self) -> int:
        """What runs after the container starts: the part the startup probe must allow."""
        return self.weight_fetch + self.load + self.compile + self.other

    @property
    def modeled(self) -> int:
        return self.image_pull + self.in_container

    @property
    def budget(self) -> int:
        """One pod's await budget: the modeled cold start and the margin, rounded up to a minute."""
        return math.ceil((self.modeled + self.margin) / 60) * 60

    def parts(self) -> list[tuple[str, int]]:
        named = [
            ("image pull", self.image_pull),
            (f"weights ({self.weight_source})", self.weight_fetch),
            ("load", self.load),
            ("compile", self.compile),
            ("start", self.other),
            ("margin", self.margin),
        ]
        return [(name, seconds) for name, seconds in named if seconds]


def cold_start(inputs: StartupInputs) -> ColdStart:
    pull = seconds_for(inputs.image_bytes, inputs.pull_bytes_per_second)
    fetch = seconds_for(inputs.weight_bytes, inputs.weight_source.bytes_per_second)
    load = seconds_for(inputs.weight_bytes, inputs.load_bytes_per_second)
    modeled = pull + fetch + load + inputs.compile_seconds + inputs.other_seconds
    margin = max(math.ceil(modeled * inputs.margin_ratio), inputs.margin_floor_seconds)
    return ColdStart(
        image_pull=pull,
        weight_fetch=fetch,
        load=load,
        compile=inputs.compile_seconds,
        other=inputs.other_seconds,
        margin=margin,
        weight_source=inputs.weight_source.name,
    )


@dataclass(frozen=True)
class AwaitBudget:
    """How long Pulumi waits for one workload: `waves` cold starts one after the other (a rolling
    update restarts pods one at a time, each a cold start on the worst case of a new node)."""

    workload: str
    cold_start: ColdStart
    waves: int

    @property
    def seconds(self) -> int:
        return self.cold_start.budget * self.waves

    def describe(self) -> str:
        parts = " + ".join(f"{name} {_minutes(s)}" for name, s in self.cold_start.parts())
        waves = f" x {self.waves} in turn" if self.waves > 1 else ""
        return f"{_minutes(self.seconds)} = ({parts}, rounded up){waves}"


def _minutes(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds}s"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds % 60 else f"{seconds // 60}m"


def probe_failure_threshold(in_container_seconds: int, initial_delay: int, period: int, floor: int) -> int:
    """The startup probe's failureThreshold that allows at least `in_container_seconds` (never below `floor`)."""
    return max(floor, math.ceil(max(0, in_container_seconds - initial_delay) / period))


def timeout_annotation(seconds: int) -> dict[str, str]:
    """pulumi-kubernetes reads its await timeout (create and update) from this annotation."""
    return {"pulumi.com/timeoutSeconds": str(seconds)}


def with_await_budget(manifest: Manifest, seconds: int, wait_for: str | None = None) -> Manifest:
    """The workload with its await budget; `wait_for` (a custom resource's readiness condition, e.g.
    `condition=Available`) makes pulumi-kubernetes' generic await wait on it."""
    annotations = dict(manifest["metadata"].get("annotations", {}))
    annotations.update(timeout_annotation(seconds))
    if wait_for:
        annotations["pulumi.com/waitFor"] = wait_for
    return {**manifest, "metadata": {**manifest["metadata"], "annotations": annotations}}
