"""Names, labels, ports and block sizes shared by the router, the pool and the model servers."""

from __future__ import annotations

GUIDE = "tiered-prefix-cache"
DEFAULT_NAMESPACE = "llm-d-tiered-prefix-cache"

GUIDE_LABEL = "llm-d.ai/guide"
MODEL_LABEL = "llm-d.ai/model"
ROLE_LABEL = "llm-d.ai/role"
ACCELERATOR_VARIANT_LABEL = "llm-d.ai/accelerator-variant"
ACCELERATOR_VENDOR_LABEL = "llm-d.ai/accelerator-vendor"
ENGINE_TYPE_LABEL = "llm-d.ai/engine-type"
# What a model-server pod is, by key: its accelerator profile (components/catalog/accelerators.py ACCELERATORS)
# and its connector implementation (components/specs/connectors, `Connector.key`). Ours, not the guide's: the
# guide's variant and vendor labels do not tell two profiles of one vendor apart (an H100 from a B200). The
# policy pack reads these (policies/checks/inventory.py), never the device resource a pod requests.
ACCELERATOR_PROFILE_LABEL = "llm-d.ai/accelerator-profile"
KV_CONNECTOR_LABEL = "llm-d.ai/kv-connector"
# Tokens per block the workload's connector moves between host memory and the accelerator (its
# `Connector.transfer_block`), stamped on the model-server workload's own metadata (not its pod template, so
# the stamp rolls no pod); the policy rule `tiers-beat-recompute` reads it rather than re-deriving it from the
# server's arguments, and `identity-labels` reports a connector's workload without it.
KV_TRANSFER_BLOCK_ANNOTATION = "llm-d.ai/kv-transfer-block-tokens"
# Bytes of the CPU tier one pod of the workload holds in its own memory (the connector's own figure, from its
# `Sizes`: `Connector.pod_cpu_tier`; 0 where a per-node daemon holds the tier, which carries its own), beside
# the transfer block on the workload's own metadata; `memory-limit-covers-tier` and `filesystem-tier-rwx` read
# it for every connector, and `identity-labels` reports a connector's workload without it.
CPU_TIER_BYTES_ANNOTATION = "llm-d.ai/cpu-tier-bytes"
# The served model's geometry as the plan sized it (the `ModelSpec` fields its KV bytes per token and a token's
# compute follow from, as JSON: components/catalog/geometry_stamp.py), beside them: `tiers-beat-recompute` and
# `router-capacity-within-tier` judge the model by it, not by looking its served name up in the catalog (a model
# given by `cache.model_file` is in none), and `identity-labels` reports a connector's workload without it.
MODEL_GEOMETRY_ANNOTATION = "llm-d.ai/model-geometry"
# Node labels a model-server pod selects its accelerator's nodes by: a created pool's key (every node of a pool
# the program creates carries it; components/specs/clusters.py), and GKE's own labels of a TPU slice's nodes
# (components/specs/servers/tpu.py) and of a GPU node (its guest accelerator, components/catalog/machines.py
# `gke_accelerator`, and a profile's `GpuProduct`). The policy rule `identity-labels` holds a pod's profile to the
# nodes it selects by them.
NODE_POOL_LABEL = "llm-d.ai/node-pool"
GKE_TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
GKE_TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
# Node labels that say which GPU a node has where its device resource does not (every NVIDIA GPU is
# `nvidia.com/gpu`): NVIDIA GPU Feature Discovery's product (NVML's device name, spaces as dashes; GFD ships with
# the GPU operator and the device plugin's chart) and the instance type every cloud's nodes carry. An accelerator
# profile's values are its `GpuProduct` (components/catalog/gpu_product.py); components/catalog/node_pins.py maps
# each (label, value) to the profile whose nodes alone carry it.
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# What the plan priced the stack at (stacks/planning/workload/cost.py), stamped on the stack's Namespace: US dollars per
# month, the stack's budget where it sets one (`pricing.monthly_budget`), its biggest items and what no price
# covers; the policy rule `monthly-budget` and the change plan read them rather than re-deriving the cost.
MONTHLY_COST_ANNOTATION = "llm-d.ai/monthly-cost-usd"
MONTHLY_BUDGET_ANNOTATION = "llm-d.ai/monthly-budget-usd"
COST_ITEMS_ANNOTATION = "llm-d.ai/cost-biggest-items"
COST_UNPRICED_ANNOTATION = "llm-d.ai/cost-unpriced"
# The filesystem tier's measured read and write rates against its backend's documented limits, as JSON (written by
# stacks/planning/workload/tier_throughput.py with a workload's replay; read by the filesystem-tier-within-limits rule).
FILESYSTEM_THROUGHPUT_ANNOTATION = "llm-d.ai/filesystem-throughput"
# The shared tier's namespace the workload's servers write under (components/specs/tier_namespace.py) and the
# fields it is derived from (canonical JSON), on the same metadata: the change plan names the field that moved it.
KV_TIER_NAMESPACE_ANNOTATION = "llm-d.ai/kv-tier-namespace"
KV_TIER_IDENTITY_ANNOTATION = "llm-d.ai/kv-tier-identity"
SUBGUIDE_LABEL = "llm-d.ai/subguide"
INFERENCE_SERVING_LABEL = "llm-d.ai/inference-serving"
# The workload a model-server pod belongs to: with guide and role, the only labels its (immutable) selector holds.
WORKLOAD_LABEL = "app.kubernetes.io/name"
# The image pre-pull DaemonSet's name and workload label (components/specs/prepull.py; policies/checks/artifacts.py).
IMAGE_PREPULL = "image-prepull"
# LeaderWorkerSet: the controller labels each pod with its set's name; the guide marks leaders `role: leader`.
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_ROLE_LABEL = "role"
LWS_LEADER = "leader"

