"""Mooncake Master (metadata service) and Mooncake Client (DRAM + SSD pool owner) in namespace `mooncake`."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from components.catalog import labels, versions
from components.manifest import Container, Deployment, Manifest, ObjectMeta, PodSpec, Service, plain
from components.specs import security
from components.specs.workload_type import WorkloadType
from components.units import ByteSize, GiB

MASTER_WORKLOAD = WorkloadType("llmd:mooncake:MooncakeMaster", "mooncake-master")
CLIENT_WORKLOAD = WorkloadType("llmd:mooncake:MooncakeClient", "mooncake-client")

NAMESPACE = "mooncake"
MASTER = "mooncake-master-store"
CLIENT = "mooncake-client"
RPC_PORT, METADATA_PORT, METRICS_PORT, CLIENT_PORT = 50051, 8080, 9003, 50052
OFFLOAD_DIR = "/data/mooncake-offload"
HOST_OFFLOAD_DIR = "/mnt/mooncake-offload"  # the client's SSD tier on its node (the one hostPath of the stack)
MASTER_ADDRESS = f"{MASTER}.{NAMESPACE}.svc.cluster.local:{RPC_PORT}"
# Mooncake Client: /dev/shm, and the memory limit's margin over the request (the guide's 82Gi / 84Gi).
MOONCAKE_CLIENT_SHM = ByteSize(2 * GiB)


def mooncake_text(size: ByteSize) -> str:
    """Mooncake's size strings ("80GB", read as GiB); sizes must be whole GiB."""
    if size.bytes % GiB:
        raise ValueError(f"{size.human()} is not a whole number of GiB, which Mooncake sizes must be")
    return f"{size.bytes // GiB}GB"


@dataclass(frozen=True)
class MooncakeClientSizing:
    nodes: int
    dram: ByteSize
    ssd: ByteSize
    memory_request: ByteSize
    memory_limit: ByteSize


def mooncake_client(dram: ByteSize, ssd: ByteSize, nodes: int) -> MooncakeClientSizing:
    request = (dram + MOONCAKE_CLIENT_SHM).ceil_to(GiB)
    return MooncakeClientSizing(nodes, dram, ssd, request, request + MOONCAKE_CLIENT_SHM)


def _labels(name: str, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "mooncake",
    }


MASTER_LABELS = _labels(MASTER, "master-store")
CLIENT_LABELS = _labels(CLIENT, "client")

MASTER_CONFIG = {
    "rpc_port": RPC_PORT,
    "rpc_thread_num": 4,
    "rpc_address": "0.0.0.0",
    "enable_metric_reporting": True,
    "metrics_port": METRICS_PORT,
    "enable_http_metadata_server": True,
    "http_metadata_server_host": "0.0.0.0",
    "http_metadata_server_port": METADATA_PORT,
    "default_kv_lease_ttl": 5000,
    "default_kv_soft_pin_ttl": 1800000,
    "allow_evict_soft_pinned_objects": True,
    "eviction_ratio": 0.05,
    "eviction_high_watermark_ratio": 0.95,
    "memory_allocator": "offset",
    "allocation_strategy": "random",
    "cluster_id": "mooncake_cluster",
    "root_fs_dir": OFFLOAD_DIR,
    "enable_snapshot": True,
    "snapshot_interval_seconds": 60,
    "snapshot_retention_count": 3,
    "snapshot_object_store_type": "local",
}


def _meta(name: str, labels: dict[str, str]) -> ObjectMeta:
    return {"name": name, "namespace": NAMESPACE, "labels": labels}


def namespace() -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/part-of": "mooncake"}},
    }


def master_manifests() -> list[Manifest]:
    return _master_manifests()


def _master_container() -> Container:
    tcp = {"tcpSocket": {"port": "rpc"}}
    return {
        "name": "master",
        "image": versions.MOONCAKE_IMAGE,
        "command": ["mooncake_master"],
        "args": ["--config_path=/etc/mooncake/master.yaml", "--enable_offload"],
        "env": [{"name": "MOONCAKE_SNAPSHOT_LOCAL_PATH", "value": "/data/snapshots"}],
        "ports": [
            {"name": "rpc", "containerPort": RPC_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "metadata", "containerPort": METADATA_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": {**tcp, "initialDelaySeconds": 5, "periodSeconds": 10},
        "livenessProbe": {**tcp, "initialDelaySeconds": 10, "periodSeconds": 15},
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/mooncake", "readOnly": True},
            {"name": "snapshots", "mountPath": "/data/snapshots"},
        ],
    }


def _master_manifests() -> list[Manifest]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(f"{MASTER}-config", MASTER_LABELS),
            "data": {"master.yaml": yaml.safe_dump(MASTER_CONFIG, sort_keys=False)},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": _meta(f"{MASTER}-snapshots", MASTER_LABELS),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}},
        },
        plain(_master_service()),
        plain(_master_deployment()),
    ]


