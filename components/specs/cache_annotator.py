"""The cache-value annotator: the project's script in a ConfigMap (components/cache_annotator/ and the victim
order it writes for, components/formulas/victims.py), run by a one-replica Deployment with the pinned Python image
the project's other scripts use, as the tier evictor is.

Every interval it reads each model-server pod's recent cache value from the engine's own counters and writes it,
ranked, as the pod's `controller.kubernetes.io/pod-deletion-cost`: a scale-in (KEDA's HPA lowering the Deployment's
replicas) then removes the pod whose caches served least instead of the newest. Least privilege: its
ServiceAccount's Role grants get, list and patch on the pods of its own namespace and nothing else
(`labels.CACHE_ANNOTATOR_POD_VERBS`; the policy rule `annotator-least-privilege` refuses more); its token is the only
one it mounts (the hardening pass leaves a token only where a workload calls the API); its egress reaches the
model servers' metrics port and the API server only, its ingress the scraper on its own metrics port.

Its settings, each derived (stacks/planning/scale_in.py): the interval is the HPA's sync period (a scale-in is
decided at most that often, so the costs are at most one decision old); the window the HPA's scale-down
stabilization window (what the HPA looked back over before it removed a pod); a scrape's timeout a third of the
interval (the list and the writes get the rest); at most every pod the workloads can run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from components.catalog import labels
from components.manifest import Container, Manifest, PodSpec, plain, recreated_deployment
from components.specs import network
from components.specs.workload_type import WorkloadType

WORKLOAD = WorkloadType("llmd:cache_annotator:CacheAnnotator", "cache-annotator")

NAME = labels.CACHE_ANNOTATOR
PACKAGE = Path(__file__).resolve().parents[1] / "cache_annotator"
SCRIPT = PACKAGE / "annotate_pods.py"
# What the ConfigMap carries, by its path under components/ (the script imports the others).
MODULES = {
    "cache_annotator/annotate_pods.py": SCRIPT,
    "cache_annotator/cache_value.py": PACKAGE / "cache_value.py",
    "formulas/victims.py": PACKAGE.parent / "formulas" / "victims.py",
    "exporters/prometheus_text.py": PACKAGE.parent / "exporters" / "prometheus_text.py",
}
SCRIPT_ROOT = "/annotator"  # the ConfigMap's mount: components/<path> under it
# Not the guide label: the InferencePool selects on it, and the EPP would route requests to this pod.
LABELS = {labels.WORKLOAD_LABEL: NAME, "app.kubernetes.io/part-of": labels.GUIDE}
METRICS_PORT = 9401
MAX_WORKERS = 32  # scrapes at once
MAX_SCRAPE_BYTES = 4 * 2**20  # a scrape read no further (vLLM's /metrics is some 100 KiB)
BASE_MEMORY = 64 * 2**20  # the interpreter, its HTTP server, the windows' samples


@dataclass(frozen=True)
class AnnotatorSpec:
    namespace: str
    image: str
    selector: dict[str, str]  # the model-server pods, every role
    servers_port: int  # where the model servers serve /metrics
    hbm_counter: str  # sample selectors (components/specs/metric_family.py CacheValue)
    tier_counter: str | None  # None: the tier outlives the pod (pooled), or there is none
    interval_s: int
    window_s: int
    scrape_timeout_s: int
    max_pods: int

    @property
    def memory(self) -> int:
        """Its limit: the interpreter and every scrape at once (bytes and their text), rounded up to MiB."""
        need = BASE_MEMORY + 2 * min(self.max_pods, MAX_WORKERS) * MAX_SCRAPE_BYTES
        return -(-need // 2**20) * 2**20


def _container(spec: AnnotatorSpec) -> Container:
    env = {
        "SELECTOR": ",".join(f"{k}={v}" for k, v in sorted(spec.selector.items())),
        "HBM_COUNTER": spec.hbm_counter,
        "TIER_COUNTER": spec.tier_counter or "",
        "SERVERS_PORT": str(spec.servers_port),
        "INTERVAL_SECONDS": str(spec.interval_s),
        "WINDOW_SECONDS": str(spec.window_s),
        "SCRAPE_TIMEOUT_SECONDS": str(spec.scrape_timeout_s),
        "MAX_PODS": str(spec.max_pods),
        "MAX_WORKERS": str(MAX_WORKERS),
        "MAX_SCRAPE_BYTES": str(MAX_SCRAPE_BYTES),
        "METRICS_PORT": str(METRICS_PORT),
        "PYTHONUNBUFFERED": "1",
    }
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 30}
    memory = f"{spec.memory // 2**20}Mi"
    return {
        "name": NAME,
        "image": spec.image,
        "command": ["python3", "-m", f"components.cache_annotator.{SCRIPT.stem}"],
        "workingDir": SCRIPT_ROOT,  # `-m` imports the package from here
        "env": [
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            *({"name": k, "value": v} for k, v in env.items()),
        ],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "readinessProbe": probe,
        "livenessProbe": {**probe, "failureThreshold": 4},
        "resources": {"requests": {"cpu": "50m", "memory": memory}, "limits": {"memory": memory}},
        "volumeMounts": [{"name": "script", "mountPath": SCRIPT_ROOT, "readOnly": True}],
    }


def role(namespace: str) -> Manifest:
    """Pods of its own namespace: read them, and patch the annotation on them. No other resource, verb or scope."""
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": list(labels.CACHE_ANNOTATOR_POD_VERBS)}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"namespace": namespace, "labels": dict(LABELS), "name": NAME},
        "rules": [rule],
    }


def annotator_manifests(spec: AnnotatorSpec) -> list[Manifest]:
    """The script's ConfigMap, its ServiceAccount and Role, and one replica (Recreate: one writer at a time)."""
    meta = {"namespace": spec.namespace, "labels": dict(LABELS)}
    pod: PodSpec = {
        "serviceAccountName": NAME,  # its token is mounted (the workload's `api_access`), no other
        "enableServiceLinks": False,  # KUBERNETES_SERVICE_HOST is set regardless
        "terminationGracePeriodSeconds": 30,
        "containers": [_container(spec)],
        "volumes": [
            {
                "name": "script",
                "configMap": {
                    "name": f"{NAME}-script",
                    "items": [{"key": Path(path).name, "path": f"components/{path}"} for path in MODULES],
                },
            }
        ],
    }
    deployment = recreated_deployment(spec.namespace, NAME, LABELS, pod)
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta, "name": f"{NAME}-script"},
            "data": {Path(path).name: module.read_text(encoding="utf-8") for path, module in MODULES.items()},
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "name": NAME}},
        role(spec.namespace),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {**meta, "name": NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": spec.namespace}],
        },
        plain(deployment),
    ]


def egress(spec: AnnotatorSpec) -> Manifest:
    """Out to the model servers' metrics port and the API server, nothing else (no DNS: it reaches the API server
    by the address the kubelet gives every pod, the servers by their pod IPs)."""
    servers = network.Egress([network.Peer(dict(spec.selector))], [spec.servers_port])
    api = network.Egress(network.ANYONE, list(network.API_SERVER_PORTS))
    return network.egress_policy(NAME, spec.namespace, {"matchLabels": dict(LABELS)}, [servers, api])


def ingress(traffic: network.StackTraffic) -> Manifest:
    """Only the scraper may connect: its metrics."""
    rules = [network.Rule([traffic.scraper], [METRICS_PORT])]
    return network.policy(NAME, traffic.namespace, {"matchLabels": dict(LABELS)}, rules)
