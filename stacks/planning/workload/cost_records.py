"""What the cost records hold (`cost.py` computes them once, at the end of the plan): the prices used, the priced
lines, what no price covers, each tier's cost against its saving, and the stack's total with its stamp."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.catalog import labels, prices
from components.catalog.prices import HOURS_PER_MONTH, RateKind

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
        """The stamp on the stack's Namespace that the policy pack and the change plan read (none where nothing
        is priced): USD per month, the budget, the biggest items and what is left unpriced."""
        if not self.lines:
            return {}
        items = [f"{x.what}: ${x.usd_per_hour * HOURS_PER_MONTH:,.0f}/month" for x in self.biggest()]
        out = {
            labels.MONTHLY_COST_ANNOTATION: f"{self.usd_per_month:.2f}",
            labels.COST_ITEMS_ANNOTATION: "; ".join(items),
        }
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