def _master_service() -> Service:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(MASTER, MASTER_LABELS),
        "spec": {
            "type": "ClusterIP",
            "selector": MASTER_LABELS,
            "ports": [
                {"name": "rpc", "port": RPC_PORT, "targetPort": "rpc", "protocol": "TCP"},
                {"name": "metadata", "port": METADATA_PORT, "targetPort": "metadata", "protocol": "TCP"},
                {"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"},
            ],
        },
    }


def _master_deployment() -> Deployment:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(MASTER, MASTER_LABELS),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},  # one master owns the snapshot volume
            "selector": {"matchLabels": MASTER_LABELS},
            "template": {
                "metadata": {
                    "labels": MASTER_LABELS,
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(METRICS_PORT),
                        "prometheus.io/path": "/metrics",
                    },
                },
                "spec": {
                    # the non-root master writes its snapshots: the volume is given to its group
                    "securityContext": {"fsGroup": security.NON_ROOT_UID},
                    "containers": [_master_container()],
                    "volumes": [
                        {"name": "config", "configMap": {"name": f"{MASTER}-config"}},
                        {"name": "snapshots", "persistentVolumeClaim": {"claimName": f"{MASTER}-snapshots"}},
                    ],
                },
            },
        },
    }


def offload_dir(tier_namespace: str) -> str:
    """The client's SSD tier on its node: the stack's namespace of the offload directory."""
    return f"{HOST_OFFLOAD_DIR}/{tier_namespace}"


def client_manifests(sizing: MooncakeClientSizing, tier_namespace: str) -> list[Manifest]:
    """One client per node: it registers `dram` of CPU memory and `ssd` of local disk with the master. The plan
    places it beside the model servers (`prepull.placed`). Its SSD tier persists on the node: the stack's
    namespace of it (components/specs/tier_namespace.py) is what the client mounts, so a configuration that
    writes other KV starts on an empty directory."""
    return _client_manifests(sizing, tier_namespace)


def _client_container(sizing: MooncakeClientSizing) -> Container:
    args = [
        f"--master_server_address={MASTER_ADDRESS}",
        "--host=$(POD_IP)",
        f"--port={CLIENT_PORT}",
        "--protocol=rdma",
        f"--global_segment_size={mooncake_text(sizing.dram)}",
        "--enable_offload=true",  # must match the master's --enable_offload and the vLLM config
        "--metadata_server=P2PHANDSHAKE",
    ]
    tcp = {"tcpSocket": {"port": "rpc"}}
    return {
        "name": "client",
        "image": versions.MOONCAKE_IMAGE,
        "command": ["mooncake_client"],
        "args": args,
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", "value": OFFLOAD_DIR},
            {"name": "MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR", "value": "bucket_storage_backend"},
            {"name": "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "value": str(sizing.ssd.bytes)},
        ],
        "ports": [{"name": "rpc", "containerPort": CLIENT_PORT, "protocol": "TCP"}],
        "readinessProbe": {**tcp, "initialDelaySeconds": 5, "periodSeconds": 10},
        "livenessProbe": {**tcp, "initialDelaySeconds": 10, "periodSeconds": 15},
        "resources": {
            "requests": {"cpu": "2", "memory": sizing.memory_request.quantity(), "rdma/ib": "1"},
            "limits": {"cpu": "4", "memory": sizing.memory_limit.quantity(), "rdma/ib": "1"},
        },
        "volumeMounts": [{"name": "offload", "mountPath": OFFLOAD_DIR}, {"name": "dshm", "mountPath": "/dev/shm"}],
    }


def _client_manifests(sizing: MooncakeClientSizing, tier_namespace: str) -> list[Manifest]:
    pod: PodSpec = {
        "terminationGracePeriodSeconds": 30,
        "containers": [_client_container(sizing)],
        "volumes": [
            # DirectoryOrCreate: the kubelet creates the path with its parents (0755, its own owner).
            {"name": "offload", "hostPath": {"path": offload_dir(tier_namespace), "type": "DirectoryOrCreate"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": MOONCAKE_CLIENT_SHM.quantity()}},
        ],
    }
    service: Service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(CLIENT, CLIENT_LABELS),
        "spec": {
            "clusterIP": "None",
            "selector": CLIENT_LABELS,
            "ports": [{"name": "rpc", "port": CLIENT_PORT, "targetPort": "rpc", "protocol": "TCP"}],
        },
    }
    return [
        plain(service),
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            # The DRAM pool share each client holds, as the model servers' workloads say theirs (the policy rule
            # `memory-limit-covers-tier` reads it).
            "metadata": {
                **_meta(CLIENT, CLIENT_LABELS),
                "annotations": {labels.CPU_TIER_BYTES_ANNOTATION: str(sizing.dram.bytes)},
            },
            "spec": {
                "selector": {"matchLabels": CLIENT_LABELS},
                "template": {"metadata": {"labels": CLIENT_LABELS}, "spec": pod},
            },
        },
    ]
