"""GKE's side of a created cluster: the cluster and its pools, Artifact Registry remote repositories, Managed
Lustre, and KEDA's read of GKE Managed Prometheus."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.catalog.storage_backends import GCP_LUSTRE
from components.cloud_storage import LustreArgs, LustreStorage
from components.cluster.gke import GkeCluster, GkeClusterArgs
from components.cluster.registry import ArtifactRegistryMirror, ArtifactRegistryMirrorArgs
from components.specs import keda
from components.specs.clusters import PoolSpec
from components.specs.servers.base import FILES_STORAGE_CLAIM
from components.units import GiB
from stacks.config import StackConfig
from stacks.deploy.cloud_side import STACK_NAME, CloudSide, CreatedCluster, FileSystem
from stacks.planning.mirror import Mirror
from stacks.planning.workload_builders import lustre_volume_name


def cluster(config: StackConfig, pools: list[PoolSpec], mirror: Mirror | None) -> GkeCluster:
    gke = config.cluster.gke
    assert gke is not None, "checked at config load"
    return GkeCluster(
        f"{STACK_NAME}-gke",
        GkeClusterArgs(
            name=config.cluster.name,
            project=gke.project,
            region=gke.region,
            zone=gke.zone,
            network=gke.network,
            subnetwork=gke.subnetwork,
            release_channel=gke.release_channel,
            master_cidr=gke.master_ipv4_cidr,
            system_machine_type=gke.system_machine_type,
            system_node_count=gke.system_node_count,
            cloud_nat=gke.cloud_nat,
            deletion_protection=gke.deletion_protection or config.protect,
            lustre_csi=config.storage.backend in FILE_SYSTEMS,  # what this side's file systems mount through
            pools=pools,
        ),
    )


def caches(mirror: Mirror) -> pulumi.Resource | None:
    return ArtifactRegistryMirror(
        f"{STACK_NAME}-mirror", ArtifactRegistryMirrorArgs(mirror.project, mirror.region, mirror.registries)
    )


def _lustre(
    config: StackConfig, cluster: CreatedCluster, provisioned_mibps: int | None, opts: pulumi.ResourceOptions
) -> LustreStorage:
    """Managed Lustre: capacity and its per-TiB tier provision its throughput."""
    gke = config.cluster.gke
    assert gke is not None, "checked at config load"
    return LustreStorage(
        f"{STACK_NAME}-lustre",
        LustreArgs(
            name=config.cluster.name,
            project=gke.project,
            region=gke.region,
            zone=gke.zone,
            network=gke.network,
            capacity_gib=config.storage.size.bytes // GiB,
            throughput=config.storage.lustre.per_unit_storage_throughput,
            filesystem=config.storage.lustre.filesystem,
            volume_name=lustre_volume_name(claim_namespace(config)),
            claim=(claim_namespace(config), FILES_STORAGE_CLAIM),
        ),
        opts,
    )


def claim_namespace(config: StackConfig) -> str:
    """The namespace whose tier claim binds the Lustre volume: the stack's own, or on a cluster stack the
    serving stack's it names (storage.claim_namespace)."""
    return config.storage.claim_namespace if config.effective_layer == "cluster" else config.namespace


def autoscaling(
    config: StackConfig,
    pools: list[PoolSpec],
    mirror: Mirror | None,
    cluster: CreatedCluster,
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """KEDA's read of GKE Managed Prometheus (GKE scales its pools itself)."""
    gke = config.cluster.gke
    if gke is None or config.monitoring.provider != "gke-managed-prometheus":
        return []
    return [
        gcp.projects.IAMMember(
            f"{STACK_NAME}-keda-metrics-reader",
            project=gke.project,
            role=keda.GMP_READER_ROLE,
            member=keda.gke_operator_member(gke.project),
            opts=pulumi.ResourceOptions(depends_on=[cluster]),
        )
    ]


FILE_SYSTEMS: dict[str, FileSystem] = {GCP_LUSTRE.key: _lustre}
GKE_SIDE = CloudSide("gke", cluster, caches, FILE_SYSTEMS, autoscaling)
