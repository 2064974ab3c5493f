"""Values for the upstream `llm-d-router-standalone` chart, built from the stack (no values files).

Layers, in the order the guide passes them to `helm install`: the guide's base router values, the
monitoring values (when on), then the tiered-prefix-cache values with two prefix-cache producers and
scorers: one for accelerator HBM, one for the CPU tier whose capacity is derived, not typed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from components.catalog import labels
from components.catalog.labels import CPU_PRODUCER, CPU_SCORER, GPU_PRODUCER, GPU_SCORER
from components.specs import keda
from components.specs.kv_events import PreciseIndex
from components.specs.pd_picker import pd_config, pd_tiered_config
from components.specs.precise_picker import (
    METRICS_SOURCE,
    TOKENIZER_PORT,
    precise_config,
    token_producer,
    with_token_awareness,
)
from components.specs.servers.base import hf_token_env
from components.units import ByteSize

Values = dict[str, Any]

PLUGINS_FILE = f"{labels.GUIDE}-plugins.yaml"
ENVOY_ARGS = [
    "--service-node", "envoy-sidecar",
    "--log-level", "warn",
    "--concurrency", "8",
    "--drain-strategy", "immediate",
    "--drain-time-s", "60",
    "-c", "/etc/envoy/envoy.yaml",
]  # fmt: skip


@dataclass(frozen=True)
class ChartLayout:
    """Where a chart version takes the EPP plugin config, and which config apiVersion its EPP accepts."""

    inline_map: bool  # v1.0.0: `pluginsConfig` (a map); v0.x: `pluginsCustomConfig` ({file: YAML string})
    config_api_version: str


def chart_layout(version: str) -> ChartLayout:
    major = int(version.lstrip("v").split(".", 1)[0])
    if major >= 1:
        return ChartLayout(inline_map=True, config_api_version="llm-d.ai/v1")
    return ChartLayout(inline_map=False, config_api_version="llm-d.ai/v1alpha1")


Profile = str  # "tiered" | "default" | "token-routing" | "pd" | "precise"


@dataclass(frozen=True)
class RouterInputs:
    chart_version: str
    match_labels: dict[str, str]
    target_port: int
    cpu_lru_capacity_per_server: int
    epp_replicas: int
    epp_cpu: str
    epp_memory: ByteSize
    proxy_cpu: str
    proxy_memory: ByteSize
    monitoring: str | None  # None, "prometheus-operator" or "gke-managed-prometheus"
    # tiered: the guide's HBM + CPU-tier producers; default: the chart's plugins; token-routing: the
    # chart's tokenizer sidecar and token-based prefix scoring; pd: prefill/decode disaggregation.
    profile: Profile = "tiered"
    model_name: str = ""  # what the tokenizer loads (token-routing, precise)
    flow_control: bool = False  # the EPP's flowControl feature gate: the queue and saturation KEDA scales on
    precise: PreciseIndex | None = None  # the precise profile's index (the engines' block size, seed and port)
    # Token-aware autoscaling: the peak prefill rate (tokens/s) the prefix-cache-affinity-filter prices a
    # recompute with; the ScaledObject's PromQL divides by the same value.
    peak_prefill_rate: int | None = None
    # pd-tiered: the engines' block, which the prefix producers hash in (`blockSizeTokens`, equal to vLLM's
    # `--block-size`); None elsewhere (the producers' default).
    block_tokens: int | None = None


def endpoint_picker_config(api_version: str, cpu_lru_capacity_per_server: int) -> Values:
    """The guide's scheduling: queue depth, KV utilisation, HBM prefix hits, CPU-tier prefix hits, LRU spread."""
    return {
        "apiVersion": api_version,
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "no-hit-lru-scorer"},
            {"type": "approx-prefix-cache-producer", "name": GPU_PRODUCER},
            {
                "type": "approx-prefix-cache-producer",
                "name": CPU_PRODUCER,
                "parameters": {"autoTune": False, "lruCapacityPerServer": cpu_lru_capacity_per_server},
            },
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {
                "type": "prefix-cache-scorer",
                "name": GPU_SCORER,
                "parameters": {"prefixMatchInfoProducerName": GPU_PRODUCER},
            },
            {
                "type": "prefix-cache-scorer",
                "name": CPU_SCORER,
                "parameters": {"prefixMatchInfoProducerName": CPU_PRODUCER},
            },
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": ref}
                    for ref in (
                        "queue-scorer",
                        "kv-cache-utilization-scorer",
                        GPU_SCORER,
                        CPU_SCORER,
                        "no-hit-lru-scorer",
                    )
                ],
            }
        ],
    }