FILES_STORAGE_MOUNT = "/mnt/files-storage"  # where the shared ReadWriteMany claim is mounted
# How the filesystem tier's claim is kept from filling, on the claim (components/specs/tier_evictor.py; the
# policy rule `filesystem-tier-capacity`): `evictor` (a pod labeled TIER_EVICTOR mounts it) or `off`.
CAPACITY_LABEL = "llm-d.ai/capacity-management"
TIER_EVICTOR = "tier-evictor"  # the evictor's workload label (WORKLOAD_LABEL) and name
# The cache-value annotator (components/specs/cache_annotator.py): its workload label (WORKLOAD_LABEL), name and
# ServiceAccount, and the verbs its Role grants on the pods of its namespace, all it may hold (the policy rule
# `annotator-least-privilege`).
CACHE_ANNOTATOR = "cache-annotator"
CACHE_ANNOTATOR_POD_VERBS = ("get", "list", "patch")

HF_TOKEN_SECRET = "llm-d-hf-token"
HF_TOKEN_KEY = "HF_TOKEN"

MODEL_SERVER_PORT = 8000
MODEL_SERVER_PORT_NAME = "modelserver"

# Router (chart) ports: the EPP's ext-proc gRPC port and the Envoy client listener behind Service port 80.
EPP_EXT_PROC_PORT = 9002
EPP_METRICS_PORT = 9090  # the chart's router.metricsPort: the EPP's /metrics, which the chart's monitors scrape
ENVOY_LISTENER_PORT = 8081
ROUTER_SERVICE_PORT = 80

# The router's approximate prefix index hashes prompts in blocks of this many tokens (the
# approx-prefix-cache-producer's block size); its lruCapacityPerServer counts these blocks.
ROUTER_BLOCK_TOKENS = 64

