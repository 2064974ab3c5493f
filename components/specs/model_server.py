"""The model-server Deployment and ServiceAccount as Kubernetes manifests (plain dicts, camelCase)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.catalog import labels
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.specs.sizing import TierSizing

Manifest = dict[str, Any]

# Probe timings of the guide's model-server patches (a 32B model can take most of an hour to load).
STARTUP_PROBE = {"initialDelaySeconds": 15, "periodSeconds": 30, "timeoutSeconds": 5, "failureThreshold": 120}
LIVENESS_PROBE = {"periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3}
READINESS_PROBE = {"periodSeconds": 5, "timeoutSeconds": 2, "failureThreshold": 3}
# vLLM drains in-flight requests on SIGTERM; the router's EPP uses the same grace period.
TERMINATION_GRACE_SECONDS = 130
CPU_REQUEST, CPU_LIMIT = "8", "16"
# Writable caches vLLM, torch.compile and Triton expect in the (non-root) home directory.
CACHE_MOUNTS = (("torch-compile-cache", "/.cache"), ("triton-cache", "/.triton"), ("vllm-config", "/.config"))


@dataclass(frozen=True)
class Scheduling:
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ModelServerSpec:
    """Everything one model-server Deployment is rendered from."""

    namespace: str
    accelerator: AcceleratorProfile
    server: str
    model: ModelSpec
    replicas: int
    tensor_parallelism: int
    image: str
    sizing: TierSizing
    kv_transfer_config: str
    scheduling: Scheduling = Scheduling()
    role: str = "decode"

    @property
    def name_prefix(self) -> str:
        return f"{self.accelerator.key}-{self.server}"

    @property
    def deployment_name(self) -> str:
        return f"{self.name_prefix}-{self.role}"

    @property
    def service_account_name(self) -> str:
        return f"{self.name_prefix}-sa"

    @property
    def pod_labels(self) -> dict[str, str]:
        return {
            labels.GUIDE_LABEL: labels.GUIDE,
            labels.MODEL_LABEL: self.model.short_name,
            labels.ACCELERATOR_VARIANT_LABEL: self.accelerator.variant,
            labels.ACCELERATOR_VENDOR_LABEL: self.accelerator.vendor,
            labels.ROLE_LABEL: self.role,
        }


def router_selector() -> dict[str, str]:
    """The labels the router (and its InferencePool) select model servers by: a subset of every pod's labels."""
    return {labels.GUIDE_LABEL: labels.GUIDE}


def vllm_args(spec: ModelServerSpec) -> list[str]:
    return [
        spec.model.name,
        f"--port={labels.MODEL_SERVER_PORT}",
        f"--tensor-parallel-size={spec.tensor_parallelism}",
        "--kv-transfer-config",
        spec.kv_transfer_config,
    ]


def vllm_env() -> list[Manifest]:
    return [
        {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": labels.HF_TOKEN_SECRET, "key": labels.HF_TOKEN_KEY}},
        },
        # vLLM v0.26 with torch 2.11 needs a user name when running as a UID without a passwd entry
        # (vllm-project/vllm#44548); upstream's release image component appends it.
        {"name": "USER", "value": "llm-d"},
    ]


def _http_probe(path: str, timings: dict[str, int]) -> Manifest:
    return {"httpGet": {"path": path, "port": labels.MODEL_SERVER_PORT_NAME}, **timings}


def _resources(spec: ModelServerSpec) -> Manifest:
    memory = spec.sizing.pod_memory.quantity()
    devices = {spec.accelerator.device_resource: spec.tensor_parallelism}
    return {
        "requests": {"cpu": CPU_REQUEST, "memory": memory, **devices},
        "limits": {"cpu": CPU_LIMIT, "memory": memory, **devices},
    }


def _volumes(spec: ModelServerSpec) -> tuple[list[Manifest], list[Manifest]]:
    volumes: list[Manifest] = [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": spec.sizing.shm_size_limit.quantity()}}
    ]
    mounts: list[Manifest] = [{"name": "shm", "mountPath": "/dev/shm"}]
    for name, path in CACHE_MOUNTS:
        volumes.append({"name": name, "emptyDir": {}})
        mounts.append({"name": name, "mountPath": path})
    return volumes, mounts


def pod_spec(spec: ModelServerSpec) -> Manifest:
    volumes, mounts = _volumes(spec)
    container: Manifest = {
        "name": "modelserver",
        "image": spec.image,
        "command": ["vllm", "serve"],
        "args": vllm_args(spec),
        "env": vllm_env(),
        "ports": [
            {"name": labels.MODEL_SERVER_PORT_NAME, "containerPort": labels.MODEL_SERVER_PORT, "protocol": "TCP"}
        ],
        "startupProbe": _http_probe("/v1/models", STARTUP_PROBE),
        "livenessProbe": _http_probe("/health", LIVENESS_PROBE),
        "readinessProbe": _http_probe("/v1/models", READINESS_PROBE),
        "resources": _resources(spec),
        "volumeMounts": mounts,
    }
    pod: Manifest = {
        "serviceAccountName": spec.service_account_name,
        "restartPolicy": "Always",
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "containers": [container],
        "volumes": volumes,
    }
    if spec.scheduling.node_selector:
        pod["nodeSelector"] = dict(spec.scheduling.node_selector)
    if spec.scheduling.tolerations:
        pod["tolerations"] = list(spec.scheduling.tolerations)
    return pod


def deployment(spec: ModelServerSpec) -> Manifest:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": spec.deployment_name, "namespace": spec.namespace, "labels": spec.pod_labels},
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": spec.pod_labels},
            "template": {"metadata": {"labels": spec.pod_labels}, "spec": pod_spec(spec)},
        },
    }


def service_account(spec: ModelServerSpec) -> Manifest:
    """Model servers never call the Kubernetes API, so no token is mounted."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": spec.service_account_name, "namespace": spec.namespace, "labels": spec.pod_labels},
        "automountServiceAccountToken": False,
    }
