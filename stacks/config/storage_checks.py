"""The storage section against the stack: a backend the cluster's provider creates, a shared tier the connector
claims, and Managed Lustre's capacity steps."""

from __future__ import annotations

from components.units import GiB
from stacks.config import StackConfig
from stacks.config.connector_choice import connector_of
from stacks.config.errors import ConfigError
from stacks.config.providers import PROVIDERS, provider_of

# Managed Lustre capacity per throughput tier (MB/s per TiB), in GiB: minimum, step up to a
# threshold, and the step above it (storage.md, from GCP's performance tiers page).
LUSTRE_CAPACITY: dict[int, tuple[int, int, int | None, int]] = {
    1000: (9000, 9000, 1530000, 72000),
    500: (18000, 18000, 3060000, 144000),
    250: (36000, 36000, 6120000, 288000),
    125: (72000, 72000, None, 72000),
}


def lustre_capacity_error(size_gib: float, throughput: int) -> str | None:
    minimum, step, threshold, step_above = LUSTRE_CAPACITY[throughput]
    if size_gib < minimum:
        return f"at least {minimum}Gi at {throughput} MB/s per TiB"
    if threshold is None or size_gib <= threshold:
        return f"a multiple of {step}Gi at {throughput} MB/s per TiB" if size_gib % step else None
    if (size_gib - threshold) % step_above:
        return f"{threshold}Gi plus a multiple of {step_above}Gi above it at {throughput} MB/s per TiB"
    return None


def check_storage(config: StackConfig) -> None:
    storage, provider = config.storage, provider_of(config)
    creators = [p.key for p in PROVIDERS.values() if p.creates and storage.backend in p.storage_backends]
    if creators and storage.backend not in provider.storage_backends:  # a serving stack's: its cluster's
        raise ConfigError("storage.backend", storage.backend, f"needs cluster.provider {creators[0]}")
    if storage.backend != "existing" and config.effective_layer != "cluster":
        if config.cache.tier.variant != "fs":
            raise ConfigError(
                "storage.backend", storage.backend, "creates the filesystem tier's storage: needs cache.tier.variant fs"
            )
        if not connector_of(config).uses_tier_claim(config.cache.tier.variant):  # the variant is fs: the connector
            raise ConfigError(
                "storage.backend",
                storage.backend,
                f"creates a shared filesystem tier, which cache.connector {config.cache.connector} does not use"
                " (its filesystem tier is node-local); allowed: existing",
            )
        if storage.storage_class:
            raise ConfigError(
                "storage.storage_class",
                storage.storage_class,
                f"set by storage.backend {storage.backend}; leave it empty",
            )
    if storage.backend == "gcp-lustre":
        problem = lustre_capacity_error(storage.size.bytes / GiB, storage.lustre.per_unit_storage_throughput)
        if problem:
            raise ConfigError("storage.size", storage.size.quantity(), f"Managed Lustre capacity must be {problem}")
