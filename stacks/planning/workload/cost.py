"""What the stack costs, computed once in the plan (`StackPlan.cost`) from the price catalog
(components/catalog/prices.py) at the rate kind `pricing.rate` chooses and the user's `pricing.prices`: $/hour of
what it creates (accelerator pools, the cluster's system pool, fee and what else it pays by the hour, the
filesystem tier's storage and its throughput in the mode it runs at what the workload's replay moves within its
backend's documented limits, the other modes beside it), the
serving pool's nodes no replica uses, $ per million prompt tokens at the workload's rate (only for a replica count
the plan runs), and per tier what it costs against what it saves. The summary, the change plan and the policy pack
read this record; none re-derives it.

A price the catalog lacks is not guessed: the item is listed unpriced with the `pricing.prices` key to set; a stack
with a budget in a region the catalog does not cover stops the plan in one line naming every key it lacks.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.catalog import prices
from components.catalog.prices import HOURS_PER_MONTH, RateKind
from components.specs.clusters import PoolSpec
from components.units import GB, GiB
from stacks.config import StackConfig
from stacks.config.backend_choice import backend_of
from stacks.config.providers import provider_of
from stacks.planning.workload.capacity_plan import needs_line, shortfall
from stacks.planning.workload.capacity_records import CapacityPlan
from stacks.planning.workload.cost_records import (
    Demand,
    Idle,
    Line,
    LineCategory,
    ModeCost,
    ModeLimits,
    ServingUse,
    SizePrice,
    StackCost,
    TierThroughput,
    Unpriced,
)
from stacks.planning.workload.price_book import PriceBook, book_of
from stacks.planning.workload.shared_tier import SharedTier
from stacks.planning.workload.tier_curve import TierCurve
from stacks.planning.workload.tier_savings import tier_costs
from stacks.planning.workload.tier_throughput import charges, demand_of, tier_throughput


class _Ledger:
    """The lines and unpriced items as they are added."""

    def __init__(self, book: PriceBook) -> None:
        self.book = book
        self.lines: list[Line] = []
        self.unpriced: list[Unpriced] = []

    def add(
        self, category: LineCategory, what: str, item: str, quantity: float, formula: str, kind: RateKind = "on-demand"
    ) -> None:
        """A line of `quantity` units of `item` at `kind`; `formula` shows the price as `{usd}`."""
        price = self.book.get(item, kind)
        if price is None:
            self.unpriced.append(self.book.missing(what, item, kind))
            return
        self.lines.append(Line(category, what, quantity * price.usd, formula.format(usd=price.usd), price))


FS_CATEGORIES: tuple[LineCategory, ...] = ("storage", "throughput")  # the filesystem tier's own lines


def stack_cost(
    config: StackConfig,
    pools: Sequence[PoolSpec],
    shared: SharedTier | None,
    curve: TierCurve | None,
    cpu_index: int | None,
    replica_devices: int,
    capacity: CapacityPlan | None = None,
    serving: ServingUse | None = None,
) -> StackCost:
    """The stack's cost. `pools`: the node pools it creates; `shared`: the filesystem tier's claim; `curve` and
    `cpu_index`: the workload's replay and the CPU tier it runs (its configured or auto-chosen size);
    `replica_devices`: accelerator devices of one model-server replica (what a saved prefill second is worth);
    `capacity`: the replicas each tier configuration needs (a tier that lets fewer run saves those), and whether
    the plan runs its replica count; `serving`: the serving pool's nodes the model-server pods use."""
    provider = provider_of(config)
    bill = provider.bill(config)
    book = book_of(config)
    ledger = _Ledger(book)
    for pool in pools:
        kind = book.kind(pool.spot)
        ledger.add(
            "accelerators",
            f"node pool {pool.name}: {pool.node_count} x {pool.machine.key}",
            pool.machine.key,
            pool.node_count,
            f"{pool.node_count} x ${{usd:,.4f}}/hour per node ({kind}{', a spot pool' if pool.spot else ''})",
            kind,
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
            book.kind(),
        )
        for extra in bill.extras:
            if book.get(extra.item) is None:  # no price: say what it is billed by, and what prices it
                missing = book.missing(extra.what, extra.item, "on-demand")
                unit = prices.unit_of(extra.item)
                remedy = f"set pricing.prices.{extra.item} (USD per {unit}{' of one' if unit == 'hour' else ''})"
                ledger.unpriced.append(Unpriced(extra.what, f"billed {extra.why}; {missing.reason}", remedy))
                continue
            ledger.add("cluster", extra.what, extra.item, extra.quantity, extra.formula)
    throughput = throughput_of(config, shared, _fs_rates(curve, cpu_index))
    fs_unpriced = _filesystem(config, shared, ledger, throughput)
    fs_usd = None if fs_unpriced else sum(x.usd_per_hour for x in ledger.lines if x.category in FS_CATEGORIES)
    device_usd = _device_usd_per_hour(config, pools, book)
    replica_usd = None if device_usd is None else device_usd * replica_devices
    tiers = tier_costs(curve, cpu_index, replica_usd, fs_usd if shared is not None else None, capacity)
    tokens = curve.curve.prompt_tokens / curve.duration_s if curve is not None else None
    book.check_judgeable(ledger.unpriced)
    return StackCost(
        book.region,
        tuple(ledger.lines),
        tuple(ledger.unpriced),
        tiers,
        tokens,
        config.pricing.monthly_budget,
        _idle(config, pools, book, serving),
        bill.usage if bill is not None else (),
        _refused(capacity),
        throughput,
        _modes(book, throughput) if throughput is not None else (),
    )


