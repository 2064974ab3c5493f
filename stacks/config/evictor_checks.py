"""The filesystem tier's evictor settings against the stack: a setting that would do nothing is refused."""

from __future__ import annotations

from components.catalog.key_lists import spoken
from components.catalog.storage_backends import STORAGE_BACKENDS
from components.units import ByteSize
from stacks.config import StackConfig
from stacks.config.connector_choice import connector_of
from stacks.config.errors import ConfigError

EVICTOR_WHEN_ON = ("high_watermark", "low_watermark", "image")  # what only a running evictor reads


def check_evictor_applies(config: StackConfig) -> None:
    """Evictor settings that would do nothing are refused: any of them without a shared filesystem tier, the
    running evictor's own with it off, a budget where the claim's size is the budget (all but the elastic backends)."""
    evictor, backend = config.storage.evictor, config.storage.backend
    chosen = sorted(evictor.model_fields_set)
    if not chosen:
        return
    name = chosen[0]
    if not connector_of(config).uses_tier_claim(config.cache.tier.variant):
        raise ConfigError(
            f"storage.evictor.{name}",
            _shown(getattr(evictor, name)),
            "applies only with a shared filesystem tier (cache.tier.variant fs, on a connector that mounts the"
            " shared claim); this stack has none to evict from",
        )
    idle = [n for n in EVICTOR_WHEN_ON if n in evictor.model_fields_set]
    if evictor.mode == "off" and idle:
        raise ConfigError(
            f"storage.evictor.{idle[0]}",
            _shown(getattr(evictor, idle[0])),
            "applies only with storage.evictor.mode auto; the evictor is off",
        )
    if evictor.budget is not None and not STORAGE_BACKENDS[backend].elastic:
        elastic = spoken(k for k, b in STORAGE_BACKENDS.items() if b.elastic)
        raise ConfigError(
            "storage.evictor.budget",
            evictor.budget.human(),
            f"applies only with storage.backend {elastic} (elastic); on {backend} the budget is storage.size",
        )


def _shown(value: object) -> object:
    return value.human() if isinstance(value, ByteSize) else value
