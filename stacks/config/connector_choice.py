"""The stack's connector: the config's choice as the connectors read it, and the implementation the
registry (components/specs/connectors) resolves from it."""

from __future__ import annotations

from components.catalog.accelerators import ACCELERATORS
from components.specs import connectors
from components.specs.connectors import Choice, Connector
from components.specs.lmcache import LMCacheSettings
from stacks.config import StackConfig


def choice(config: StackConfig) -> Choice:
    cache = config.cache
    return Choice(
        accelerator=ACCELERATORS[cache.accelerator],
        server=cache.server,
        variant=cache.tier.variant,
        host_type=cache.host_type,
        lmcache=LMCacheSettings(**config.lmcache.model_dump()),
        precise=config.router.prefix_routing == "precise",
    )


def connector_of(config: StackConfig) -> Connector:
    cache = config.cache
    return connectors.resolve(cache.server, ACCELERATORS[cache.accelerator], cache.connector)
