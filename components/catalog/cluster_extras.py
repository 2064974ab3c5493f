"""What a created cluster holds besides its machines that the clouds bill by the hour, and the facts the cost counts
them by: Cloud NAT's per-VM tiers and its addresses (GKE), the NAT gateway and its Elastic IP (EKS), and the disk
each node boots from. The stacks set no boot disk (components/specs/gke_cluster.py, eks_cluster.py) and no NAT port
settings (components/cluster/gke.py), so each cloud's default applies; each figure names its source. The providers'
bills count them (stacks/config/providers/gke_provider.py, eks_provider.py); their prices are rows of prices.py.
"""

from __future__ import annotations

from typing import Literal

# Cloud NAT (cloud.google.com/nat/pricing): a gateway serving up to 32 VMs is billed per VM-hour; above 32, one
# capped rate per gateway-hour.
NAT_VM_TIER_CAP = 32
# Cloud NAT's automatic address allocation (docs.cloud.google.com/nat/docs/ports-and-addresses): each address has
# 64,512 source ports (1024-65535) and, with static port allocation (the default: the stack sets neither
# min_ports_per_vm nor dynamic allocation), each VM is given 64 of them.
NAT_PORTS_PER_ADDRESS = 64_512
NAT_MIN_PORTS_PER_VM = 64

# A GKE node's boot disk without a size: 100 GB (NodeConfig disk_size_gb's default, pulumi-gcp 10.2.0 and the GKE
# API); Compute Engine sizes and bills disks in binary GB (GiB, cloud.google.com/compute/disks-image-pricing).
GKE_BOOT_DISK_GIB = 100
GkeBootDisk = Literal["pd-balanced", "hyperdisk-balanced"]
# Without a type GKE gives a node pd-balanced, or hyperdisk-balanced where the machine type cannot take pd-balanced
# (NodeConfig disk_type's default, pulumi-gcp 10.2.0). Machine types here cannot: TPU v6e supports Hyperdisk Balanced
# and Hyperdisk ML only (cloud.google.com/tpu/docs/setup-persistent-disk, its disk table).
GKE_HYPERDISK_ONLY: frozenset[str] = frozenset({"ct6e-standard-8t"})
# Machine types whose disk support was not reached: their boot disk is named unpriced, not guessed. TPU7x (Ironwood)
# is not in Cloud TPU's disk table.
GKE_BOOT_DISK_UNKNOWN: frozenset[str] = frozenset({"tpu7x-standard-4t"})
# Hyperdisk Balanced includes 3,000 IOPS and 140 MiB/s; the volume's provisioned performance above them is billed
# (cloud.google.com/compute/docs/disks/hd-types/hyperdisk-balanced). Compute Engine's defaults for a volume created
# without them (a GKE boot disk) were not reached, so that part is named unpriced.
HYPERDISK_INCLUDED_IOPS = 3_000
HYPERDISK_INCLUDED_MIBPS = 140


def gke_boot_disk(machine_type: str) -> GkeBootDisk | None:
    """The boot disk type GKE gives a node of `machine_type` without one (None: not reached)."""
    if machine_type in GKE_BOOT_DISK_UNKNOWN:
        return None
    return "hyperdisk-balanced" if machine_type in GKE_HYPERDISK_ONLY else "pd-balanced"


# EKS (components/cluster/eks.py): one NAT gateway, in the first zone's public subnet, with one Elastic IP; AWS bills
# every public IPv4 address by the hour since 2024-02-01, an Elastic IP included.
EKS_NAT_GATEWAYS = 1
EKS_NAT_ADDRESSES = 1  # the gateway's Elastic IP

# A node group's root volume: 20 GiB either way. Without a launch template of ours, EKS's own template applies its
# diskSize default (20 GiB, the EKS CreateNodegroup API) on gp2 (github.com/aws/containers-roadmap/issues/1417, open:
# EKS-created templates give managed nodes gp2). With ours (components/specs/eks_cluster.py `takes_launch_template`,
# no block device mappings), the AMI's own root mapping applies: 20 GiB gp3 (github.com/awslabs/amazon-eks-ami
# templates/al2023/template.json `ami_block_device_mappings`, `volume_type` gp3 in variables-default.json, commit
# 81fec2e8).
EKS_ROOT_VOLUME_GIB = 20
EbsVolume = Literal["gp2", "gp3"]
EKS_OWN_TEMPLATE_VOLUME: EbsVolume = "gp2"
EKS_AMI_ROOT_VOLUME: EbsVolume = "gp3"
