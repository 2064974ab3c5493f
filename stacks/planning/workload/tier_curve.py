"""The tier replay's records: what it reads of a plan (`StackShape`), the curve it measures (`TierCurve`) and the
CPU-tier size `cache.tier.cpu: auto` takes from it (`TierChoice`). `workload_sizing.py` computes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from components.catalog.models import ModelSpec
from components.catalog.time_model_band import TtftBand
from components.formulas.hbm import HbmBudget
from components.formulas.payoff import Replica
from components.formulas.tier_replay import Curve, Relation, Scope
from components.specs.payoff_table import Payoff
from components.units import ByteSize

UNBOUNDED = ByteSize(2**60)  # a size no workload fills: the ceiling of what any cache could serve
UNBOUNDED_BLOCKS = 2**40  # its blocks: more than any trace references, less than a first touch's distance

IN_FLIGHT_ROUTING = (
    "once as the router's tiered scorers would at the configured sizes, each replica's queue its requests in"
    " flight (estimated)"
)


@dataclass(frozen=True)
class FilesystemRates:
    """Bytes/s the filesystem tier is read and written at over the workload's span."""

    read: float
    write: float


@dataclass(frozen=True)
class StackShape:
    """What the replay needs of a plan."""

    model: ModelSpec
    hbm: HbmBudget
    replicas: int
    relation: Relation
    cpu_scope: Scope
    configured_cpu: ByteSize  # `cache.tier.cpu` as configured (or defaulted)
    capacity_of: Callable[[ByteSize], ByteSize]  # a `cache.tier.cpu` value -> what the tier holds
    cpu_step: ByteSize  # the connector's tier step
    node_largest: ByteSize | None  # the largest tier the node holds (None: not known)
    fs_configured: ByteSize | None  # what the filesystem tier holds: its evictor's budget (None: no filesystem tier)
    payoff: Payoff
    replica: Replica
    # The time model's TTFT error band on the published runs comparable to this stack (None: none is), and the
    # stack's engine, accelerator and model kind in words (components/catalog/time_model_band.py).
    ttft_band: TtftBand | None = None
    band_scope: str = ""
    # The medium each tier's KV-cache events carry, lower-cased as the precise index keys its weights (the
    # connector's records); None: the tier publishes none. What a precise router's weights apply to.
    hbm_medium: str | None = None
    cpu_medium: str | None = None


@dataclass(frozen=True)
class TierChoice:
    """A CPU-tier size taken from the curve, and why."""

    size: ByteSize
    reason: str


@dataclass(frozen=True)
class TierCurve:
    source: str
    shape: StackShape
    cpu_sizes: tuple[ByteSize, ...]  # `cache.tier.cpu` values; 0: no CPU tier, UNBOUNDED: the ceiling
    fs_sizes: tuple[ByteSize, ...]  # () when there is no filesystem tier
    curve: Curve
    configured: tuple[int, int]  # the indexes of the configured (CPU, filesystem) sizes
    block_bytes: int  # KV bytes of one workload block
    choice: TierChoice | None  # the smallest size within AUTO_MARGIN of the best the node allows
    routing: str = IN_FLIGHT_ROUTING  # how the requests were routed, for the summary
    # The same grid routed as at another CPU-tier size (`band_size`, the largest): a row's two figures bound what
    # routing at its own size would give (None: one routing, every row at the configured size's)
    band: Curve | None = None
    band_size: ByteSize | None = None

    @property
    def duration_s(self) -> float:
        return max(self.curve.duration_ms, 1) / 1000

    def store_rate(self, blocks: int) -> float:
        """Bytes/s a tier is written at, over the workload's span."""
        return blocks * self.block_bytes / self.duration_s

    def fs_rates(self, cpu_index: int) -> FilesystemRates | None:
        """The filesystem tier's traffic on the workload, with the CPU tier at `cpu_index` and the configured
        filesystem size; None without a filesystem tier."""
        if not self.fs_sizes:
            return None
        fs = self.configured[1]
        per_token = self.shape.model.kv_bytes_per_token.bytes
        read = float(self.curve.fs_tokens[cpu_index, fs]) * per_token / self.duration_s
        write = self.store_rate(int(self.curve.fs_stored_blocks[cpu_index, fs]))
        return FilesystemRates(read, write)
