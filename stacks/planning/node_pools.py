"""The node pools a stack creates (none on an existing cluster): one record per pool, and per TPU multi-host slice."""

from __future__ import annotations

from components.catalog.machines import MACHINES
from components.specs.clusters import PoolSpec
from stacks.config import StackConfig
from stacks.config.cross_checks import pool_names
from stacks.config.providers import provider_of
from stacks.planning.mirror import mirror_registry


def pool_specs(config: StackConfig) -> list[PoolSpec]:
    """The node pools to create (none on an existing cluster); TPU multi-host pools, one per slice."""
    if not provider_of(config).creates:
        return []
    out = []
    for key, pool in sorted(config.node_pools.items()):
        taints = [{k: v for k, v in t.model_dump().items() if v is not None} for t in pool.taints]
        for name in pool_names(config.cluster.name, key, pool.slices):
            out.append(
                PoolSpec(
                    key=key,
                    name=name,
                    machine=MACHINES[str(pool.machine_type)],
                    node_count=pool.node_count,
                    tpu_topology=pool.tpu_topology,
                    spot=pool.spot,
                    reservation=pool.reservation,
                    labels=dict(pool.labels),
                    taints=taints,
                    image_streaming=mirror_registry(config) is not None,
                )
            )
    return out
