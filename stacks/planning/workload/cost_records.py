"""What the cost records hold (`cost.py` computes them once, at the end of the plan): the prices used, the priced
lines, what no price covers, each tier's cost against its saving, the filesystem tier's throughput against its
backend's limits in each of its modes (tier_throughput.py computes them), and the stack's total with its stamp."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

from components.catalog import labels, prices
from components.catalog.prices import HOURS_PER_MONTH, RateKind
from components.catalog.storage_backends import StorageBackend, Throughput, ThroughputMode
from components.units import MiB

LineCategory = Literal["accelerators", "hosts", "cluster", "storage", "throughput"]
TierName = Literal["CPU", "filesystem"]
SavingKind = Literal["prefill-time", "replicas"]
SAVING_BASES: dict[SavingKind, str] = {
    "prefill-time": "accelerator time not spent on prefill",
    "replicas": "replicas not needed (the capacity plan; the one counted)",
}


@dataclass(frozen=True)
class PriceUsed:
    """One price the cost used: the catalog's row, or the user's override (`pricing.prices.<item>`)."""

    item: str
    region: str | None
    kind: RateKind  # the rate kind it was asked at (an override stands for it)
    unit: str
    usd: float
    source: str
    as_of: str
    overridden: bool

    @property
    def key(self) -> str:
        return f"pricing.prices.{self.item}"


@dataclass(frozen=True)
class Unpriced:
    """Something the stack pays for that no price covers: named with what would price it."""

    what: str
    reason: str
    remedy: str


@dataclass(frozen=True)
class Line:
    """One priced item: its quantity at its price, per hour."""

    category: LineCategory
    what: str
    usd_per_hour: float
    formula: str
    price: PriceUsed


@dataclass(frozen=True)
class Idle:
    """Nodes of the serving pool that no model-server pod uses: in the total, named with what they cost."""

    pool: str
    idle: int
    nodes: int
    used: str  # how the used nodes are counted, for the summary
    usd_per_hour: float | None  # None: the pool is not priced


@dataclass(frozen=True)
class Saving:
    """One measure of what a tier saves, in $/hour: accelerator time not spent on prefill, or the capacity plan's
    replicas not needed."""

    kind: SavingKind
    usd_per_hour: float
    formula: str

    @property
    def basis(self) -> str:
        """The measure in a planner's words."""
        return SAVING_BASES[self.kind]


@dataclass(frozen=True)
class TierCost:
    """A tier's cost against what it saves."""

    tier: TierName
    cost_usd_per_hour: float | None  # None: part of it is unpriced
    cost_formula: str
    savings: tuple[Saving, ...]

    @property
    def saving_usd_per_hour(self) -> float:
        """The measures are of one benefit, so one is counted: the replicas the capacity plan gives back where it
        has them (a fleet returns whole replicas, not prefill seconds), else the accelerator time."""
        replicas = [s.usd_per_hour for s in self.savings if s.kind == "replicas"]
        return replicas[0] if replicas else sum(s.usd_per_hour for s in self.savings)

    @property
    def net_usd_per_hour(self) -> float | None:
        """What it saves less what it costs; negative: it saves time but loses money."""
        return None if self.cost_usd_per_hour is None else self.saving_usd_per_hour - self.cost_usd_per_hour

    @property
    def verdict(self) -> str:
        net = self.net_usd_per_hour
        if net is None:
            return "not known (part of its cost is unpriced)"
        if net >= 0:
            return f"pays: saves ${net:,.2f}/hour more than it costs"
        return f"loses money: costs ${-net:,.2f}/hour more than the accelerator time it saves"


@dataclass(frozen=True)
class Demand:
    """Bytes/s the tier is read and written at over all its pods, and how the pods share nodes' clients."""

    read: float | None  # None: not known (no workload: only the upper-bound store rate)
    write: float
    pods: int  # model-server pods mounting the tier
    clients: int  # nodes they run on (one client each)
    measured: bool  # the workload's replay (else the evictor's upper bound)
    source: str

    @property
    def pods_per_client(self) -> int:
        """The pods on the busiest node, spread evenly: at least this many share one client."""
        return math.ceil(self.pods / self.clients)

    @property
    def per_client(self) -> float:
        """Bytes/s read and written through the busiest node's client."""
        return ((self.read or 0.0) + self.write) / self.pods * self.pods_per_client


@dataclass(frozen=True)
class Against:
    """One demand against one documented limit."""

    what: str  # e.g. "writes per file system"
    demand: float
    limit: float
    source: str

    @property
    def share(self) -> float:
        return self.demand / self.limit

    @property
    def over(self) -> bool:
        return self.demand > self.limit


@dataclass(frozen=True)
class ModeLimits:
    """A throughput mode's limits as the stack would run it, and the demand against them."""

    mode: ThroughputMode
    file_system: Throughput  # per file system
    provisioned: float | None  # bytes/s a provisioned mode runs at (None: not a provisioned mode, or not known)
    against: tuple[Against, ...]  # () without a demand

    def throttled(self) -> list[Against]:
        return [a for a in self.against if a.over]

    @property
    def provisioned_mibps(self) -> int | None:
        return None if self.provisioned is None else round(self.provisioned / MiB)

    def moved(self, demand: Demand) -> tuple[float, float]:
        """(read, write) bytes/s that can move: the demand, capped by the per-file-system limits and by what the
        clients carry (the per-client limit times the nodes; both directions scaled alike)."""
        read = min(demand.read or 0.0, self.file_system.read if self.file_system.read is not None else math.inf)
        write = min(demand.write, self.file_system.write if self.file_system.write is not None else math.inf)
        client = self.mode.per_client
        if client is not None and read + write > client.value * demand.clients:
            scale = client.value * demand.clients / (read + write)
            read, write = read * scale, write * scale
        return read, write


