"""The connector registry: which implementation a stack runs, resolved from its config's Literals.

SGLang brings its own cache (HiCache) and a TPU its own connector (the TPU offload connector); otherwise
`cache.connector` names it. Each implementation is one module here, on the interface of `interface.py`;
`components/catalog/support.py` stays the table of the combinations each one runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile
from components.catalog.key_lists import literal_of
from components.catalog.startup_figures import SizedImage
from components.catalog.support import SUPPORTED, Combo
from components.specs.connectors.interface import (
    FILES_STORAGE,
    Choice,
    Connector,
    DaemonInputs,
    EngineKey,
    SizingInputs,
    to_json,
)
from components.specs.connectors.lmcache_connector import LMCACHE_CONNECTOR
from components.specs.connectors.lmcache_server import LMCACHE_SERVER
from components.specs.connectors.mooncake_store import MOONCAKE_STORE
from components.specs.connectors.native import NATIVE
from components.specs.connectors.sglang_hicache import HICACHE
from components.specs.connectors.tpu_offload import TPU_OFFLOAD

__all__ = [
    "BY_KEY",
    "FILES_STORAGE",
    "IMPLEMENTATIONS",
    "OWN_IMAGES",
    "Choice",
    "Connector",
    "ConnectorKey",
    "DaemonInputs",
    "SizingInputs",
    "combinations",
    "resolve",
    "to_json",
]

# vLLM's connectors on GPUs, by the config's `cache.connector`.
BY_KEY: dict[str, Connector] = {
    "native": NATIVE,
    "lmcache-connector": LMCACHE_CONNECTOR,
    "mooncake-store": MOONCAKE_STORE,
    "lmcache-server": LMCACHE_SERVER,
}
if TYPE_CHECKING:  # mypy cannot evaluate a Literal built from a registry (key_lists.literal_of)
    ConnectorKey = str
else:
    ConnectorKey = literal_of(BY_KEY)  # `cache.connector` (stacks/config/cache_section.py types it with this)
# Engines that bring their own cache, whatever `cache.connector` says.
BY_ENGINE: dict[EngineKey, Connector] = {"sglang": HICACHE}
IMPLEMENTATIONS: tuple[Connector, ...] = (*BY_KEY.values(), HICACHE, TPU_OFFLOAD)
# The images accelerators and connectors pin in their own records (the catalog's shared ones are versions.py's).
OWN_IMAGES: tuple[SizedImage, ...] = (
    *(image for profile in ACCELERATORS.values() for image in profile.own_images),
    *(image for connector in IMPLEMENTATIONS for image in connector.own_images),
)


def resolve(server: EngineKey, accelerator: AcceleratorProfile, connector: ConnectorKey) -> Connector:
    """The implementation a stack runs: SGLang's HiCache, a TPU's offload connector, else `cache.connector`'s."""
    if server in BY_ENGINE:
        return BY_ENGINE[server]
    if accelerator.is_tpu:
        return TPU_OFFLOAD
    return BY_KEY[connector]


def combinations(connector: Connector) -> list[Combo]:
    """The supported combinations (components/catalog/support.py) this implementation runs."""
    return [combo for combo in SUPPORTED if resolve(combo[1], ACCELERATORS[combo[0]], combo[2]) is connector]  # type: ignore[arg-type]
