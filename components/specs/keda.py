"""KEDA on the router's own signals: a ScaledObject per model-server workload, its Prometheus triggers, the
TriggerAuthentication a monitoring provider needs, and hardened values for KEDA's own chart.

The triggers, thresholds and windows are upstream's (llm-d's `guides/workload-autoscaling/` KEDA recipes, the
"KEDA + EPP Metrics" path): KEDA's Prometheus scaler reads metrics the EPP exports with its `flowControl` feature
gate on, and the HPA KEDA creates scales the model servers. Each signal comes with the running-requests trigger
beside it, which the HPA races against it (the larger proposal wins):

| mode | triggers | thresholds (per replica, `AverageValue`) |
|---|---|---|
| `queue` (the default) | `sum(llm_d_epp_flow_control_queue_size)`, `sum(llm_d_epp_request_running)` | 1, 16 |
| `saturation` | `max(llm_d_epp_flow_control_pool_saturation)`, `sum(llm_d_epp_request_running)` | 0.7, 16 |
| `both` | all three | 1, 0.7, 16 |

The recipes' files and the commits they were read at, and where the ScaledObjects differ from them (the series'
selectors, saturation's metricType) and why: docs/upstream-differences.md, Autoscaling.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from components.catalog import versions
from components.formulas import hpa
from components.manifest import Manifest, NetworkPolicy, plain
from components.specs import promql, security
from components.specs.workload_type import WorkloadType

API_VERSION = "keda.sh/v1alpha1"
# A ScaledObject per model-server role (and the TriggerAuthentication its metrics source needs).
WORKLOAD = WorkloadType("llmd:autoscaling:ModelServerScaler", "autoscaling")

# The EPP's metric names (llm-d-router; the `inference_extension_*` names they replace are deprecated).
QUEUE_SIZE = "llm_d_epp_flow_control_queue_size"
REQUEST_RUNNING = "llm_d_epp_request_running"
POOL_SATURATION = "llm_d_epp_flow_control_pool_saturation"
EPP_METRICS = (QUEUE_SIZE, REQUEST_RUNNING, POOL_SATURATION)
SIGNAL_METRICS = {"queue": QUEUE_SIZE, "running": REQUEST_RUNNING, "saturation": POOL_SATURATION}
# The labels they are selected by: the EPP's own, and the namespace every scrape adds.
NAMESPACE_LABEL, POOL_LABEL, MODEL_LABEL = "namespace", "inference_pool", "model_name"

# Upstream's ScaledObject settings (see the module docstring). pollingInterval and cooldownPeriod act only
# at zero replicas (activation and scale-to-zero); the HPA's behavior does the ordinary scaling.
POLLING_INTERVAL_S = 15
COOLDOWN_PERIOD_S = 300

# The EPP exports the flow-control queue and pool saturation only with this feature gate on in its
# EndpointPickerConfig (`featureGates: [flowControl]`, upstream's keda-epp router values); running requests
# it exports either way.
FLOW_CONTROL_GATE = "flowControl"
FLOW_CONTROL_METRICS = (QUEUE_SIZE, POOL_SATURATION)


def with_flow_control(picker_config: Manifest) -> Manifest:
    """The EndpointPickerConfig (`router_values.endpoint_picker_config` and the other profiles') with the
    flowControl feature gate added, once; the other gates and every plugin are kept."""
    out = copy.deepcopy(picker_config)
    gates = list(out.get("featureGates") or [])
    if FLOW_CONTROL_GATE not in gates:
        gates.append(FLOW_CONTROL_GATE)
    out["featureGates"] = gates
    return out


Mode = Literal["queue", "saturation", "both"]
MODES: tuple[Mode, ...] = ("queue", "saturation", "both")


@dataclass(frozen=True)
class Thresholds:
    """Per-replica targets (upstream's defaults): queued requests, running requests, pool saturation."""

    queue: float = 1.0
    running: float = 16.0
    saturation: float = 0.7

    def __post_init__(self) -> None:
        for name, value in (("queue", self.queue), ("running", self.running), ("saturation", self.saturation)):
            if not value > 0:
                raise ValueError(f"the {name} threshold must be positive, not {value}")


# Where the metrics live -----------------------------------------------------------------------------------

GMP_AUTH_NAME = "keda-gke-managed-prometheus"
GMP_READER_ROLE = "roles/monitoring.viewer"  # what the operator's identity needs to query Managed Prometheus


def gke_operator_member(project: str) -> str:
    """The KEDA operator's Kubernetes service account as a Workload Identity member of the project."""
    return f"serviceAccount:{project}.svc.id.goog[{KEDA_NAMESPACE}/{KEDA_OPERATOR_SERVICE_ACCOUNT}]"


@dataclass(frozen=True)
class MetricsSource:
    """What KEDA's Prometheus scaler queries, and the TriggerAuthentication it needs (None: none)."""

    server_address: str
    auth: str | None = None  # the TriggerAuthentication's name


def prometheus_operator_source(server_address: str) -> MetricsSource:
    """A Prometheus the operator runs, queried in the cluster over plain HTTP without client auth (upstream's
    generic path: KEDA ignores a TriggerAuthentication's CA unless `authModes` is set, so no TLS here)."""
    if not server_address.startswith(("http://", "https://")):
        raise ValueError(f"a Prometheus server address is a URL, not {server_address!r}")
    return MetricsSource(server_address.rstrip("/"))


def gke_managed_prometheus_source(project: str) -> MetricsSource:
    """GKE Managed Prometheus: its query frontend, the Prometheus HTTP API of Cloud Monitoring for the project
    (cloud.google.com/stackdriver/docs/managed-prometheus/query-api-ui), authenticated with the KEDA operator's
    workload identity (`podIdentity.provider: gcp`: KEDA's Prometheus scaler then sends Google credentials with
    the `monitoring.read` scope; kedacore/keda v2.20.2 `pkg/scalers/prometheus_scaler.go`). The operator's
    Kubernetes service account (namespace `keda`, `keda-operator`) needs `roles/monitoring.viewer` on the project."""
    if not project:
        raise ValueError("GKE Managed Prometheus needs the project whose metrics it serves")
    return MetricsSource(
        f"https://monitoring.googleapis.com/v1/projects/{project}/location/global/prometheus", GMP_AUTH_NAME
    )


def trigger_authentication(source: MetricsSource, namespace: str) -> Manifest | None:
    """The TriggerAuthentication the source needs, in the ScaledObject's namespace, or None."""
    if source.auth is None:
        return None
    return {
        "apiVersion": API_VERSION,
        "kind": "TriggerAuthentication",
        "metadata": {"name": source.auth, "namespace": namespace},
        "spec": {"podIdentity": {"provider": "gcp"}},
    }


# Triggers -------------------------------------------------------------------------------------------------


def queries(namespace: str, pool: str | None, model: str) -> dict[str, str]:
    """Each signal's PromQL, one number for the stack's EPP: `pool` is the InferencePool's name (the router
    release's; None where the router selects pods without a pool, and then the namespace alone names it)."""
    flow = {NAMESPACE_LABEL: namespace, **({POOL_LABEL: pool} if pool else {})}
    return {
        "queue": f"sum({promql.selector(QUEUE_SIZE, flow)})",
        "running": f"sum({promql.selector(REQUEST_RUNNING, {NAMESPACE_LABEL: namespace, MODEL_LABEL: model})})",
        "saturation": f"max({promql.selector(POOL_SATURATION, flow)})",
    }


_SIGNALS: dict[Mode, tuple[hpa.Signal, ...]] = {
    "queue": ("queue", "running"),
    "saturation": ("saturation", "running"),
    "both": ("queue", "saturation", "running"),
}


def signals(mode: Mode) -> tuple[hpa.Signal, ...]:
    """The signals a mode scales on; running requests always ride along, as in every upstream overlay."""
    if mode not in _SIGNALS:
        raise ValueError(f"unknown autoscaling trigger {mode!r}; one of {', '.join(MODES)}")
    return _SIGNALS[mode]


_TRIGGER_NAMES = {"queue": "epp-queue-size", "running": "epp-running-requests", "saturation": "epp-pool-saturation"}


def hpa_triggers(mode: Mode, thresholds: Thresholds) -> tuple[hpa.Trigger, ...]:
    """The triggers as the HPA sees them, for the replay (components/formulas/hpa.py)."""
    targets = {"queue": thresholds.queue, "running": thresholds.running, "saturation": thresholds.saturation}
    return tuple(hpa.Trigger(s, targets[s], "Value" if s == "saturation" else "AverageValue") for s in signals(mode))


def number(value: float) -> str:
    """A threshold as KEDA's metadata takes it (a string): 1, 16, 0.7."""
    return f"{value:g}"


def triggers(
    mode: Mode, thresholds: Thresholds, source: MetricsSource, namespace: str, pool: str | None, model: str
) -> list[Manifest]:
    """The ScaledObject's Prometheus triggers."""
    query = queries(namespace, pool, model)
    return [
        prometheus_trigger(_TRIGGER_NAMES[t.signal], t, query[t.signal], source) for t in hpa_triggers(mode, thresholds)
    ]


def prometheus_trigger(name: str, trigger: hpa.Trigger, query: str, source: MetricsSource) -> Manifest:
    """One ScaledObject trigger on a Prometheus query, at the HPA trigger's target and metric type."""
    entry: Manifest = {
        "type": "prometheus",
        "name": name,
        "metricType": trigger.metric_type,
        "metadata": {"serverAddress": source.server_address, "query": query, "threshold": number(trigger.target)},
    }
    if source.auth is not None:
        entry["authenticationRef"] = {"name": source.auth, "kind": "TriggerAuthentication"}
    return entry


# The ScaledObject -----------------------------------------------------------------------------------------

WorkloadKind = Literal["Deployment", "LeaderWorkerSet"]
# A LeaderWorkerSet scales through its scale subresource (spec.replicas: the groups; status.hpaPodSelector: the
# leaders the HPA counts as ready), as a Deployment does.
TARGET_API_VERSIONS: dict[WorkloadKind, str] = {
    "Deployment": "apps/v1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
}


def behavior(rules: hpa.Behavior) -> Manifest:
    """The HPA's `behavior` (autoscaling/v2 HorizontalPodAutoscalerBehavior) from the formulas' rules."""

    def side(r: hpa.Rules) -> Manifest:
        return {
            "stabilizationWindowSeconds": r.stabilization_s,
            "selectPolicy": r.select,
            "policies": [{"type": p.type, "value": p.value, "periodSeconds": p.period_s} for p in r.policies],
        }

    return {"scaleUp": side(rules.scale_up), "scaleDown": side(rules.scale_down)}


def hpa_name(workload: str) -> str:
    """The HPA KEDA creates (and owns) for the workload (`horizontalPodAutoscalerConfig.name`)."""
    return f"keda-hpa-{workload}"


def scaled_object(
    kind: WorkloadKind,
    workload: str,
    namespace: str,
    min_replicas: int,
    max_replicas: int,
    rules: hpa.Behavior,
    trigger_list: list[Manifest],
    object_labels: dict[str, str] | None = None,
) -> Manifest:
    """The ScaledObject that scales one model-server workload, named after it.

    `min_replicas` is at least 1: scaling to zero would drop every warm tier a pod holds and needs the
    activation path this stack does not model.
    """
    if kind not in TARGET_API_VERSIONS:
        raise ValueError(f"KEDA scales a Deployment or a LeaderWorkerSet here, not a {kind}")
    if not 1 <= min_replicas <= max_replicas:
        raise ValueError(f"replicas {min_replicas}..{max_replicas}: need 1 <= min_replicas <= max_replicas")
    if not trigger_list:
        raise ValueError("a ScaledObject needs at least one trigger")
    metadata: Manifest = {"name": workload, "namespace": namespace}
    if object_labels:
        metadata["labels"] = dict(object_labels)
    return {
        "apiVersion": API_VERSION,
        "kind": "ScaledObject",
        "metadata": metadata,
        "spec": {
            "scaleTargetRef": {"apiVersion": TARGET_API_VERSIONS[kind], "kind": kind, "name": workload},
            "pollingInterval": POLLING_INTERVAL_S,
            "cooldownPeriod": COOLDOWN_PERIOD_S,
            "minReplicaCount": min_replicas,
            "maxReplicaCount": max_replicas,
            "advanced": {"horizontalPodAutoscalerConfig": {"name": hpa_name(workload), "behavior": behavior(rules)}},
            "triggers": copy.deepcopy(trigger_list),
        },
    }


# KEDA's chart ---------------------------------------------------------------------------------------------

KEDA_NAMESPACE = "keda"
KEDA_OPERATOR_SERVICE_ACCOUNT = "keda-operator"  # the chart's `serviceAccount.operator.name` default
# The chart's three workloads, as its values name them: image key, then securityContext/resources key.
_COMPONENTS = (("keda", "operator"), ("metricsApiServer", "metricServer"), ("webhooks", "webhooks"))
# Each workload's requests, and a memory limit at twice them (the router's shape): the chart's own defaults
# request 100m and 100Mi and limit 1 CPU and 1000Mi; the operator caches every ScaledObject's metrics.
KEDA_CPU_REQUEST = "100m"
KEDA_MEMORY_REQUEST = "256Mi"
KEDA_MEMORY_LIMIT = "512Mi"


def _image_values(image: str) -> Manifest:
    """An image as the chart splits it (`<registry>/<repository>:<tag>`)."""
    name, _, tag = image.rpartition(":")
    registry, _, repository = name.partition("/")
    return {"registry": registry, "repository": repository, "tag": tag}


def chart_values(
    version: str = versions.KEDA_VERSION,
    mirror: Callable[[str], str] | None = None,
    gcp_service_account: str | None = None,
) -> Manifest:
    """Values for the upstream `kedacore/keda` chart, hardened like the program's own pods.

    Each container gets the securityContext `components/specs/security.py` gives a container without
    exemptions (no privilege escalation, every capability dropped, RuntimeDefault seccomp, a non-root UID)
    and a read-only root filesystem (the chart's default, kept); the images are pinned to `version`, pulled
    IfNotPresent, and sent through `mirror` (an image to its mirrored reference, the plan's `Mirror.image`).
    `gcp_service_account`: the Google service account the operator impersonates for GKE Managed Prometheus
    (the chart annotates its service account); None where a direct Workload Identity principal is bound.
    """
    to = mirror or (lambda image: image)
    hardened = security.container_context(security.Subject({}, {}, {"name": "keda"}))
    context = {**hardened, "readOnlyRootFilesystem": True}
    resources = {
        "requests": {"cpu": KEDA_CPU_REQUEST, "memory": KEDA_MEMORY_REQUEST},
        "limits": {"memory": KEDA_MEMORY_LIMIT},
    }
    values: Manifest = {
        "image": {
            **{key: _image_values(to(image)) for key, image in versions.keda_images(version).items()},
            "pullPolicy": "IfNotPresent",
        },
        "securityContext": {component: dict(context) for _, component in _COMPONENTS},
        "podSecurityContext": {
            component: {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
            for _, component in _COMPONENTS
        },
        "resources": {component: copy.deepcopy(resources) for _, component in _COMPONENTS},
    }
    if gcp_service_account:
        values["podIdentity"] = {"gcp": {"enabled": True, "gcpIAMServiceAccount": gcp_service_account}}
    return values


# Who reaches KEDA's pods: the API server (from the host network, no pod selector matches it) on the
# metrics API server's and the webhooks' ports, KEDA's own pods among themselves (the metrics API server
# asks the operator over gRPC), a metrics scraper on the operator's metrics port.
KEDA_API_PORTS = (6443, 9443)  # metrics-apiserver (the external metrics API), admission webhooks
KEDA_METRICS_PORT = 8080


def namespace_manifest() -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KEDA_NAMESPACE}}


def network_policy() -> Manifest:
    """One NetworkPolicy over KEDA's namespace: nothing else reaches its pods."""
    record: NetworkPolicy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "keda", "namespace": KEDA_NAMESPACE},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"ports": [{"protocol": "TCP", "port": p} for p in (*KEDA_API_PORTS, KEDA_METRICS_PORT)]},
                {"from": [{"podSelector": {}}]},
            ],
        },
    }
    return plain(record)
