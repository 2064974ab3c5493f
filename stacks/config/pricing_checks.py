"""The pricing section against the stack: every `pricing.prices` key names something a price applies to (the
catalog's items, a Managed Lustre tier, a machine type the machine catalog or the stack names), and
`pricing.machine_types` and `pricing.region` apply only where they price something (an existing cluster's
described pools; a created cluster is priced by its own machine types and region), each machine type carrying its
pool's own accelerator."""

from __future__ import annotations

import difflib

from components.catalog import prices
from components.catalog.machines import MACHINES, SYSTEM_MACHINES
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.config.providers import provider_of, providers_that


def known_price_keys(config: StackConfig) -> set[str]:
    """What a `pricing.prices` key may name: the catalog's items, Managed Lustre's tiers, every machine type the
    machine catalog knows, the machine types this stack names (its pools', `pricing.machine_types`') and what its
    created cluster pays for besides them (the providers' `ClusterBill.extras`)."""
    named = {pool.machine_type for pool in config.node_pools.values() if pool.machine_type}
    bill = provider_of(config).bill(config)
    return {
        *(extra.item for extra in (bill.extras if bill is not None else ())),
        *prices.ITEMS,
        *(prices.lustre_item(tier) for tier in prices.LUSTRE_TIERS),
        *MACHINES,
        *SYSTEM_MACHINES,
        *named,
        *config.pricing.machine_types.values(),
    }


def nearest_first(key: str, known: set[str]) -> list[str]:
    """`known`, the most similar to `key` first (difflib's ratio), ties in name order."""
    return sorted(known, key=lambda k: (-difflib.SequenceMatcher(None, key, k).ratio(), k))


def check_pricing(config: StackConfig) -> None:
    pricing = config.pricing
    known = known_price_keys(config)
    for key, usd in pricing.prices.items():
        if key not in known:
            raise ConfigError(
                f"pricing.prices.{key}",
                usd,
                f"prices nothing the catalog or this stack names; known keys, nearest first: "
                f"{', '.join(nearest_first(key, known))}",
            )
    provider = provider_of(config)
    bill = provider.bill(config)
    if bill is not None and pricing.region is not None:
        raise ConfigError(
            "pricing.region",
            pricing.region,
            f"{provider.name} creates this cluster in {bill.region} (cluster.{provider.settings}.region), the region"
            " that prices it; unset pricing.region",
        )
    if pricing.machine_types and not provider.describes_pools:
        raise ConfigError(
            "pricing.machine_types",
            dict(pricing.machine_types),
            "names the machine types of an existing cluster's described pools; applies only with cluster.provider"
            f" {providers_that(lambda p: p.describes_pools)} (a created pool is priced by its own machine_type)",
        )
    for key, machine in pricing.machine_types.items():
        _check_machine_type(config, key, machine)


def _check_machine_type(config: StackConfig, key: str, machine: str) -> None:
    """A described pool's machine type: a pool of the stack's, and where the machine catalog knows the type, its
    accelerator and devices per node are the pool's (an MI300 pool is not priced as an H100 machine)."""
    pool = config.node_pools.get(key)
    if pool is None:
        allowed = ", ".join(sorted(config.node_pools)) or "none described"
        raise ConfigError(f"pricing.machine_types.{key}", machine, f"names no node pool; allowed: {allowed}")
    spec = MACHINES.get(machine)
    if spec is None:  # a machine type the catalog does not describe: priced by pricing.prices alone
        return
    if pool.accelerator is not None and spec.accelerator != pool.accelerator:
        raise ConfigError(
            f"pricing.machine_types.{key}",
            machine,
            f"is a {spec.accelerator} machine ({spec.devices_per_node} devices per node), while node pool {key}"
            f" carries {pool.accelerator}: name the machine type its nodes are",
        )
    if pool.accelerators_per_node is not None and spec.devices_per_node != pool.accelerators_per_node:
        raise ConfigError(
            f"pricing.machine_types.{key}",
            machine,
            f"has {spec.devices_per_node} devices per node, while node pool {key} describes"
            f" {pool.accelerators_per_node} (node_pools.{key}.accelerators_per_node)",
        )
