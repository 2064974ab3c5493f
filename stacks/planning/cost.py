"""What the stack costs, computed once in the plan (`StackPlan.cost`) from the price catalog
(components/catalog/prices.py) and the user's `pricing.prices`: $/hour of what it creates (accelerator pools,
the cluster's system pool and fee, the filesystem tier's storage and, on EFS, its elastic throughput at the rates
the workload's replay measured), $ per million prompt tokens at the workload's rate, and per tier what it costs
against what it saves. The summary, the change plan and the policy pack read this record; none re-derives it.

A price the catalog lacks is not guessed: the item is listed unpriced with the `pricing.prices` key to set; a stack
with a budget in a region the catalog does not cover stops the plan in one line naming that key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.catalog import labels, prices
from components.catalog.prices import HOURS_PER_MONTH
from components.specs.clusters import PoolSpec
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.config.providers import provider_of
from stacks.planning.capacity_plan import CapacityPlan
from stacks.planning.tier_capacity import SharedTier
from stacks.planning.tier_savings import TierCost, tier_costs
from stacks.planning.workload_sizing import TierCurve

GB = 1e9  # the price pages' GB (EFS per GB-month, per GB transferred)
GIB = 2**30  # Managed Lustre's capacity is priced per GiB-month


@dataclass(frozen=True)
class PriceUsed:
    """One price the cost used: the catalog's row, or the user's override (`pricing.prices.<item>`)."""

    item: str
    region: str | None
    unit: str
    usd: float
    source: str
    as_of: str
    overridden: bool

    @property
    def key(self) -> str:
        return f"pricing.prices.{self.item}"


@dataclass(frozen=True)
class Line:
    category: str  # accelerators | hosts | cluster | storage | throughput
    what: str
    usd_per_hour: float
    formula: str
    price: PriceUsed


@dataclass(frozen=True)
class Unpriced:
    """Something the stack pays for that no price covers: named with what would price it."""

    what: str
    reason: str
    remedy: str


@dataclass(frozen=True)
class StackCost:
    region: str | None  # where the catalog priced it (None: no region; only overrides price it)
    lines: tuple[Line, ...]
    unpriced: tuple[Unpriced, ...]
    tiers: tuple[TierCost, ...]  # () without a workload
    prompt_tokens_per_s: float | None  # the workload's prompt tokens per second (None: no workload)
    monthly_budget: float | None  # `pricing.monthly_budget`

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
    def usd_per_million_prompt_tokens(self) -> float | None:
        """The stack's $/hour over the prompt tokens it serves in an hour at the workload's rate."""
        if not self.prompt_tokens_per_s:
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


class _Prices:
    """The stack's prices: the user's override, else the catalog's row for the region."""

    def __init__(self, config: StackConfig, region: str | None) -> None:
        self.overrides = config.pricing.prices
        self.region = region
        self.budgeted = config.pricing.monthly_budget is not None

    def get(self, item: str) -> PriceUsed | None:
        """The item's price; None where there is none. A stack with a budget in a region the catalog does not
        cover stops here in one line (its budget cannot be judged); without one, the item is listed unpriced."""
        unit = prices.unit_of(item)
        if item in self.overrides:
            return PriceUsed(item, self.region, unit, self.overrides[item], "pricing.prices", "stack config", True)
        row = prices.BY_KEY.get((item, self.region)) if self.region else None
        if row is None:
            if self.budgeted and self.region is not None and self.region not in prices.REGIONS:
                raise ConfigError(
                    f"pricing.prices.{item}",
                    self.region,
                    f"the price catalog has no prices for this region ({self.uncovered()}), so"
                    f" pricing.monthly_budget cannot be judged; set pricing.prices.{item} to what you pay, in USD per"
                    f" {unit}",
                )
            return None
        return PriceUsed(item, row.region, row.unit, row.usd, row.source, row.as_of, False)

    def uncovered(self) -> str:
        return f"it covers {', '.join(sorted(prices.REGIONS))}"

    def missing(self, what: str, item: str) -> Unpriced:
        if self.region is None:
            where = "without a region (pricing.region)"
        elif self.region not in prices.REGIONS:
            where = f"in {self.region}: the catalog has no prices for this region ({self.uncovered()})"
        else:
            where = f"in {self.region}"
        return Unpriced(
            what,
            f"no catalog price for {item} {where}",
            f"set pricing.prices.{item} (USD per {prices.unit_of(item)})",
        )