# Precise prefix routing (llm-d/llm-d `guides/precise-prefix-cache-routing`): each engine binds a ZMQ publisher
# for its KV-cache events on this port of its pod (data-parallel rank r on KV_EVENTS_PORT + r: vLLM 0.26.0
# `distributed/kv_events.py` `offset_endpoint_port`), which every endpoint picker dials (pod discovery:
# llm-d-router `preciseprefixcache/extractor.go`, `SocketPort + RankIndex`); the guide's 5556.
KV_EVENTS_PORT = 5556
KV_EVENTS_PORT_NAME = "kv-events"
# Every event topic starts with it (`kv@<pod ip>:<port>@<model>`, the guide's); the router subscribes to it.
KV_EVENTS_TOPIC_PREFIX = "kv@"
# The block hashes' seed: the same PYTHONHASHSEED on every engine, and the router's `hashSeed` (the guide's 42,
# the value the native connector's and HiCache's filesystem tiers already set).
KV_HASH_SEED = "42"
HASH_SEED_ENV = "PYTHONHASHSEED"
# The router plugin that subscribes to the events and indexes them (llm-d-router `preciseprefixcache`; the older
# `precise-prefix-cache-scorer` is its deprecated wrapper, RELEASE-NOTES 2026-06-02).
PRECISE_PRODUCER = "precise-prefix-cache-producer"
# The tiered profiles' approximate prefix producers and their scorers (HBM and the CPU tier), by name.
GPU_PRODUCER, CPU_PRODUCER = "gpu-prefix-cache-producer", "cpu-prefix-cache-producer"
GPU_SCORER, CPU_SCORER = "gpu-prefix-cache-scorer", "cpu-prefix-cache-scorer"

# Token-aware autoscaling (llm-d/llm-d `guides/workload-autoscaling/keda-epp-token-aware`): the EPP's in-flight
# uncached prompt tokens (published by its `inflight-load-producer`), over the peak prefill rate, are seconds of
# prefill backlog; the same rate is the `prefix-cache-affinity-filter`'s `peakPrefillThroughput`.
INFLIGHT_TOKENS_METRIC = "llm_d_epp_inflight_tokens"
INFLIGHT_PRODUCER = "inflight-load-producer"
AFFINITY_FILTER = "prefix-cache-affinity-filter"
PREFILL_BACKLOG_TRIGGER = "prefill-backlog-seconds"


# The router chart (routerlib `_helpers.tpl`, chart v0.10.0 and main) names its objects after the release
# trimmed, lower-cased and cut to this many characters: `<base>-epp` (Deployment, Service, ConfigMap,
# ServiceAccount, the pods' selector label), while the InferencePool keeps the full release name.
ROUTER_NAME_BASE = 40
# `llm-d-router.cluster-rbac-name`: `"<base>-<namespace base>-epp"` quoted, then cut to this many characters;
# a longer name loses its closing quote and the chart's ClusterRole is not YAML.
ROUTER_CLUSTER_RBAC_QUOTED = 84


def _chart_base(name: str) -> str:
    return name.strip().lower()[:ROUTER_NAME_BASE]


def router_name(release: str) -> str:
    """The chart's `llm-d-router.name`: what its EPP Deployment, Service and selector label are called."""
    return f"{_chart_base(release)}-epp"


def router_cluster_rbac_name(release: str, namespace: str) -> str:
    """The chart's `llm-d-router.cluster-rbac-name` (ClusterRole and its binding), unquoted."""
    return f"{_chart_base(release)}-{_chart_base(namespace)}-epp"


def router_names_problem(release: str, namespace: str) -> str | None:
    """Why the chart cannot render objects for this release in this namespace, or None."""
    rbac = router_cluster_rbac_name(release, namespace)
    if len(rbac) + 2 > ROUTER_CLUSTER_RBAC_QUOTED:
        return (
            f"the router chart's ClusterRole name (with monitoring) {rbac} has {len(rbac)} characters, past the"
            f" {ROUTER_CLUSTER_RBAC_QUOTED - 2} it keeps whole; shorten router.release or namespace"
        )
    return None


def router_pod_labels(release: str, pool_created: bool) -> dict[str, str]:
    """The selector labels the router chart puts on its EPP pods (routerlib `llm-d-router.selectorLabels`):
    `router_name(release)` under a key that names the mode (`inferencePool.create`)."""
    return {"llm-d-router-gateway" if pool_created else "llm-d-router-standalone": router_name(release)}


# The Router component's output that repeats its chart's inputs (source, version, release, namespace,
# values): the engine shows a stack policy a helm.v4 Chart's outputs only, which carry none of them, so
# the policy pack reads them here (policies/pack.py).
ROUTER_CHART_OUTPUT = "chartInputs"
