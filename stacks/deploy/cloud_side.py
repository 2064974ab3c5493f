"""What a created cluster's cloud adds as Pulumi resources, one record per cloud (`gke_side.py`, `eks_side.py`):
the cluster and its pools, its registry caches, the filesystem tier's backend, and what autoscaling needs besides
KEDA. `compose.py` declares whatever the stack's provider's side returns (the provider's facts are its record
in `stacks/config/providers/`, a floor below)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pulumi

from components.cluster.eks import EksCluster
from components.cluster.gke import GkeCluster
from components.specs.clusters import PoolSpec
from stacks.config import StackConfig
from stacks.planning.mirror import Mirror

STACK_NAME = "llmd"
CreatedCluster = GkeCluster | EksCluster
# A backend's file system on its cloud: the stack's config, the cluster, the MiB/s a provisioned throughput mode
# runs at (the plan's, stacks/planning/workload/tier_throughput.py; None: not a provisioned mode) and the options.
FileSystem = Callable[[StackConfig, CreatedCluster, int | None, pulumi.ResourceOptions], pulumi.Resource]


@dataclass(frozen=True)
class CloudSide:
    key: str  # the provider's (`cluster.provider`)
    cluster: Callable[[StackConfig, list[PoolSpec], Mirror | None], CreatedCluster]
    caches: Callable[[Mirror], pulumi.Resource | None]  # the registry caches every mirrored image comes through
    # The file systems it creates, by `storage.backend` (components/catalog/storage_backends.py: the backends
    # created on its provider).
    file_systems: Mapping[str, FileSystem]
    # What autoscaling needs besides KEDA (its read of the cloud's metrics, a node autoscaler).
    autoscaling: Callable[
        [StackConfig, list[PoolSpec], Mirror | None, CreatedCluster, pulumi.ResourceOptions], list[pulumi.Resource]
    ]