class _Ledger:
    """The lines and unpriced items as they are added."""

    def __init__(self, book: _Prices) -> None:
        self.book = book
        self.lines: list[Line] = []
        self.unpriced: list[Unpriced] = []

    def add(self, category: str, what: str, item: str, quantity: float, formula: str) -> None:
        """A line of `quantity` units of `item`; `formula` shows the price as `{usd}`."""
        price = self.book.get(item)
        if price is None:
            self.unpriced.append(self.book.missing(what, item))
            return
        self.lines.append(Line(category, what, quantity * price.usd, formula.format(usd=price.usd), price))


FS_CATEGORIES = ("storage", "throughput")  # the filesystem tier's own lines


def stack_cost(
    config: StackConfig,
    pools: Sequence[PoolSpec],
    shared: SharedTier | None,
    curve: TierCurve | None,
    cpu_index: int | None,
    replica_devices: int,
    capacity: CapacityPlan | None = None,
) -> StackCost:
    """The stack's cost. `pools`: the node pools it creates; `shared`: the filesystem tier's claim; `curve` and
    `cpu_index`: the workload's replay and the CPU tier it runs (its configured or auto-chosen size);
    `replica_devices`: accelerator devices of one model-server replica (what a saved prefill second is worth);
    `capacity`: the replicas each tier configuration needs (a tier that lets fewer run saves those)."""
    provider = provider_of(config)
    bill = provider.bill(config)
    book = _book(config)
    ledger = _Ledger(book)
    for pool in pools:
        spot = " (a spot pool, priced on demand: set its rate in pricing.prices)" if pool.spot else ""
        ledger.add(
            "accelerators",
            f"node pool {pool.name}: {pool.node_count} x {pool.machine.key}",
            pool.machine.key,
            pool.node_count,
            f"{pool.node_count} x ${{usd:,.4f}}/hour per node{spot}",
        )
    if provider.describes_pools:
        _described_pools(config, ledger)
    if bill is not None:
        ledger.add("cluster", "cluster management fee", bill.fee, 1, "1 cluster x ${usd:,.2f}/hour")
        ledger.add(
            "hosts",
            f"system pool: {bill.system_nodes} x {bill.system_machine}",
            bill.system_machine,
            bill.system_nodes,
            f"{bill.system_count} x ${{usd:,.4f}}/hour per node",
        )
    fs_unpriced = _filesystem(config, shared, curve, cpu_index, ledger)
    fs_usd = None if fs_unpriced else sum(x.usd_per_hour for x in ledger.lines if x.category in FS_CATEGORIES)
    device_usd = _device_usd_per_hour(config, pools, book)
    replica_usd = None if device_usd is None else device_usd * replica_devices
    tiers = tier_costs(curve, cpu_index, replica_usd, fs_usd if shared is not None else None, capacity)
    tokens = curve.curve.prompt_tokens / curve.duration_s if curve is not None else None
    return StackCost(
        book.region, tuple(ledger.lines), tuple(ledger.unpriced), tiers, tokens, config.pricing.monthly_budget
    )


def _book(config: StackConfig) -> _Prices:
    """The stack's prices at its region: a created cluster's own, else `pricing.region`."""
    bill = provider_of(config).bill(config)
    return _Prices(config, bill.region if bill is not None else config.pricing.region)


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


def size_price(
    config: StackConfig,
    pools: Sequence[PoolSpec],
    shared: SharedTier | None,
    curve: TierCurve,
    cpu_index: int,
    replica_devices: int,
) -> SizePrice:
    """The prices `size_price.usd_per_hour` adds for the CPU-tier size `curve.cpu_sizes[cpu_index]`."""
    book = _book(config)
    ledger = _Ledger(book)
    unpriced = _filesystem(config, shared, curve, cpu_index, ledger)
    device = _device_usd_per_hour(config, pools, book)
    tier = None if unpriced else sum(x.usd_per_hour for x in ledger.lines)
    return SizePrice(None if device is None else device * replica_devices, tier, tuple(ledger.unpriced))


def _described_pools(config: StackConfig, ledger: _Ledger) -> None:
    """An existing cluster's pools, by the machine type `pricing.machine_types` names for each."""
    types = config.pricing.machine_types
    for key in types:
        if key not in config.node_pools:
            allowed = ", ".join(sorted(config.node_pools)) or "none described"
            raise ConfigError(f"pricing.machine_types.{key}", types[key], f"names no node pool; allowed: {allowed}")
    for key, described in sorted(config.node_pools.items()):
        machine = types.get(key)
        if machine is None:
            why = "an existing cluster's pool: its machine type is not known"
            ledger.unpriced.append(Unpriced(f"node pool {key}", why, f"set pricing.machine_types.{key}"))
            continue
        count = described.node_count
        what = f"node pool {key}: {count} x {machine}"
        ledger.add("accelerators", what, machine, count, f"{count} x ${{usd:,.4f}}/hour per node")


