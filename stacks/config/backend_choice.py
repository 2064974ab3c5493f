"""The stack's filesystem-tier backend: the registry's record the config chooses (components/catalog/
storage_backends.py), its throughput mode, the region it runs in and what its limits follow from."""

from __future__ import annotations

from components.catalog.storage_backends import STORAGE_BACKENDS, Provisioning, StorageBackend, ThroughputMode
from components.specs import payoff_table
from components.units import MiB
from stacks.config import StackConfig
from stacks.config.providers import provider_of


def backend_of(config: StackConfig) -> StorageBackend:
    return STORAGE_BACKENDS[config.storage.backend]


def mode_of(config: StackConfig) -> ThroughputMode:
    """The throughput mode the stack runs: its backend's settings choose it where it has more than one."""
    backend = backend_of(config)
    settings = getattr(config.storage, backend.settings, None) if backend.settings else None
    return backend.mode(getattr(settings, "throughput_mode", None))


def configured_mibps(config: StackConfig) -> int | None:
    """MiB/s a provisioned mode is set to in the config (None: derived, or not a provisioned mode)."""
    backend = backend_of(config)
    settings = getattr(config.storage, backend.settings, None) if backend.settings else None
    mibps = getattr(settings, "provisioned_mibps", None)
    return mibps if mode_of(config).provisioned_cap is not None else None


def configured_provisioned(config: StackConfig) -> float | None:
    """Bytes/s a provisioned mode is set to in the config (None: derived, or not a provisioned mode)."""
    mibps = configured_mibps(config)
    return None if mibps is None else float(mibps * MiB)


def region_of(config: StackConfig) -> str | None:
    """Where the file system runs: a created cluster's region, else `pricing.region` (None: not known)."""
    bill = provider_of(config).bill(config)
    return bill.region if bill is not None else config.pricing.region


def provisioning_of(config: StackConfig, provisioned: float | None = None) -> Provisioning:
    """What the backend's limits follow from; `provisioned`: bytes/s a provisioned mode runs at (None: the
    config's, else its cap)."""
    storage = config.storage
    return Provisioning(
        region=region_of(config),
        capacity_bytes=storage.size.bytes,
        per_tib=storage.lustre.per_unit_storage_throughput,
        read_bandwidth=storage.read_bandwidth.bytes if storage.read_bandwidth is not None else None,
        provisioned=provisioned if provisioned is not None else configured_provisioned(config),
    )


def filesystem_of(config: StackConfig, pods: int) -> payoff_table.Filesystem:
    """The backend's read bandwidth as the payoff table and the cold start read it, `pods` reading at once."""
    return payoff_table.filesystem(backend_of(config), mode_of(config), provisioning_of(config), pods)
