"""The filesystem tier's evictor: the project's script in a ConfigMap, run by a one-replica Deployment with the
pinned Python image the project's other scripts use (the model fetch, the verification Job).

llm-d-kv-cache's reference PVC evictor has no pinned, official image (docs/upstream-differences.md, Filesystem tier
and Mooncake, says where upstream stands), so the stack runs its own (`components/tier_evictor/`: `evict_tier.py` and
the tree walk it imports, `tier_scan.py`; stdlib only), from its ConfigMap laid out as the package it is in this
repository.

It mounts the claim where the model servers do, with the tier's subPath beside the model cache (so it never
sees the weights or the compile caches), and runs as the model servers' user: the `shared-tier-writer`
exemption (components/specs/security.py) names every container mounting the tier, root with every
capability dropped, so it may delete what they wrote and nothing it does not own. On EFS the access point
enforces one identity for every client anyway.

Which timestamp it orders by, per backend:
- Lustre (`atime`): the later of atime and mtime. The MDS keeps a read's atime when it is at least
  `atime_diff` (60 s by default) newer than the stored one, and the kernel's default relatime always lets
  the first read after a write through: a block read since it was written ranks after one never read.
- EFS (`mtime`): EFS does not update a file's access time on reads (AWS EFS user guide, "Unsupported NFSv4
  features": it updates time_access only on create, setattr and writes), so only the write is known: the
  order is the blocks' age, first in first out.
- an existing StorageClass (`atime`): the later of the two is never worse than mtime alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from components.catalog import labels
from components.manifest import Container, Manifest, PodSpec, plain, recreated_deployment
from components.specs.workload_type import WorkloadType

WORKLOAD = WorkloadType("llmd:tier_evictor:TierEvictor", "tier-evictor")

NAME = labels.TIER_EVICTOR
PACKAGE = Path(__file__).resolve().parents[1] / "tier_evictor"
SCRIPT = PACKAGE / "evict_tier.py"
# What the ConfigMap carries, by its path under components/ (the script imports the others).
MODULES = {
    "tier_evictor/evict_tier.py": SCRIPT,
    "tier_evictor/tier_scan.py": PACKAGE / "tier_scan.py",
    "exporters/prometheus_text.py": PACKAGE.parent / "exporters" / "prometheus_text.py",
}
SCRIPT_ROOT = "/evictor"  # the ConfigMap's mount: components/<path> under it
# Not the guide label: the InferencePool selects on it, and the EPP would route requests to this pod.
LABELS = {labels.WORKLOAD_LABEL: NAME, "app.kubernetes.io/part-of": labels.GUIDE}
METRICS_PORT = 9400
BASE_MEMORY = 64 * 2**20  # the interpreter, the HTTP server, one directory's entries
CANDIDATE_BYTES = 400  # one kept candidate (its path's components, its numbers, its heap entry), measured


def percent_text(fraction: float) -> str:
    """A watermark as the evictor's environment carries it: percent, whole where it is (`95`), else to ten
    significant digits (`95.4`, not the `95` a rounding would make of it)."""
    return f"{fraction * 100:.10g}"


def as_read(text: str) -> float:
    """The fraction the evictor reads from that text (evict_tier.Settings.from_env: float(...) / 100)."""
    return float(text) / 100


@dataclass(frozen=True)
class EvictorSpec:
    namespace: str
    image: str
    claim: str
    sub_path: str | None  # the tier's directory of the claim (beside the model cache), or the whole claim
    # The backend's (components/catalog/storage_backends.py): the timestamp it orders by, and where it reads the
    # usage (statvfs; or, where the file system is elastic and statfs reports exabytes, what each pass's scan counts
    # against `capacity_bytes`, the budget).
    timestamp: str
    usage: str
    high_percent: str  # percent_text: what the plan checked is what the evictor reads
    low_percent: str
    min_age_seconds: int
    poll_seconds: int
    max_candidates: int
    capacity_bytes: int
    # The namespaces the stack's servers write (components/specs/tier_namespace.py): the evictor reclaims every
    # other top-level directory of the tier first (what a former configuration wrote, which no server reads).
    live_namespaces: tuple[str, ...] = ()

    @property
    def memory(self) -> int:
        """Its limit: the candidates a pass keeps, and the interpreter (rounded up to MiB)."""
        need = BASE_MEMORY + 2 * CANDIDATE_BYTES * self.max_candidates
        return -(-need // 2**20) * 2**20


def claim_label(managed: bool) -> dict[str, str]:
    """What the tier's claim says of its capacity (the policy rule reads it)."""
    return {labels.CAPACITY_LABEL: NAME if managed else "off"}


def _container(spec: EvictorSpec) -> Container:
    env = {
        "TIER_DIR": labels.FILES_STORAGE_MOUNT,
        "HIGH_WATERMARK_PERCENT": spec.high_percent,
        "LOW_WATERMARK_PERCENT": spec.low_percent,
        "MIN_AGE_SECONDS": str(spec.min_age_seconds),
        "POLL_SECONDS": str(spec.poll_seconds),
        "MAX_CANDIDATES": str(spec.max_candidates),
        "TIMESTAMP": spec.timestamp,
        "USAGE": spec.usage,
        "CAPACITY_BYTES": str(spec.capacity_bytes),
        "LIVE_NAMESPACES": ",".join(spec.live_namespaces),
        "METRICS_PORT": str(METRICS_PORT),
        "PYTHONUNBUFFERED": "1",
    }
    mount: Manifest = {"name": "files-storage", "mountPath": labels.FILES_STORAGE_MOUNT}
    if spec.sub_path:
        mount["subPath"] = spec.sub_path
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 30}
    memory = f"{spec.memory // 2**20}Mi"
    return {
        "name": NAME,
        "image": spec.image,
        "command": ["python3", "-m", f"components.tier_evictor.{SCRIPT.stem}"],
        "workingDir": SCRIPT_ROOT,  # `-m` imports the package from here
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "readinessProbe": probe,
        "livenessProbe": {**probe, "failureThreshold": 4},
        "resources": {"requests": {"cpu": "100m", "memory": memory}, "limits": {"memory": memory}},
        "volumeMounts": [{"name": "script", "mountPath": SCRIPT_ROOT, "readOnly": True}, mount],
    }


def evictor_manifests(spec: EvictorSpec) -> list[Manifest]:
    """The script's ConfigMap and one replica (Recreate: two evictors at once would race for the same files)."""
    pod: PodSpec = {
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 30,
        "containers": [_container(spec)],
        "volumes": [
            {
                "name": "script",
                "configMap": {
                    "name": f"{NAME}-script",
                    "items": [{"key": Path(path).name, "path": f"components/{path}"} for path in MODULES],
                },
            },
            {"name": "files-storage", "persistentVolumeClaim": {"claimName": spec.claim}},
        ],
    }
    deployment = recreated_deployment(spec.namespace, NAME, LABELS, pod)
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": spec.namespace, "labels": dict(LABELS), "name": f"{NAME}-script"},
            "data": {Path(path).name: module.read_text(encoding="utf-8") for path, module in MODULES.items()},
        },
        plain(deployment),
    ]
