"""Cross-field checks run at config load, after each field is valid on its own."""

from __future__ import annotations

from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.catalog.support import SUPPORTED, supported_for
from components.specs.units import GiB
from stacks.config import StackConfig
from stacks.errors import ConfigError


def check_stack(config: StackConfig) -> None:
    cache = config.cache
    combo = (cache.accelerator, cache.server, cache.connector, cache.tier.variant, cache.host_type)
    if combo not in SUPPORTED:
        field, value, allowed = supported_for(combo)
        raise ConfigError(field, value, allowed)
    defaults = SUPPORTED[combo]

    if config.cluster.platform not in defaults.platforms:
        raise ConfigError(
            "cluster.platform",
            config.cluster.platform,
            f"not supported for {'/'.join(combo[:4])}; allowed: {', '.join(defaults.platforms)}",
        )

    model = MODELS[cache.model or defaults.model]
    tp = cache.tensor_parallelism or defaults.tensor_parallelism
    if model.attention_heads % tp:
        raise ConfigError(
            "cache.tensor_parallelism", tp, f"must divide the {model.attention_heads} attention heads of {model.name}"
        )
    if defaults.devices is not None and cache.tensor_parallelism is not None and tp % defaults.devices:
        raise ConfigError(
            "cache.tensor_parallelism", tp, f"must be a multiple of the {defaults.devices} TPU chips of a pod"
        )

    takes_disk = defaults.disk_tier is not None
    if cache.tier.disk is not None and not takes_disk:
        raise ConfigError(
            "cache.tier.disk",
            cache.tier.disk.human(),
            "only lmcache-connector and mooncake-store with the fs variant take a disk size; leave it unset",
        )

    if cache.connector == "mooncake-store" and cache.tier.cpu is not None:
        ranks = tp if cache.tier.variant == "cpu" else 1  # embedded: one segment per rank
        if cache.tier.cpu.bytes % (GiB * ranks):
            raise ConfigError(
                "cache.tier.cpu",
                cache.tier.cpu.human(),
                f"Mooncake segments are whole GiB{' per rank' if ranks > 1 else ''}: use a multiple of {ranks} GiB",
            )

    if cache.connector == "lmcache-server":
        block = ACCELERATORS[cache.accelerator].kv_block_tokens
        if config.lmcache.chunk_size % block:
            raise ConfigError(
                "lmcache.chunk_size",
                config.lmcache.chunk_size,
                f"must be a multiple of the model server's {block}-token KV block, or LMCache chunks split blocks",
            )
    elif config.lmcache.model_fields_set:
        raise ConfigError(
            "lmcache", sorted(config.lmcache.model_fields_set), "applies only with cache.connector lmcache-server"
        )

    if cache.node_pool is not None and cache.node_pool not in config.node_pools:
        allowed = ", ".join(sorted(config.node_pools)) or "none are described in node_pools"
        raise ConfigError("cache.node_pool", cache.node_pool, f"allowed: {allowed}")