def _idle(
    config: StackConfig, pools: Sequence[PoolSpec], book: PriceBook, serving: ServingUse | None
) -> tuple[Idle, ...]:
    """The created serving pool's nodes beyond what its pods take (none for a pool that autoscales)."""
    serving_pools = [p for p in pools if p.key == config.cache.node_pool]
    if serving is None or not serving_pools or any(p.bounds is not None for p in serving_pools):
        return ()
    nodes = sum(p.node_count for p in serving_pools)
    idle = nodes - serving.nodes
    if idle <= 0:
        return ()
    pool = serving_pools[0]
    price = book.get(pool.machine.key, book.kind(pool.spot))
    used = f"{serving.pods} model-server pods, {serving.per_node} to a node: {serving.nodes}"
    usd = None if price is None else idle * price.usd
    return (Idle(config.cache.node_pool or pool.key, idle, nodes, used, usd),)


def _refused(capacity: CapacityPlan | None) -> str | None:
    """Why the plan refuses the configured replica count (the keep-up check's words), None where it runs."""
    if capacity is None or capacity.configured.fits:
        return None
    run = capacity.configured
    why = shortfall(run, capacity.slo, capacity.band)
    return f"the plan refuses {run.replicas} replicas: {why}; {needs_line(capacity)} would"


def size_price(
    config: StackConfig,
    pools: Sequence[PoolSpec],
    shared: SharedTier | None,
    curve: TierCurve,
    cpu_index: int,
    replica_devices: int,
) -> SizePrice:
    """The prices `size_price.usd_per_hour` adds for the CPU-tier size `curve.cpu_sizes[cpu_index]`."""
    book = book_of(config)
    ledger = _Ledger(book)
    unpriced = _filesystem(config, shared, ledger, throughput_of(config, shared, _fs_rates(curve, cpu_index)))
    device = _device_usd_per_hour(config, pools, book)
    tier = None if unpriced else sum(x.usd_per_hour for x in ledger.lines)
    return SizePrice(None if device is None else device * replica_devices, tier, tuple(ledger.unpriced))


def _described_pools(config: StackConfig, ledger: _Ledger) -> None:
    """An existing cluster's pools, by the machine type `pricing.machine_types` names for each (each checked against
    its pool at config load, stacks/config/pricing_checks.py)."""
    types = config.pricing.machine_types
    for key, described in sorted(config.node_pools.items()):
        machine = types.get(key)
        if machine is None:
            why = "an existing cluster's pool: its machine type is not known"
            ledger.unpriced.append(Unpriced(f"node pool {key}", why, f"set pricing.machine_types.{key}"))
            continue
        count = described.node_count
        what = f"node pool {key}: {count} x {machine}"
        kind = ledger.book.kind(described.spot)
        ledger.add("accelerators", what, machine, count, f"{count} x ${{usd:,.4f}}/hour per node ({kind})", kind)


def device_usd_per_hour(config: StackConfig, pools: Sequence[PoolSpec]) -> float | None:
    """One device of the serving pool per hour at the stack's prices (None: unpriced)."""
    return _device_usd_per_hour(config, pools, book_of(config))


def _device_usd_per_hour(config: StackConfig, pools: Sequence[PoolSpec], book: PriceBook) -> float | None:
    """One accelerator device of the serving pool per hour: the machine's price over its devices."""
    key = config.cache.node_pool
    for pool in pools:
        if pool.key == key:
            price = book.get(pool.machine.key, book.kind(pool.spot))
            return None if price is None else price.usd / pool.machine.devices_per_node
    described = config.node_pools.get(key) if key else None
    machine = config.pricing.machine_types.get(key) if key else None
    if described is not None and machine is not None and described.accelerators_per_node:
        price = book.get(machine, book.kind(described.spot))
        return None if price is None else price.usd / described.accelerators_per_node
    return None


