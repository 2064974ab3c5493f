"""How big should each tier be for this traffic? The stack replayed on its workload: the share of prompt tokens
each tier catches at every CPU-tier size up to what the node holds (and every filesystem size), from one pass
(components/formulas/tier_replay.py), and with `cache.tier.cpu: auto` the smallest size within
`AUTO_MARGIN` of the best the node allows.

The routing is decided once, with the router's indexes at the stack's configured sizes; `./run bench` measures
how far the curve lies from replaying each size with its own routing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from components.catalog.models import ModelSpec
from components.formulas.hbm import HbmBudget
from components.formulas.payoff import Replica
from components.formulas.replica_routing import ServiceRates
from components.formulas.requests import Request
from components.formulas.shared_prefix import shared_prefix_requests
from components.formulas.shared_tier_capacity import StoreRate
from components.formulas.tier_replay import (
    Curve,
    Relation,
    RouteFn,
    Savings,
    Scope,
    Tiers,
    capacity_blocks,
    curve,
    route,
)
from components.specs.payoff_table import Payoff
from components.units import ByteSize, GiB
from stacks.config import StackConfig
from stacks.config.workload_trace import read_project_trace, read_trace
from stacks.planning.workload_bounds import check_work

# `cache.tier.cpu: auto` with a workload: the smallest size whose hit share is within this many points of
# the best any size the node holds reaches (a point of prompt tokens: more memory buys less than that).
AUTO_MARGIN = 0.01
# CPU-tier sizes the curve evaluates below the node's largest (besides none and the configured one).
CPU_POINTS = 10
# Without a node pool to bound it, the CPU tier's range runs to this many times the configured size.
CPU_RANGE = 4
# Filesystem sizes: a geometric range up to this many times the configured claim, and an unbounded one.
FS_POINTS = 8
FS_RANGE = 4
UNBOUNDED = ByteSize(2**60)  # a size no workload fills: the ceiling of what any cache could serve
UNBOUNDED_BLOCKS = 2**40  # its blocks: more than any trace references, less than a first touch's distance


IN_FLIGHT_ROUTING = (
    "once as the router's tiered scorers would at the configured sizes, each replica's queue its requests in"
    " flight (estimated)"
)


@dataclass(frozen=True)
class WorkloadSource:
    """Where the requests come from (the summary names it) and how to read them, once per replay."""

    description: str
    block_tokens: int
    requests: Callable[[], Iterator[Request]]

    def requests_list(self) -> list[Request]:
        return list(self.requests())


def in_memory(source: WorkloadSource) -> WorkloadSource:
    """The requests read once and held: the capacity plan and the curve both replay them."""
    held = source.requests_list()
    return WorkloadSource(source.description, source.block_tokens, lambda: iter(held))


def config_source(config: StackConfig, project_dir: Path) -> WorkloadSource | None:
    workload = config.workload
    if workload is None:
        return None
    bt = workload.block_tokens
    if workload.trace is not None:
        trace = workload.trace
        return WorkloadSource(
            f"trace `{trace}` (workload.trace)", bt, lambda: read_project_trace(trace, bt, project_dir)
        )
    shared = workload.shared_prefix
    assert shared is not None, "a workload is a trace or a shared prefix (check_workload)"
    shape = f"{shared.num_groups} groups x {shared.num_prompts_per_group} prompts, system prompt"
    shape += f" {shared.system_prompt_len}, question {shared.question_len}, output {shared.output_len} tokens"
    shape += f", {shared.request_rate:g}/s for {shared.duration} s"
    return WorkloadSource(
        f"shared prefix ({shape}; workload.shared_prefix)",
        bt,
        lambda: shared_prefix_requests(shared.shape, bt, shared.seed),
    )


def file_source(path: str, block_tokens: int) -> WorkloadSource:
    """A trace named on the command line: any regular file."""
    return WorkloadSource(
        f"trace `{path}` (--trace)", block_tokens, lambda: read_trace(path, block_tokens, source="--trace")
    )


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


@dataclass(frozen=True)
class Choice:
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
    choice: Choice | None  # the smallest size within AUTO_MARGIN of the best the node allows
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


def _geometric(low: int, high: int, points: int, step: int) -> list[int]:
    """About `points` sizes from `low` to `high`, evenly spaced on a log scale, multiples of `step`."""
    if high <= low:
        return [high]
    ratio = (high / low) ** (1 / max(points - 1, 1))
    inner = {max(step, round(low * ratio**i / step) * step) for i in range(points - 1)}
    return sorted(inner | {high // step * step})


def cpu_grid(shape: StackShape) -> list[ByteSize]:
    """None, then from half of HBM's KV (an inclusive tier smaller than HBM holds nothing HBM does not) up to
    the node's largest (or four times the configured), the configured size and twice it."""
    step = shape.cpu_step.bytes
    top = shape.node_largest or shape.configured_cpu * CPU_RANGE
    low = max(step, GiB, shape.hbm.kv_bytes.bytes // 2 if shape.relation == "inclusive" else 0)
    doubled = shape.configured_cpu.bytes * 2  # "would twice the tier pay?": a row a planner asks for
    sizes = {0, shape.configured_cpu.bytes, *_geometric(min(low, top.bytes), top.bytes, CPU_POINTS, step)}
    sizes |= {doubled} if doubled <= top.bytes else set()
    return [ByteSize(b) for b in sorted(sizes)]


def fs_grid(shape: StackShape) -> list[ByteSize]:
    if shape.fs_configured is None:
        return []
    configured = shape.fs_configured.bytes
    sizes = {0, configured, *_geometric(configured // FS_RANGE**2, configured * FS_RANGE, FS_POINTS, GiB)}
    return [ByteSize(b) for b in sorted(sizes)] + [UNBOUNDED]


def service_rates(shape: StackShape) -> ServiceRates:
    """The router's queue model: a prompt at the payoff's recompute rate, an output token at one decode step
    (every weight on a device read once: weights per device / the device's memory bandwidth)."""
    return ServiceRates(
        prefill_tokens_per_s=1 / shape.payoff.recompute_seconds,
        decode_s_per_token=shape.hbm.weights_per_device / shape.hbm.accelerator.memory_bandwidth,
    )


def _savings(shape: StackShape) -> Savings | None:
    bandwidths = [t.bandwidth for t in shape.payoff.tiers]
    if any(b is None for b in bandwidths):
        return None
    cpu = bandwidths[0]
    assert cpu is not None
    fs = bandwidths[1] if len(bandwidths) > 1 else cpu
    assert fs is not None
    return Savings(shape.replica, cpu, fs)


def tier_blocks(shape: StackShape, block_tokens: int, size: ByteSize) -> int:
    """A tier size (a `cache.tier.cpu` value, or the filesystem claim) as whole workload blocks of what it holds."""
    if size == UNBOUNDED:
        return UNBOUNDED_BLOCKS
    per_token = shape.model.kv_bytes_per_token.bytes
    return capacity_blocks(shape.capacity_of(size).bytes, block_tokens, per_token) if size.bytes else 0


def size_tiers(
    shape: StackShape, source: WorkloadSource, router: RouteFn = route, routing: str = IN_FLIGHT_ROUTING
) -> TierCurve:
    """Replay the workload on the stack once, over every size of the grid (`router`: how requests are routed,
    `routing` says how; default the in-flight estimate, `replica_routing`); its work measured first."""
    bt = source.block_tokens
    check_work(source.description, source.requests(), bt, shape.hbm)
    per_token = shape.model.kv_bytes_per_token.bytes

    def blocks(size: ByteSize) -> int:
        return tier_blocks(shape, bt, size)

    cpus, fss = cpu_grid(shape), fs_grid(shape)
    if shape.node_largest is None:  # no node bounds it: the ceiling beside the range
        cpus.append(UNBOUNDED)
    tiers = Tiers(
        block_tokens=bt,
        replicas=shape.replicas,
        hbm_blocks=shape.hbm.kv_tokens // bt,
        relation=shape.relation,
        cpu_scope=shape.cpu_scope,
    )
    configured_blocks = blocks(shape.configured_cpu)
    result = curve(
        source.requests(),
        tiers,
        [blocks(c) for c in cpus],
        [blocks(f) for f in fss],
        routing_cpu_blocks=configured_blocks,
        rates=service_rates(shape),
        savings=_savings(shape),
        router=router,
    )
    configured = (
        cpus.index(shape.configured_cpu),
        fss.index(shape.fs_configured) if shape.fs_configured is not None else 0,
    )
    sized = TierCurve(
        source.description, shape, tuple(cpus), tuple(fss), result, configured, bt * per_token, None, routing
    )
    return dataclasses.replace(sized, choice=choose(sized))


def filesystem_store_rate(sized: TierCurve, chosen: ByteSize | None) -> StoreRate | None:
    """The filesystem tier's write rate on the workload at the configured sizes (the CPU tier auto chose, where
    it chose one); None without a filesystem tier."""
    if not sized.fs_sizes:
        return None
    cpu = sized.cpu_sizes.index(chosen) if chosen is not None else sized.configured[0]
    blocks = int(sized.curve.fs_stored_blocks[cpu, sized.configured[1]])
    return StoreRate(sized.store_rate(blocks), f"measured by replaying the workload, {sized.source}")


def candidates(sized: TierCurve) -> list[tuple[int, ByteSize]]:
    """The CPU-tier sizes `cache.tier.cpu: auto` chooses among, by index: a tier the node holds (none where the
    node's memory is not known)."""
    largest = sized.shape.node_largest
    if largest is None:
        return []
    return [(i, c) for i, c in enumerate(sized.cpu_sizes) if 0 < c.bytes <= largest.bytes]


def choose(sized: TierCurve) -> Choice | None:
    """The smallest CPU tier within AUTO_MARGIN of the best hit share any size the node holds reaches, at the
    configured filesystem size. None where the node's memory is not known."""
    options = candidates(sized)
    if not options:
        return None
    fs = sized.configured[1]
    shares = sized.curve.share(sized.curve.hit_tokens)[:, fs]
    best_i, best = max(options, key=lambda ic: (float(shares[ic[0]]), -ic[1].bytes))
    for i, size in options:
        if shares[i] >= shares[best_i] - AUTO_MARGIN:
            return Choice(
                size,
                f"the smallest tier within {AUTO_MARGIN:.0%} of prompt tokens of the best the node holds:"
                f" {shares[i]:.1%} at {size.readable()} against {shares[best_i]:.1%} at {best.readable()} (margin"
                f" {AUTO_MARGIN:.0%}, stacks/planning/workload_sizing.py)",
            )
    raise AssertionError("the best size is within the margin of itself")
