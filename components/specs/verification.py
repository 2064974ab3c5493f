"""The verification Job `pulumi up` waits on: the project's script in a ConfigMap, run with a pinned image."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from components.catalog import labels
from components.manifest import Manifest
from components.specs.workload_type import WorkloadType

WORKLOAD = WorkloadType("llmd:verification:VerificationJob", "verification")

NAME = "verify-offload"
SCRIPT = Path(__file__).resolve().parents[1] / "verification" / "verify_offload.py"
# Not the guide label: the InferencePool selects on it, and the EPP would route requests to this pod.
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": labels.GUIDE}


@dataclass(frozen=True)
class VerificationSpec:
    namespace: str
    image: str
    model: str
    router_url: str
    selector: dict[str, str]
    check: str  # a key of the script's GATES: the connector's `verification_check`
    shared_tier: bool
    requests: int


def _container(spec: VerificationSpec) -> Manifest:
    """The script's container: what it checks comes in as environment variables."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(spec.selector.items()))
    env = {
        "MODEL": spec.model,
        "ROUTER_URL": spec.router_url,
        "CHECK": spec.check,
        "SHARED_TIER": "true" if spec.shared_tier else "false",
        "REQUESTS": str(spec.requests),
        "PORT": str(labels.MODEL_SERVER_PORT),
        "SELECTOR": selector,
    }
    return {
        "name": "verify",
        "image": spec.image,
        "command": ["python3", f"/verify/{SCRIPT.name}"],
        "env": [
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            *({"name": k, "value": v} for k, v in env.items()),
        ],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [{"name": "script", "mountPath": "/verify", "readOnly": True}],
        "securityContext": {"runAsUser": 65534},  # nobody; hardened below
    }


def verification_manifests(spec: VerificationSpec) -> list[Manifest]:
    meta = {"namespace": spec.namespace, "labels": LABELS}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta, "name": f"{NAME}-script"},
            "data": {SCRIPT.name: SCRIPT.read_text(encoding="utf-8")},
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "name": NAME}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {**meta, "name": NAME},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {**meta, "name": NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": spec.namespace}],
        },
        {  # its pods list the model-server pods (the Role above): the workload keeps their token (`api_access`)
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {**meta, "name": NAME},
            "spec": {
                "backoffLimit": 1,
                "activeDeadlineSeconds": 3600,
                "template": {
                    "metadata": {"labels": LABELS},
                    "spec": {
                        "serviceAccountName": NAME,
                        "restartPolicy": "Never",
                        "containers": [_container(spec)],
                        "volumes": [{"name": "script", "configMap": {"name": f"{NAME}-script"}}],
                    },
                },
            },
        },
    ]