def _filesystem(
    config: StackConfig, shared: SharedTier | None, ledger: _Ledger, throughput: TierThroughput | None
) -> bool:
    """The shared file system's storage (where this stack creates it) and the throughput the tier's traffic is
    billed in the mode it runs (wherever it was created), as lines; True where part of the tier's cost is unpriced."""
    backend, provider = backend_of(config), provider_of(config)
    creates = provider.creates and backend.key in provider.storage_backends  # a serving stack's is its cluster's
    if not backend.created or (shared is None and not creates):  # a StorageClass the stack does not pay for
        return False
    before = len(ledger.unpriced)
    item = backend.storage_item(config.storage.lustre.per_unit_storage_throughput)
    if backend.storage_billed == "held" and item is not None:
        if shared is not None and creates:
            capacity = shared.capacity
            held = capacity.capacity_bytes * (capacity.high if shared.managed else 1)
            bound = "up to the evictor's high watermark" if shared.managed else "its budget, nothing evicts"
            ledger.add(
                "storage",
                f"{backend.short} storage: {held / GB:,.0f} GB held ({bound})",
                item,
                held / GB / HOURS_PER_MONTH,
                f"{held / GB:,.0f} GB x ${{usd}}/GB-month / {HOURS_PER_MONTH} h",
            )
        elif creates:
            why, remedy = "billed on the bytes held, which the serving stacks' evictors bound", "each serving stack's"
            ledger.unpriced.append(Unpriced(f"{backend.short} storage", why, f"{remedy} cost prices what it holds"))
    elif backend.storage_billed == "capacity" and item is not None and creates:
        tier, gib = config.storage.lustre.per_unit_storage_throughput, config.storage.size.bytes / GiB
        ledger.add(
            "storage",
            f"{backend.short}: {gib:,.0f} GiB at {tier} MB/s per TiB",
            item,
            gib / HOURS_PER_MONTH,
            f"{gib:,.0f} GiB x ${{usd}}/GiB-month / {HOURS_PER_MONTH} h",
        )
    running = throughput.running if throughput is not None else tier_throughput(config, None).running
    _throughput(backend.short, running, throughput.demand if throughput else None, ledger, creates, shared is not None)
    return len(ledger.unpriced) > before


def _throughput(
    short: str, limits: ModeLimits, demand: Demand | None, ledger: _Ledger, owns: bool = True, moves: bool = True
) -> None:
    """A throughput mode's lines (tier_throughput.py `charges`): what is provisioned where the stack owns the file
    system (`owns`), what moves where its traffic does (`moves`); per GB without a workload: unpriced."""
    found = charges(short, limits, demand if moves else None)
    if found is None and moves:
        why = "billed per GB read and written: no workload to measure the tier's rates"
        what = f"{short} {limits.mode.title.lower()} throughput"
        ledger.unpriced.append(Unpriced(what, why, "set workload.trace or workload.shared_prefix"))
    for charge in found or []:
        if owns or charge.item != limits.mode.billed_provisioned:
            ledger.add("throughput", charge.what, charge.item, charge.per_hour, charge.formula)


def throughput_of(
    config: StackConfig, shared: SharedTier | None, rates: tuple[float, float] | None
) -> TierThroughput | None:
    """The tier against its backend's limits at the workload's replayed (read, write) rates, else its evictor's
    upper-bound store rate (None: no shared tier)."""
    if shared is None:
        return None
    rate = shared.capacity.store_rate
    return tier_throughput(config, demand_of(config, shared.pods, rates, rate.bytes_per_second, rate.source))


def _fs_rates(curve: TierCurve | None, cpu_index: int | None) -> tuple[float, float] | None:
    """Bytes/s the filesystem tier is read and written at on the workload, at the sizes the stack runs."""
    rates = curve.fs_rates(cpu_index) if curve is not None and cpu_index is not None else None
    return None if rates is None else (rates.read, rates.write)


def _modes(book: PriceBook, throughput: TierThroughput) -> tuple[ModeCost, ...]:
    """Each of the backend's throughput modes priced at the tier's demand, the one the stack runs first."""
    out = []
    for limits in (throughput.running, *throughput.others):
        ledger = _Ledger(book)
        _throughput(throughput.backend.short, limits, throughput.demand, ledger)
        usd = None if ledger.unpriced or not ledger.lines else sum(x.usd_per_hour for x in ledger.lines)
        out.append(ModeCost(limits, usd, limits is throughput.running))
    return tuple(out)
