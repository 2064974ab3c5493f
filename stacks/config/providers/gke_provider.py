"""GKE: a created cluster and its node pools, Managed Lustre, Artifact Registry remote repositories."""

from __future__ import annotations

import math
from collections import Counter

from components.catalog import cluster_extras
from stacks.config import StackConfig, formats, provider_kinds
from stacks.config.cluster_facts import MirrorFacts
from stacks.config.providers.cluster_provider import (
    ClusterBill,
    ClusterProvider,
    Extra,
    cluster_nodes,
    per_hour,
    per_month,
)

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
    extras = _cloud_nat(cluster_nodes(config, nodes)) if gke.cloud_nat else []
    extras += _boot_disks(config, nodes, gke.system_machine_type)
    usage = ["Cloud NAT data processing: per GB its nodes pull through it"] if gke.cloud_nat else []
    if config.images.mirror != "off":  # the mirror the cluster stack creates
        usage.append("Artifact Registry storage: per GB-month of the images its remote repositories cache")
    return ClusterBill(gke.region, "gke-cluster", gke.system_machine_type, nodes, count, tuple(extras), tuple(usage))


def _cloud_nat(vms: int) -> list[Extra]:
    """The Cloud NAT gateway (components/cluster/gke.py: one, AUTO_ONLY addresses, on every subnet's ranges): every
    node is private, so each uses it. Up to 32 VMs it is billed per VM-hour, above that at one capped rate; its
    addresses are as many as the VMs' minimum ports take."""
    what = f"Cloud NAT gateway serving {vms} VMs"
    if vms <= cluster_extras.NAT_VM_TIER_CAP:
        counted = f"{vms} VMs (every node: private, on the subnets it serves)"
        gateway = per_hour(what, "gke-cloud-nat-vm", vms, counted, "per VM-hour of the VMs using it, up to 32")
    else:
        counted = f"1 gateway (over {cluster_extras.NAT_VM_TIER_CAP} VMs: the capped rate)"
        gateway = per_hour(what, "gke-cloud-nat-gateway", 1, counted, "per gateway-hour above 32 VMs")
    ports, per_address = cluster_extras.NAT_MIN_PORTS_PER_VM, cluster_extras.NAT_PORTS_PER_ADDRESS
    addresses = math.ceil(vms * ports / per_address)
    counted = f"{addresses} = ceil({vms} VMs x {ports} ports / {per_address:,} per address)"
    plural = "es" if addresses != 1 else ""
    address = per_hour(f"Cloud NAT's external address{plural}", "gke-nat-ip", addresses, counted, "per address-hour")
    return [gateway, address]


def _boot_disks(config: StackConfig, system_nodes: int, system_machine: str) -> list[Extra]:
    """Each node's boot disk, GKE's default (the stack sets none): 100 GiB of the type its machine takes."""
    nodes: Counter[str] = Counter({system_machine: system_nodes})
    for pool in config.node_pools.values():
        nodes[str(pool.machine_type)] += pool.node_count * pool.slices
    by_disk: Counter[str] = Counter()
    extras = []
    gib = cluster_extras.GKE_BOOT_DISK_GIB
    for machine, count in nodes.items():
        disk = cluster_extras.gke_boot_disk(machine)
        if disk is not None:
            by_disk[disk] += count
            continue
        why = (
            f"per GiB-month of its type: GKE's default boot disk, {gib} GiB of pd-balanced where the machine takes"
            f" it, else hyperdisk-balanced, and which one {machine} takes was not reached"
        )
        extras.append(per_hour(f"boot disks of {count} {machine} nodes", "gke-boot-disk", count, f"{count}", why))
    why = "per GiB-month provisioned: GKE's default boot disk (the stack sets none)"
    priced = [
        per_month(f"boot disks of {count} nodes: {disk}, {gib} GiB each", f"gce-{disk}", count, gib, why)
        for disk, count in sorted(by_disk.items(), key=lambda x: x[0] != "pd-balanced")
    ]
    if hyperdisks := by_disk["hyperdisk-balanced"]:
        iops, mibps = cluster_extras.HYPERDISK_INCLUDED_IOPS, cluster_extras.HYPERDISK_INCLUDED_MIBPS
        what = f"the {hyperdisks} hyperdisk-balanced boot disks' IOPS and throughput above the included"
        why = (
            f"per IOPS-month and MiB/s-month provisioned above {iops:,} IOPS and {mibps} MiB/s; Compute Engine's"
            " defaults for a disk created without them were not reached"
        )
        priced.append(per_hour(what, "gce-hyperdisk-performance", hyperdisks, f"{hyperdisks}", why))
    return priced + extras


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
    network_policy_enforcer="Dataplane V2",
    image_streaming=True,
    proxy_subnet=True,
    mirror=mirror,
    unmirrored=unmirrored,
    bill=bill,
)
