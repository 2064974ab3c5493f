"""The tier's size and the stack against its node pool: the combination's default tier, the stack's, or
`auto` (the largest that fits), with the per-node daemons beside the model servers on each node."""

from __future__ import annotations

import dataclasses

from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.catalog.support import ComboDefaults
from components.specs import prepull, sizing
from components.specs.connectors import SizingInputs
from components.units import ByteSize
from stacks.config import StackConfig
from stacks.config.connector_choice import choice, connector_of
from stacks.config.errors import ConfigError
from stacks.planning import hardware


def _default_tier(config: StackConfig, defaults: ComboDefaults) -> ByteSize:
    model, accelerator = MODELS[config.cache.model or defaults.model], ACCELERATORS[config.cache.accelerator]
    if defaults.cpu_tier_blocks is not None:
        return sizing.tpu_tier_bytes(model, accelerator, defaults.cpu_tier_blocks)
    assert defaults.cpu_tier is not None, "every combination defaults its CPU tier"
    return defaults.cpu_tier


def _size(config: StackConfig, defaults: ComboDefaults, tp: int, replicas: int, tier: ByteSize) -> sizing.TierSizing:
    cache = config.cache
    inputs = SizingInputs(
        model=MODELS[cache.model or defaults.model],
        accelerator=ACCELERATORS[cache.accelerator],
        tensor_parallelism=tp,
        replicas=replicas,
        tier=tier,
        disk=cache.tier.disk or defaults.disk_tier,
        variant=cache.tier.variant,
        hosts=defaults.group_size,
    )
    return connector_of(config).size(inputs)


def _per_node_daemon(config: StackConfig, tier_sizing: sizing.TierSizing) -> ByteSize:
    """Memory the per-node DaemonSets (the cache's, the image pre-pull) take beside the model servers on each node."""
    prepulled = prepull.MEMORY if config.images.prepull else ByteSize(0)
    return connector_of(config).per_node_memory(tier_sizing) + prepulled


def tier_capacity(config: StackConfig, defaults: ComboDefaults, tp: int, replicas: int, tier: ByteSize) -> ByteSize:
    """What a `cache.tier.cpu` of `tier` holds for one pod (MooncakeStore: the pool every pod loads from)."""
    return _size(config, defaults, tp, replicas, tier).cpu_tier_per_pod


def _largest_fitting(
    config: StackConfig,
    defaults: ComboDefaults,
    tp: int,
    replicas: int,
    pool: hardware.PoolHardware,
    on_node: int,
) -> ByteSize:
    """`auto`'s tier: the largest whose `on_node` pods (and the per-node daemons) fit a node of `pool`."""

    def memory_for(tier: ByteSize) -> tuple[ByteSize, ByteSize]:
        tier_sizing = _size(config, defaults, tp, replicas, tier)
        return tier_sizing.pod_memory, _per_node_daemon(config, tier_sizing)

    step = connector_of(config).auto_tier_step(tp, config.cache.tier.variant)
    return hardware.largest_fitting_tier(pool, on_node, memory_for, step)


def _pods(config: StackConfig, defaults: ComboDefaults, replicas: int) -> int:
    """The stack's model-server pods: replicas x pods per replica x roles."""
    return replicas * defaults.group_size * connector_of(config).roles(choice(config))


def node_largest_tier(
    config: StackConfig, defaults: ComboDefaults, tp: int, replicas: int, devices: int
) -> ByteSize | None:
    """The largest tier the nodes of the stack's pool hold; None without a pool (any node of the cluster),
    where its host memory is not known, or where not even the smallest tier fits."""
    pool = hardware.pool_hardware(config, config.cache.node_pool) if config.cache.node_pool else None
    if pool is None or pool.allocatable is None:
        return None
    on_node = min(hardware.pods_per_node(pool, devices), _pods(config, defaults, replicas))
    try:
        return _largest_fitting(config, defaults, tp, replicas, pool, on_node)
    except ConfigError:
        return None


def size_on_hardware(
    config: StackConfig,
    defaults: ComboDefaults,
    tp: int,
    replicas: int,
    devices: int,
    chosen: ByteSize | None = None,
) -> tuple[sizing.TierSizing, hardware.Fit | None, ByteSize]:
    """Size the tier (the combination's default, the stack's, or `auto`: the largest that fits, or `chosen`,
    what the workload's curve picked below it), then check the stack against its node pool: devices per
    node, nodes, and memory per node. Returns the sizing, Mooncake's client, the fit and the tier as sized
    (in `cache.tier.cpu`'s terms)."""
    cache = config.cache
    requested = cache.tier.cpu
    pool = hardware.pool_hardware(config, cache.node_pool) if cache.node_pool else None
    if pool is not None and pool.accelerator not in (None, cache.accelerator):
        raise ConfigError(
            "cache.node_pool", cache.node_pool, f"{pool.describe()} carries {pool.accelerator}, not {cache.accelerator}"
        )
    pods = _pods(config, defaults, replicas)
    on_node = 1
    if pool is not None:
        slots = hardware.pods_per_node(pool, devices)
        hardware.check_capacity(pool, pods, slots)
        on_node = min(slots, pods)  # at most this many of the stack's pods share a node

    largest = None
    if requested == "auto":
        if pool is None:
            raise ConfigError("cache.tier.cpu", "auto", "needs cache.node_pool: the tier is sized to its nodes")
        largest = _largest_fitting(config, defaults, tp, replicas, pool, on_node)
        tier = chosen if chosen is not None else largest
    elif requested is None:
        tier = _default_tier(config, defaults)
    else:
        tier = requested
    tier_sizing = _size(config, defaults, tp, replicas, tier)
    fit = None
    if pool is not None:
        fit = hardware.check_memory(
            pool, tier_sizing.pod_memory, on_node, _per_node_daemon(config, tier_sizing), tier.human()
        )
        fit = dataclasses.replace(fit, largest_tier=largest)
    else:  # no pool to fit: the pod must still fit some node of the accelerator
        node = hardware.any_node(cache.accelerator)
        hardware.pods_per_node(node, devices)
        hardware.check_memory(node, tier_sizing.pod_memory, 1, _per_node_daemon(config, tier_sizing), tier.human())
    return tier_sizing, fit, tier
