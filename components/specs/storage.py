"""StorageClasses and volumes of the created filesystem-tier backends (GCP Managed Lustre, AWS EFS).

Values that exist only once the cloud resources do (an instance's IP, a file system's id) are
passed in, as plain values or Pulumi outputs alike.
"""

from __future__ import annotations

from typing import Any

from components.catalog import labels
from components.catalog.storage_backends import AWS_EFS, GCP_LUSTRE
from components.manifest import Manifest
from components.specs.workload_type import WorkloadType

WORKLOAD = WorkloadType("llmd:storage:SharedStorage", "storage")  # the filesystem tier's shared claim

LUSTRE_CLASS, EFS_CLASS = str(GCP_LUSTRE.storage_class), str(AWS_EFS.storage_class)  # their backends' records
LUSTRE_DRIVER, EFS_DRIVER = "lustre.csi.storage.gke.io", "efs.csi.aws.com"
LUSTRE_PORTS = ["988", "6988"]  # LNet; 6988 where the instance has GKE support enabled
EFS_CSI_SERVICE_ACCOUNT = ("kube-system", "efs-csi-controller-sa")
EFS_CSI_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"
NFS_PORT = 2049


def lustre_storage_class(network: Any, zone: str, throughput: int) -> Manifest:
    """The guide's `lustre-class` (dynamic provisioning for further claims; ours binds a managed instance)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": LUSTRE_CLASS, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
        "provisioner": LUSTRE_DRIVER,
        "volumeBindingMode": "Immediate",
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": True,
        "parameters": {"network": network, "perUnitStorageThroughput": str(throughput)},
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.gke.io/zone", "values": [zone]}]}],
    }


def lustre_volume_handle(project: str, zone: str, instance_id: str) -> str:
    return f"{project}/{zone}/{instance_id}"


def lustre_volume(
    name: str, volume_handle: Any, ip: Any, filesystem: str, size: str, claim: tuple[str, str]
) -> Manifest:
    """The Pulumi-managed Lustre instance's volume, reserved for the tier's claim."""
    csi = {
        "driver": LUSTRE_DRIVER,
        "volumeHandle": volume_handle,
        "volumeAttributes": {"ip": ip, "filesystem": filesystem},
    }
    return reserved_volume(name, LUSTRE_CLASS, csi, size, claim)


def reserved_volume(name: str, storage_class: str, csi: Manifest, size: str, claim: tuple[str, str]) -> Manifest:
    """A PersistentVolume for a file system the stack created (its CSI driver, handle and attributes), reserved for
    the tier's claim: a backend whose volume binds one claim (`one_claim_per_volume`).

    Retain: the file system's lifecycle is Pulumi's; deleting the claim must not delete it.
    """
    namespace, claim_name = claim
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": storage_class,
            "claimRef": {"namespace": namespace, "name": claim_name},
            "csi": csi,
        },
    }


def efs_storage_class(file_system_id: Any) -> Manifest:
    """The guide's `efs-sc`: one access point per claim, under /dynamic_provisioning."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": EFS_CLASS, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
        "provisioner": EFS_DRIVER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
        "parameters": {
            "provisioningMode": "efs-ap",
            "fileSystemId": file_system_id,
            "directoryPerms": "700",
            "basePath": "/dynamic_provisioning",
            "gidRangeStart": "1000",
            "gidRangeEnd": "2000",
        },
    }