@dataclass(frozen=True)
class TierThroughput:
    backend: StorageBackend
    region: str | None
    demand: Demand | None  # None: no filesystem tier rates known
    running: ModeLimits  # the mode the stack runs
    others: tuple[ModeLimits, ...]  # its backend's other modes, for comparison

    @property
    def provisioned_mibps(self) -> int | None:
        """MiB/s the file system is provisioned with (a provisioned mode; the component renders it)."""
        return self.running.provisioned_mibps

    def annotations(self) -> dict[str, str]:
        """The stamp the policy pack's `filesystem-tier-within-limits` reads on the stack's Namespace: each measured
        demand against its limit (none without a workload's replay)."""
        if self.demand is None or not self.demand.measured:
            return {}
        rows = [
            {"what": a.what, "demand": round(a.demand), "limit": round(a.limit), "source": a.source}
            for a in self.running.against
        ]
        stamp = {"backend": self.backend.key, "mode": self.running.mode.key, "limits": rows}
        return {labels.FILESYSTEM_THROUGHPUT_ANNOTATION: json.dumps(stamp, sort_keys=True)}


@dataclass(frozen=True)
class ModeCost:
    """A throughput mode of the tier's backend, priced at the tier's demand: what the Cost section prints beside
    the mode the stack runs."""

    limits: ModeLimits
    usd_per_hour: float | None  # its throughput lines (None: a price is missing, or no demand to price it at)
    running: bool


@dataclass(frozen=True)
class StackCost:
    region: str | None  # where the catalog priced it (None: no region; only overrides price it)
    lines: tuple[Line, ...]
    unpriced: tuple[Unpriced, ...]
    tiers: tuple[TierCost, ...]  # () without a workload
    prompt_tokens_per_s: float | None  # the workload's prompt tokens per second (None: no workload)
    monthly_budget: float | None  # `pricing.monthly_budget`
    idle: tuple[Idle, ...] = ()
    usage: tuple[str, ...] = ()  # billed by use, which the plan does not model: named, never in the total
    refused: str | None = None  # why the plan refuses the replica count priced (None: it runs)
    throughput: TierThroughput | None = None  # the filesystem tier against its limits (None: no shared tier)
    modes: tuple[ModeCost, ...] = ()  # the tier's throughput in each of its backend's modes, the running one first

    @property
    def usd_per_hour(self) -> float:
        return sum(line.usd_per_hour for line in self.lines)

    @property
    def usd_per_month(self) -> float:
        return self.usd_per_hour * HOURS_PER_MONTH

    @property
    def partial(self) -> bool:
        return bool(self.unpriced)

    @property
    def kinds(self) -> list[RateKind]:
        """The rate kinds of the prices used, in the catalog's order."""
        used = {line.price.kind for line in self.lines}
        return [kind for kind in prices.RATE_KINDS if kind in used]

    @property
    def usd_per_million_prompt_tokens(self) -> float | None:
        """The stack's $/hour over the prompt tokens it serves in an hour at the workload's rate; None where part
        of the cost is unpriced or the plan refuses the replicas priced (they would not serve that rate)."""
        if not self.prompt_tokens_per_s or self.partial or self.refused is not None:
            return None
        return self.usd_per_hour / (self.prompt_tokens_per_s * 3600) * 1e6

    @property
    def prices(self) -> list[PriceUsed]:
        """Each price used once, in the order the lines used them."""
        return list({(line.price.item, line.price.region): line.price for line in self.lines}.values())

    def biggest(self, count: int = 3) -> list[Line]:
        return sorted(self.lines, key=lambda line: -line.usd_per_hour)[:count]

    def annotations(self) -> dict[str, str]:
        """The stamp on the stack's Namespace that the policy pack and the change plan read: USD per month, the
        budget, the biggest items and what is left unpriced. Nothing priced: no cost stamp, and none at all
        without a budget (with one, the budget and what is unpriced: the rule says it cannot judge it)."""
        if not self.lines and self.monthly_budget is None:
            return {}
        out = {}
        if self.lines:
            items = [f"{x.what}: ${x.usd_per_hour * HOURS_PER_MONTH:,.0f}/month" for x in self.biggest()]
            out[labels.MONTHLY_COST_ANNOTATION] = f"{self.usd_per_month:.2f}"
            out[labels.COST_ITEMS_ANNOTATION] = "; ".join(items)
        if self.unpriced:
            out[labels.COST_UNPRICED_ANNOTATION] = "; ".join(f"{u.what}: {u.remedy}" for u in self.unpriced)
        if self.monthly_budget is not None:
            out[labels.MONTHLY_BUDGET_ANNOTATION] = f"{self.monthly_budget:.2f}"
        return out


@dataclass(frozen=True)
class ServingUse:
    """The serving pool's nodes the model-server pods take: `pods` pods, `per_node` to a node."""

    pods: int
    per_node: int

    @property
    def nodes(self) -> int:
        return -(-self.pods // self.per_node)


@dataclass(frozen=True)
class SizePrice:
    """What a CPU-tier size costs as `pricing.objective: cost` weighs it, less the replica count: one replica's
    accelerator price and the filesystem tier's own lines at the rates the replay measured at that size (the CPU
    tier is host memory the machine type carries, no price of its own)."""

    replica_usd: float | None  # None: the serving pool is not priced
    tier_usd: float | None  # None: part of the filesystem tier's cost is unpriced
    unpriced: tuple[Unpriced, ...]

    def usd_per_hour(self, replicas: int) -> float | None:
        if self.replica_usd is None or self.tier_usd is None:
            return None
        return replicas * self.replica_usd + self.tier_usd
