"""How big should each tier be for this traffic? The stack replayed on its workload: the share of prompt tokens
each tier catches at every CPU-tier size up to what the node holds (and every filesystem size), from one pass
(components/formulas/tier_replay.py), and with `cache.tier.cpu: auto` the smallest size within
`AUTO_MARGIN` of the best the node allows.

The routing is decided once, with the router's indexes at the stack's configured sizes; `./run bench` measures
how far the curve lies from replaying each size with its own routing.
"""

from __future__ import annotations

import dataclasses

from components.formulas.replica_routing import ServiceRates
from components.formulas.shared_tier_capacity import StoreRate
from components.formulas.tier_replay import RouteFn, Savings, Tiers, capacity_blocks, curve, route
from components.units import ByteSize, GiB
from stacks.planning.workload.tier_curve import (
    IN_FLIGHT_ROUTING,
    UNBOUNDED,
    UNBOUNDED_BLOCKS,
    StackShape,
    TierChoice,
    TierCurve,
)
from stacks.planning.workload.workload_bounds import check_work
from stacks.planning.workload.workload_source import WorkloadSource

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


def choose(sized: TierCurve) -> TierChoice | None:
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
            return TierChoice(
                size,
                f"the smallest tier within {AUTO_MARGIN:.0%} of prompt tokens of the best the node holds:"
                f" {shares[i]:.1%} at {size.readable()} against {shares[best_i]:.1%} at {best.readable()} (margin"
                f" {AUTO_MARGIN:.0%}, stacks/planning/workload/workload_sizing.py)",
            )
    raise AssertionError("the best size is within the margin of itself")
