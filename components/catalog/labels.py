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
SUBGUIDE_LABEL = "llm-d.ai/subguide"
INFERENCE_SERVING_LABEL = "llm-d.ai/inference-serving"
# The workload a model-server pod belongs to: with guide and role, the only labels its (immutable) selector holds.
WORKLOAD_LABEL = "app.kubernetes.io/name"
# The image pre-pull DaemonSet's name and workload label (components/specs/prepull.py; policies/rules.py).
IMAGE_PREPULL = "image-prepull"
# LeaderWorkerSet: the controller labels each pod with its set's name; the guide marks leaders `role: leader`.
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_ROLE_LABEL = "role"
LWS_LEADER = "leader"

FILES_STORAGE_MOUNT = "/mnt/files-storage"  # where the shared ReadWriteMany claim is mounted

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


def router_pod_labels(release: str, pool_created: bool) -> dict[str, str]:
    """The selector labels the router chart puts on its EPP pods (routerlib `llm-d-router.selectorLabels`,
    chart v0.10.0): the release, trimmed, lower-cased and cut to 40 characters, plus `-epp`, under a key
    that names the mode (`inferencePool.create`)."""
    name = f"{release.strip().lower()[:40]}-epp"
    return {"llm-d-router-gateway" if pool_created else "llm-d-router-standalone": name}
