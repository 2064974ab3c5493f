"""A GKE cluster's and its node pools' arguments, and its kubeconfig, as plain data (components/cluster/gke.py
passes them on)."""

from __future__ import annotations

from components.specs.clusters import POOL_LABEL, Args, PoolSpec, cloud_taints, kubeconfig
from components.specs.node_autoscaling import gke_autoscaling

# GKE image streaming reads images through the Container File System API, which must be enabled.
IMAGE_STREAMING_API = "containerfilesystem.googleapis.com"

SHIELDED = {"enable_secure_boot": True, "enable_integrity_monitoring": True}


def gke_cluster_args(
    name: str,
    project: str,
    region: str,
    network: str,
    subnetwork: str | None,
    release_channel: str,
    master_cidr: str,
    lustre: bool,
    deletion_protection: bool,
) -> Args:
    """A regional cluster: private nodes, Workload Identity, Gateway API, Managed Prometheus, and the
    Managed Lustre CSI driver when the Lustre tier is on. Its default pool is replaced by ours.

    Dataplane V2 enforces the stack's NetworkPolicies. It is on whatever `network_policies.enabled` says:
    the datapath is fixed at creation, so tying it to that switch would replace the cluster on a toggle."""
    return {
        "name": name,
        "project": project,
        "location": region,
        "network": network,
        "subnetwork": subnetwork,
        "release_channel": {"channel": release_channel},
        "remove_default_node_pool": True,
        "initial_node_count": 1,
        "deletion_protection": deletion_protection,
        "networking_mode": "VPC_NATIVE",
        "datapath_provider": "ADVANCED_DATAPATH",
        "ip_allocation_policy": {},
        "private_cluster_config": {
            "enable_private_nodes": True,
            "enable_private_endpoint": False,
            "master_ipv4_cidr_block": master_cidr,
        },
        "workload_identity_config": {"workload_pool": f"{project}.svc.id.goog"},
        "enable_shielded_nodes": True,
        "gateway_api_config": {"channel": "CHANNEL_STANDARD"},
        "monitoring_config": {
            "enable_components": ["SYSTEM_COMPONENTS"],
            "managed_prometheus": {"enabled": True},
        },
        "addons_config": {"lustre_csi_driver_config": {"enabled": lustre}},
        "node_config": {"shielded_instance_config": SHIELDED},
    }


def _gke_node_config(machine_type: str, labels: dict[str, str], spot: bool, reservation: str | None) -> Args:
    config: Args = {
        "machine_type": machine_type,
        "labels": labels,
        "spot": spot,
        "shielded_instance_config": SHIELDED,
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    if reservation:
        config["reservation_affinity"] = {
            "consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": [reservation],
        }
    return config


def gke_system_pool_args(name: str, region: str, machine_type: str, node_count: int) -> Args:
    return {
        "name": name,
        "location": region,
        "node_count": node_count,
        "management": {"auto_repair": True, "auto_upgrade": True},
        "node_config": _gke_node_config(machine_type, {POOL_LABEL: "system"}, False, None),
    }


def gke_accelerator_pool_args(pool: PoolSpec, region: str, zone: str) -> Args:
    node_config = _gke_node_config(pool.machine.key, pool.node_labels, pool.spot, pool.reservation)
    if pool.taints:
        node_config["taints"] = cloud_taints(pool.taints)
    if pool.machine.gke_accelerator:  # GPUs: GKE installs and manages the driver
        node_config["guest_accelerators"] = [
            {
                "type": pool.machine.gke_accelerator,
                "count": pool.machine.devices_per_node,
                "gpu_driver_installation_config": {"gpu_driver_version": "LATEST"},
            }
        ]
        node_config["gvnic"] = {"enabled": True}
    if pool.image_streaming:  # images from the stack's Artifact Registry mirror start before they are pulled
        node_config["gcfs_config"] = {"enabled": True}
    args: Args = {
        "name": pool.name,
        "location": region,
        "node_locations": [zone],  # accelerators are zonal
        **(
            {"initial_node_count": pool.bounds.initial_nodes, "autoscaling": gke_autoscaling(pool.bounds)}
            if pool.bounds
            else {"node_count": pool.node_count}
        ),
        "management": {"auto_repair": True, "auto_upgrade": True},
        "node_config": node_config,
    }
    topology = pool.tpu_topology or pool.machine.tpu_topology
    if topology:  # a TPU slice: hosts placed together in the topology the pods select
        args["placement_policy"] = {"type": "COMPACT", "tpu_topology": topology}
    return args


def gke_kubeconfig(name: str, endpoint: str | None, ca_certificate: str | None) -> str:
    """Authenticates through gke-gcloud-auth-plugin (Application Default Credentials)."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
        }
    }
    return kubeconfig(name, f"https://{endpoint}", ca_certificate, user)
