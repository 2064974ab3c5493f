"""The storage section against the stack: a backend the cluster's provider creates, a shared tier the connector
claims, the settings of the backend chosen (and no other's), and a capacity in its steps (Managed Lustre's)."""

from __future__ import annotations

from components.catalog.key_lists import spoken
from components.catalog.storage_backends import STORAGE_BACKENDS, CapacityStep
from components.units import GiB
from stacks.config import StackConfig
from stacks.config.backend_choice import backend_of, mode_of
from stacks.config.connector_choice import connector_of
from stacks.config.errors import ConfigError
from stacks.config.providers import PROVIDERS, provider_of
from stacks.config.storage_section import StorageConfig


def capacity_error(size_gib: float, throughput: int, steps: CapacityStep) -> str | None:
    """Where `size_gib` is off a backend's capacity steps at its tier (`throughput`, MB/s per TiB): what it must be."""
    if size_gib < steps.minimum:
        return f"at least {steps.minimum}Gi at {throughput} MB/s per TiB"
    if steps.threshold is None or size_gib <= steps.threshold:
        return f"a multiple of {steps.step}Gi at {throughput} MB/s per TiB" if size_gib % steps.step else None
    if (size_gib - steps.threshold) % steps.step_above:
        return f"{steps.threshold}Gi plus a multiple of {steps.step_above}Gi above it at {throughput} MB/s per TiB"
    return None


def check_backend_settings(storage: StorageConfig) -> None:
    """The fields and sections of another backend than the one chosen are refused, naming the one they belong to."""
    backend = STORAGE_BACKENDS[storage.backend]
    if not backend.reads_configured_bandwidth and "read_bandwidth" in storage.model_fields_set:
        readers = spoken(k for k, b in STORAGE_BACKENDS.items() if b.reads_configured_bandwidth)
        raise ConfigError(
            "storage.read_bandwidth",
            storage.read_bandwidth.human() if storage.read_bandwidth else None,
            f"applies only with storage.backend {readers}; {storage.backend}'s bandwidth follows from its settings",
        )
    sections = {b.settings for b in STORAGE_BACKENDS.values() if b.settings}
    for section in sorted(sections - {backend.settings}):
        if section in storage.model_fields_set:
            owners = spoken(k for k, b in STORAGE_BACKENDS.items() if b.settings == section)
            raise ConfigError(f"storage.{section}", "(set)", f"applies only with storage.backend {owners}")


def check_storage(config: StackConfig) -> None:
    storage, provider, backend = config.storage, provider_of(config), backend_of(config)
    creators = [p.key for p in PROVIDERS.values() if p.creates and storage.backend in p.storage_backends]
    if creators and storage.backend not in provider.storage_backends:  # a serving stack's: its cluster's
        raise ConfigError("storage.backend", storage.backend, f"needs cluster.provider {creators[0]}")
    if backend.created and config.effective_layer != "cluster":
        if config.cache.tier.variant != "fs":
            raise ConfigError(
                "storage.backend", storage.backend, "creates the filesystem tier's storage: needs cache.tier.variant fs"
            )
        if not connector_of(config).uses_tier_claim(config.cache.tier.variant):  # the variant is fs: the connector
            allowed = spoken(k for k, b in STORAGE_BACKENDS.items() if not b.created)
            raise ConfigError(
                "storage.backend",
                storage.backend,
                f"creates a shared filesystem tier, which cache.connector {config.cache.connector} does not use"
                f" (its filesystem tier is node-local); allowed: {allowed}",
            )
        if storage.storage_class:
            raise ConfigError(
                "storage.storage_class",
                storage.storage_class,
                f"set by storage.backend {storage.backend}; leave it empty",
            )
    tier = storage.lustre.per_unit_storage_throughput
    if backend.capacity_steps:
        problem = capacity_error(storage.size.bytes / GiB, tier, backend.capacity_steps[tier])
        if problem:
            raise ConfigError("storage.size", storage.size.quantity(), f"{backend.short} capacity must be {problem}")
    _check_provisioned(config)


def _check_provisioned(config: StackConfig) -> None:
    """A provisioned throughput is set only in a provisioned mode, and set on a cluster stack (no workload derives
    it there; a serving stack's plan derives it from its replay, stacks/planning/workload/tier_throughput.py)."""
    backend, mode = backend_of(config), mode_of(config)
    settings = getattr(config.storage, backend.settings) if backend.settings else None
    if settings is None or "provisioned_mibps" not in type(settings).model_fields:
        return
    key, mibps = f"storage.{backend.settings}.provisioned_mibps", settings.provisioned_mibps
    provisioned = spoken(m.key for m in backend.modes.values() if m.provisioned_cap is not None)
    if mode.provisioned_cap is None and mibps is not None:
        raise ConfigError(key, mibps, f"applies only with storage.{backend.settings}.throughput_mode {provisioned}")
    if mode.provisioned_cap is not None and mibps is None and config.effective_layer == "cluster":
        raise ConfigError(
            key,
            None,
            f"throughput_mode {mode.key} needs its MiB/s on a cluster stack: it replays no serving stack's"
            " workload to derive it",
        )
