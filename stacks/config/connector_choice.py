"""The stack's connector: the config's choice as the connectors read it, and the implementation the
registry (components/specs/connectors) resolves from it."""

from __future__ import annotations

from components.catalog.accelerators import ACCELERATORS
from components.catalog.support import SUPPORTED
from components.specs import connectors
from components.specs.connectors import Choice, Connector
from components.specs.disaggregation import Disaggregation, PoolShape
from components.specs.lmcache import LMCacheSettings
from stacks.config import StackConfig
from stacks.config.disaggregation_section import PoolConfig


def choice(config: StackConfig) -> Choice:
    cache = config.cache
    return Choice(
        accelerator=ACCELERATORS[cache.accelerator],
        server=cache.server,
        variant=cache.tier.variant,
        host_type=cache.host_type,
        lmcache=LMCacheSettings(**config.lmcache.model_dump()),
        precise=config.router.prefix_routing == "precise",
        disaggregation=disaggregation(config),
    )


def _pool(config: StackConfig, pool: PoolConfig) -> PoolShape:
    cache = config.cache
    combo = SUPPORTED.get((cache.accelerator, cache.server, cache.connector, cache.tier.variant, cache.host_type))
    tp = pool.tensor_parallelism or cache.tensor_parallelism or (combo.tensor_parallelism if combo else 1)
    replicas = pool.replicas if isinstance(pool.replicas, int) else 1  # auto: the plan's first render, then its count
    return PoolShape(replicas, tp, pool.data_parallelism, ACCELERATORS[pool.accelerator or cache.accelerator])


def disaggregation(config: StackConfig) -> Disaggregation | None:
    """`cache.disaggregation` resolved: each pool's shape, its accelerator and the transport the prefill pool's
    accelerator carries (None: aggregated, or an accelerator with none; the cross-checks refuse the latter)."""
    pd = config.cache.disaggregation
    if pd is None:
        return None
    prefill, decode = _pool(config, pd.prefill), _pool(config, pd.decode)
    transport = prefill.accelerator.kv_transport
    if transport is None:
        return None
    return Disaggregation(prefill, decode, transport)


def connector_of(config: StackConfig) -> Connector:
    cache = config.cache
    return connectors.resolve(cache.server, ACCELERATORS[cache.accelerator], cache.connector)
