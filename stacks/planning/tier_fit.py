"""The tier's size and the stack against its node pool: the combination's default tier, the stack's, or
`auto` (the largest that fits), with the per-node daemons beside the model servers on each node."""

from __future__ import annotations

import dataclasses

from components.specs import prepull, sizing
from components.specs.connectors import SizingInputs
from components.units import ByteSize
from stacks.config.errors import ConfigError
from stacks.planning import hardware
from stacks.planning.resolution import Resolved


def _default_tier(stack: Resolved) -> ByteSize:
    defaults = stack.defaults
    if defaults.cpu_tier_blocks is not None:
        return sizing.tpu_tier_bytes(stack.model, stack.accelerator, defaults.cpu_tier_blocks)
    assert defaults.cpu_tier is not None, "every combination defaults its CPU tier"
    return defaults.cpu_tier


def _size(stack: Resolved, tier: ByteSize) -> sizing.TierSizing:
    cache = stack.config.cache
    inputs = SizingInputs(
        model=stack.model,
        accelerator=stack.accelerator,
        tensor_parallelism=stack.tensor_parallelism,
        replicas=stack.replicas,
        tier=tier,
        disk=cache.tier.disk or stack.defaults.disk_tier,
        variant=cache.tier.variant,
        hosts=stack.group_size,
    )
    return stack.connector.size(inputs)


def _per_node_daemon(stack: Resolved, tier_sizing: sizing.TierSizing) -> ByteSize:
    """Memory the per-node DaemonSets (the cache's, the image pre-pull) take beside the model servers on each node."""
    prepulled = prepull.MEMORY if stack.config.images.prepull else ByteSize(0)
    return stack.connector.per_node_memory(tier_sizing) + prepulled


def tier_capacity(stack: Resolved, tier: ByteSize) -> ByteSize:
    """What a `cache.tier.cpu` of `tier` holds for one pod (MooncakeStore: the pool every pod loads from)."""
    return _size(stack, tier).cpu_tier_per_pod


def _largest_fitting(stack: Resolved, pool: hardware.PoolHardware, on_node: int) -> ByteSize:
    """`auto`'s tier: the largest whose `on_node` pods (and the per-node daemons) fit a node of `pool`."""

    def memory_for(tier: ByteSize) -> tuple[ByteSize, ByteSize]:
        tier_sizing = _size(stack, tier)
        return tier_sizing.pod_memory, _per_node_daemon(stack, tier_sizing)

    step = stack.connector.auto_tier_step(stack.tensor_parallelism, stack.config.cache.tier.variant)
    return hardware.largest_fitting_tier(pool, on_node, memory_for, step)


def node_largest_tier(stack: Resolved) -> ByteSize | None:
    """The largest tier the nodes of the stack's pool hold; None without a pool (any node of the cluster),
    where its host memory is not known, or where not even the smallest tier fits."""
    config = stack.config
    pool = hardware.pool_hardware(config, config.cache.node_pool) if config.cache.node_pool else None
    if pool is None or pool.allocatable is None:
        return None
    on_node = min(hardware.pods_per_node(pool, stack.devices), stack.pods)
    try:
        return _largest_fitting(stack, pool, on_node)
    except ConfigError:
        return None


def size_on_hardware(
    stack: Resolved, chosen: ByteSize | None = None
) -> tuple[sizing.TierSizing, hardware.Fit | None, ByteSize]:
    """Size the tier (the combination's default, the stack's, or `auto`: the largest that fits, or `chosen`,
    what the workload's curve picked below it), then check the stack against its node pool: devices per
    node, nodes, and memory per node. Returns the sizing (the connector's own sizes within), the fit and the
    tier as sized (in `cache.tier.cpu`'s terms)."""
    cache, devices = stack.config.cache, stack.devices
    requested = cache.tier.cpu
    pool = hardware.pool_hardware(stack.config, cache.node_pool) if cache.node_pool else None
    if pool is not None and pool.accelerator not in (None, cache.accelerator):
        raise ConfigError(
            "cache.node_pool", cache.node_pool, f"{pool.describe()} carries {pool.accelerator}, not {cache.accelerator}"
        )
    pods = stack.pods
    on_node = 1
    if pool is not None:
        slots = hardware.pods_per_node(pool, devices)
        hardware.check_capacity(pool, pods, slots, stack.replicas)
        on_node = min(slots, pods)  # at most this many of the stack's pods share a node

    largest = None
    if requested == "auto":
        if pool is None:
            raise ConfigError("cache.tier.cpu", "auto", "needs cache.node_pool: the tier is sized to its nodes")
        largest = _largest_fitting(stack, pool, on_node)
        tier = chosen if chosen is not None else largest
    elif requested is None:
        tier = _default_tier(stack)
    else:
        tier = requested
    tier_sizing = _size(stack, tier)
    fit = None
    if pool is not None:
        fit = hardware.check_memory(
            pool, tier_sizing.pod_memory, on_node, _per_node_daemon(stack, tier_sizing), tier.human()
        )
        fit = dataclasses.replace(fit, largest_tier=largest)
    else:  # no pool to fit: the pod must still fit some node of the accelerator
        node = hardware.any_node(cache.accelerator)
        hardware.pods_per_node(node, devices)
        hardware.check_memory(node, tier_sizing.pod_memory, 1, _per_node_daemon(stack, tier_sizing), tier.human())
    return tier_sizing, fit, tier
