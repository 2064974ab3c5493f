"""GKE: a created cluster and its node pools, Managed Lustre, Artifact Registry remote repositories."""

from __future__ import annotations

from stacks.config import StackConfig, formats, provider_kinds
from stacks.config.cluster_facts import MirrorFacts
from stacks.config.providers.cluster_provider import ClusterBill, ClusterProvider, Extra, cluster_nodes

# A regional node pool with no node locations runs its node count in each of three zones of the region (GKE's
# default for regional clusters: https://cloud.google.com/kubernetes-engine/docs/concepts/regional-clusters).
REGIONAL_POOL_ZONES = 3


def mirror(config: StackConfig, registries: set[str]) -> MirrorFacts | None:
    """Artifact Registry remote repositories in the cluster's project and region."""
    gke = config.cluster.gke
    if config.images.mirror == "off" or gke is None:
        return None
    return MirrorFacts(cloud="gke", region=gke.region, project=gke.project, registries=sorted(registries))


def bill(config: StackConfig) -> ClusterBill | None:
    gke = config.cluster.gke
    if gke is None:
        return None
    nodes = gke.system_node_count * REGIONAL_POOL_ZONES
    count = f"{gke.system_node_count} per zone x {REGIONAL_POOL_ZONES} zones (a regional pool)"
    every = cluster_nodes(config, nodes)
    extras = [
        Extra(
            f"boot disks of its {every} nodes",
            "gke-boot-disk",
            every,
            "per node-hour, GKE's default boot disk (the stack sets no size)",
        )
    ]
    usage = ["Cloud NAT data processing: per GB its nodes pull through it"] if gke.cloud_nat else []
    if gke.cloud_nat:
        why = "per VM-hour of the nodes using it and per external address it allocates (AUTO_ONLY)"
        extras.insert(0, Extra("Cloud NAT gateway and its external addresses", "gke-cloud-nat", 1, why))
    if config.images.mirror != "off":  # the mirror the cluster stack creates
        usage.append("Artifact Registry storage: per GB-month of the images its remote repositories cache")
    return ClusterBill(gke.region, "gke-cluster", gke.system_machine_type, nodes, count, tuple(extras), tuple(usage))


def unmirrored(config: StackConfig) -> str:
    if config.images.mirror == "off":
        return "from the upstream registries (`images.mirror: off`)"
    return "from the upstream registries, pulled whole by each node (no mirror for `cluster.provider: gke`)"


GKE = ClusterProvider(
    kind=provider_kinds.GKE,
    creates=True,
    title="GKE",
    settings="gke",
    name_limit=40,
    cluster_name_limit=40,
    # GKE refuses cloud.google.com/ and gke.io/ node pool labels.
    reserved_label_prefixes=("kubernetes.io", "k8s.io", "cloud.google.com", "gke.io"),
    reservation=formats.gke_reservation,
    storage_backends=("gcp-lustre",),
    network_policy_enforcer="Dataplane V2",
    image_streaming=True,
    proxy_subnet=True,
    mirror=mirror,
    unmirrored=unmirrored,
    bill=bill,
)