def _device_usd_per_hour(config: StackConfig, pools: Sequence[PoolSpec], book: _Prices) -> float | None:
    """One accelerator device of the serving pool per hour: the machine's price over its devices."""
    key = config.cache.node_pool
    for pool in pools:
        if pool.key == key:
            price = book.get(pool.machine.key)
            return None if price is None else price.usd / pool.machine.devices_per_node
    described = config.node_pools.get(key) if key else None
    machine = config.pricing.machine_types.get(key) if key else None
    if described is not None and machine is not None and described.accelerators_per_node:
        price = book.get(machine)
        return None if price is None else price.usd / described.accelerators_per_node
    return None


def _filesystem(
    config: StackConfig, shared: SharedTier | None, curve: TierCurve | None, cpu_index: int | None, ledger: _Ledger
) -> bool:
    """The shared file system's storage (where this stack creates it) and, on EFS, the throughput the tier's
    traffic is billed (wherever it was created), as lines; True where part of the tier's cost is unpriced."""
    backend = config.storage.backend
    provider = provider_of(config)
    creates = provider.creates and backend in provider.storage_backends  # a serving stack's is its cluster stack's
    if backend == "existing" or (shared is None and not creates):  # a StorageClass the stack does not pay for
        return False
    before = len(ledger.unpriced)
    if backend == "aws-efs":
        if shared is not None and creates:
            capacity = shared.capacity
            held = capacity.capacity_bytes * (capacity.high if shared.managed else 1)
            bound = "up to the evictor's high watermark" if shared.managed else "its budget, nothing evicts"
            ledger.add(
                "storage",
                f"EFS storage: {held / GB:,.0f} GB held ({bound})",
                "efs-storage",
                held / GB / HOURS_PER_MONTH,
                f"{held / GB:,.0f} GB x ${{usd}}/GB-month / {HOURS_PER_MONTH} h",
            )
        elif creates:
            why = "billed on the bytes held, which the serving stacks' evictors bound"
            ledger.unpriced.append(Unpriced("EFS storage", why, "each serving stack's cost prices what it holds"))
        if shared is not None:
            _efs_throughput(curve, cpu_index, ledger)
    elif backend == "gcp-lustre" and creates:
        tier = config.storage.lustre.per_unit_storage_throughput
        gib = config.storage.size.bytes / GIB
        ledger.add(
            "storage",
            f"Managed Lustre: {gib:,.0f} GiB at {tier} MB/s per TiB",
            prices.lustre_item(tier),
            gib / HOURS_PER_MONTH,
            f"{gib:,.0f} GiB x ${{usd}}/GiB-month / {HOURS_PER_MONTH} h",
        )
    return len(ledger.unpriced) > before


def _efs_throughput(curve: TierCurve | None, cpu_index: int | None, ledger: _Ledger) -> None:
    """EFS Elastic Throughput, per GB read and written at the rates the workload's replay measured."""
    rates = _fs_rates(curve, cpu_index)
    if rates is None:
        ledger.unpriced.append(
            Unpriced(
                "EFS elastic throughput",
                "billed per GB read and written: no workload to measure the tier's rates",
                "set workload.trace or workload.shared_prefix",
            )
        )
        return
    for item, rate, verb in (("efs-read", rates[0], "reads"), ("efs-write", rates[1], "writes")):
        ledger.add(
            "throughput",
            f"EFS {verb}: {rate / 1e6:,.2f} MB/s (the workload's replay)",
            item,
            rate * 3600 / GB,
            f"{rate / 1e6:,.2f} MB/s x 3600 s / 1e9 x ${{usd}}/GB",
        )


def _fs_rates(curve: TierCurve | None, cpu_index: int | None) -> tuple[float, float] | None:
    """Bytes/s the filesystem tier is read and written at on the workload, at the sizes the stack runs."""
    if curve is None or cpu_index is None or not curve.fs_sizes:
        return None
    fs = curve.configured[1]
    per_token = curve.shape.model.kv_bytes_per_token.bytes
    read = float(curve.curve.fs_tokens[cpu_index, fs]) * per_token / curve.duration_s
    write = curve.store_rate(int(curve.curve.fs_stored_blocks[cpu_index, fs]))
    return read, write