def token_routing_config(api_version: str, model_name: str) -> Values:
    """Prefix scoring on token blocks: the EPP tokenizes through the chart's tokenizer sidecar."""
    return {
        "apiVersion": api_version,
        "kind": "EndpointPickerConfig",
        "plugins": [
            token_producer(model_name),
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "prefix-cache-scorer"},
            METRICS_SOURCE,
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                ],
            }
        ],
    }


# The producer whose prefix matches the token-aware filter and the in-flight counter read, per profile: the
# precise index, or the tiered profile's HBM producer (the chart's own elsewhere, which they default to).
_PREFIX_PRODUCERS = {"precise": labels.PRECISE_PRODUCER, "tiered": GPU_PRODUCER}


PD_PROFILES = ("pd", "pd-tiered")  # the EPP selects prefill and decode pods by label: no InferencePool
PLUGIN_FILES = {
    "tiered": PLUGINS_FILE,
    "token-routing": "lmcache-plugins.yaml",
    "precise": "precise-prefix-cache-plugins.yaml",
} | {p: f"{p}-plugins.yaml" for p in PD_PROFILES}


def _resources(cpu: str, memory: ByteSize) -> Values:
    """The guide's shape: CPU and memory requested, memory limited at twice the request, CPU unlimited."""
    return {"requests": {"cpu": cpu, "memory": memory.quantity()}, "limits": {"memory": (memory * 2).quantity()}}


def _monitoring(provider: str) -> Values:
    if provider == "gke-managed-prometheus":
        # GKE Managed Prometheus scrapes with a bearer token from the chart's metrics-reader SA.
        return {
            "interval": "10s",
            "provider": {"name": "gmp"},
            "prometheus": {"enabled": True, "auth": {"enabled": True}},
        }
    return {"interval": "10s", "prometheus": {"enabled": True, "auth": {"enabled": False}}}


def _tokenizer(layout: ChartLayout, model_name: str) -> Values:
    """The chart's tokenizer sidecar, as the seed sets it; `flavor` exists from chart v1.0.0 on.

    `env` replaces the chart's list: it passes HF_TOKEN from the stack's Secret, which a gated model
    needs to be tokenized, marked optional so a Secret without the key does not hold the EPP pod back.
    """
    return {
        "enabled": True,
        **({"flavor": "python"} if layout.inline_map else {}),
        "modelName": model_name,
        "port": TOKENIZER_PORT,
        "env": [hf_token_env(optional=True)],
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
    }


def router_values(inputs: RouterInputs) -> Values:
    layout = chart_layout(inputs.chart_version)
    api = layout.config_api_version
    pickers = {
        "tiered": lambda: endpoint_picker_config(api, inputs.cpu_lru_capacity_per_server),
        "token-routing": lambda: token_routing_config(api, inputs.model_name),
        "pd": lambda: pd_config(api),
        "pd-tiered": lambda: pd_tiered_config(
            api, inputs.cpu_lru_capacity_per_server, inputs.block_tokens or labels.ROUTER_BLOCK_TOKENS
        ),
    }
    if inputs.precise is not None:
        index = inputs.precise
        pickers["precise"] = lambda: precise_config(api, inputs.model_name, index)
    epp: Values = {
        "replicas": inputs.epp_replicas,
        "flags": {"v": 2},
        "image": {"tag": inputs.chart_version},
        "pluginsConfigFile": PLUGIN_FILES.get(inputs.profile, "default-plugins.yaml"),
        "resources": _resources(inputs.epp_cpu, inputs.epp_memory),
    }
    if inputs.profile in pickers:
        picker = pickers[inputs.profile]()
        if inputs.flow_control:
            picker = keda.with_flow_control(picker)
        if inputs.peak_prefill_rate is not None:
            picker = with_token_awareness(picker, inputs.peak_prefill_rate, _PREFIX_PRODUCERS.get(inputs.profile))
        if layout.inline_map:
            epp["pluginsConfig"] = picker
        else:
            epp["pluginsCustomConfig"] = {epp["pluginsConfigFile"]: yaml.safe_dump(picker, sort_keys=False)}
    pool: Values = {"failureMode": "FailOpen"}
    if inputs.profile in PD_PROFILES:
        pool["create"] = False  # the EPP selects prefill and decode pods by label; no InferencePool
    router: Values = {
        "epp": epp,
        "inferencePool": pool,
        "modelServers": {
            "protocol": "http",
            "matchLabels": dict(inputs.match_labels),
            "targetPorts": [{"number": inputs.target_port}],
        },
        "proxy": {
            "proxyType": "envoy",
            "args": list(ENVOY_ARGS),
            "resources": _resources(inputs.proxy_cpu, inputs.proxy_memory),
        },
        "extraServicePorts": [
            {
                "name": "http",
                "port": labels.ROUTER_SERVICE_PORT,
                "protocol": "TCP",
                "targetPort": labels.ENVOY_LISTENER_PORT,
            }
        ],
    }
    if inputs.profile in ("token-routing", "precise"):
        router["tokenizer"] = _tokenizer(layout, inputs.model_name)
    if inputs.profile == "precise" and inputs.epp_replicas > 1:
        # Active-active: the chart adds `--ha-enable-leader-election` past one replica, which lets only the leader
        # pass readiness; each precise EPP indexes every pod's events itself, so all of them route. The chart
        # renders a flag as `--k=v` after its own, and the last one wins (the guide's router values).
        epp["flags"] = {**epp["flags"], "ha-enable-leader-election": False}
    if inputs.monitoring:
        router["monitoring"] = _monitoring(inputs.monitoring)
    return {"router": router}


def router_pod_labels(release: str, values: Values) -> dict[str, str]:
    """The labels the chart selects its EPP pods by, for these values."""
    return labels.router_pod_labels(release, pool_created(values))


def pool_created(values: Values) -> bool:
    return (values["router"].get("inferencePool") or {}).get("create") is not False


def router_endpoint(release: str, namespace: str) -> str:
    """The in-cluster URL clients use: the EPP Service's port 80, in front of the Envoy listener (the Service
    is named as the chart names it, the release cut to its length)."""
    return f"http://{labels.router_name(release)}.{namespace}.svc.cluster.local:{labels.ROUTER_SERVICE_PORT}"


def inference_pool(release: str, namespace: str, values: Values) -> Values | None:
    """The InferencePool the chart renders from these values (routerlib `_inferencepool.yaml`), or None
    when `inferencePool.create` is false and the EPP selects pods by label.

    The chart owns the pool, so the program does not declare it; this mirror feeds the summary,
    config-time checks and schema tests.
    """
    router = values["router"]
    if router["inferencePool"].get("create") is False:
        return None
    return {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": release, "namespace": namespace},
        "spec": {
            "targetPorts": [{"number": p["number"]} for p in router["modelServers"]["targetPorts"]],
            "appProtocol": "http" if router["modelServers"]["protocol"] == "http" else "kubernetes.io/h2c",
            "selector": {"matchLabels": dict(router["modelServers"]["matchLabels"])},
            "endpointPickerRef": {
                "name": labels.router_name(release),
                "port": {"number": labels.EPP_EXT_PROC_PORT},
                "failureMode": router["inferencePool"]["failureMode"],
            },
        },
    }


# The EPP reads its plugin config (the chart's `<name>-epp` ConfigMap) when it starts, and the chart puts
# no checksum of it on the pod template: a changed config would wait for the next restart. The program
# stamps this annotation, a digest of the values, so a values change rolls the EPP (seen under the real
# engine: a tier change replaced the ConfigMap and left the EPP running on the old capacity).
VALUES_CHECKSUM_ANNOTATION = "llm-d.ai/router-values-checksum"


def values_checksum(values: Values) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
