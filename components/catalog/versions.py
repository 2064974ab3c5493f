"""Pinned versions and images: the one place a version lives. Every value is overridable per stack."""

from __future__ import annotations

# The llm-d router release the seeds were tested with: chart, EPP image and P/D sidecar share the tag.
ROUTER_VERSION = "v1.0.0"
ROUTER_CHART = "oci://ghcr.io/llm-d/charts/llm-d-router-standalone"
# The chart's endpoint-picker image (`router.epp.image.{registry,repository}` defaults; tag: the router version).
EPP_IMAGE_REPOSITORY = "ghcr.io/llm-d/llm-d-router-endpoint-picker"
# The chart's other images (v0.10.0 and main agree; tests/test_router_helm.py renders both): the Envoy
# proxy preset (`router.proxy.image` replaces it) and the tokenizer sidecar (`router.tokenizer.image.*`).
CHART_ENVOY_IMAGE = "docker.io/envoyproxy/envoy:distroless-v1.33.2"
CHART_TOKENIZER_REGISTRY, CHART_TOKENIZER_REPOSITORY = "docker.io", "vllm/vllm-openai-cpu"

# Gateway API Inference Extension: the InferencePool CRD.
GAIE_VERSION = "v1.6.2"


def is_local_chart(chart: str) -> bool:
    """A packaged chart (.tgz) on the deploying machine (`router.chart_file`): Helm takes no version for it."""
    return chart.endswith(".tgz") and "://" not in chart


def gaie_crds_url(version: str) -> str:
    """The release asset the seed applies (`v1-manifests.yaml`, the v1 InferencePool CRD)."""
    return (
        "https://github.com/kubernetes-sigs/gateway-api-inference-extension/"
        f"releases/download/{version}/v1-manifests.yaml"
    )


def disagg_sidecar_image(router_version: str) -> str:
    """The P/D routing sidecar of decode pods, released with the router: one tag for both."""
    return f"ghcr.io/llm-d/llm-d-router-disagg-sidecar:{router_version}"


# LMCache: the server and the vLLM pods that talk to it must share one tag (versioned protocol).
LMCACHE_VERSION = "v0.5.6"


def lmcache_image(version: str) -> str:
    """LMCache's vLLM image; the LMCache server runs from the same image, so the two share one tag."""
    return f"lmcache/vllm-openai:{version}"


# Model server images (llm-d/llm-d guides at d557f83e, see shared/reference/llm-d-upstream.md).
VLLM_VERSION = "v0.26.0"
VLLM_CUDA_IMAGE = f"docker.io/vllm/vllm-openai:{VLLM_VERSION}"
VLLM_ROCM_IMAGE = "ghcr.io/llm-d/llm-d-rocm:v0.9.0"
VLLM_TPU_IMAGE = f"docker.io/vllm/vllm-tpu:{VLLM_VERSION}"
# llm-d's precise prefix-cache routing moves to vLLM v0.27.1 (llm-d/llm-d#2324 "bump to vLLM v0.27.1", 2026-08-19,
# for the path's tests #2318). The events it publishes are v0.26.0's (both wheels read: the block pool's GPU
# medium, the OffloadingConnector's CPU medium and `self_describing_kv_events`), so approximate stacks stay on
# VLLM_VERSION and the precise path takes this on the upstream CUDA image (its flags checked against v0.27.1's own
# parser: tests/fixtures/upstream/engines/vllm-0.27.1.json).
VLLM_PRECISE_VERSION = "v0.27.1"
VLLM_PRECISE_CUDA_IMAGE = f"docker.io/vllm/vllm-openai:{VLLM_PRECISE_VERSION}"
SGLANG_IMAGE = "docker.io/lmsysorg/sglang:v0.5.16.0"
MOONCAKE_IMAGE = "ghcr.io/llm-d/mooncake-master-store:v0.8.0"
XPU_NATIVE_IMAGE = "ghcr.io/llm-d/llm-d-xpu-dev:pr-1230"
XPU_LMCACHE_IMAGE = "ghcr.io/llm-d/llm-d-xpu-dev:pr-1731"
# Init containers (upstream: `busybox` / `busybox:latest`, pinned here).
BUSYBOX_IMAGE = "docker.io/library/busybox:1.37.0"
# The image pre-pull DaemonSet: a statically linked busybox (the uclibc variant; the default glibc one
# links dynamically) that runs inside any image, and the pause container its pods idle in.
STATIC_BUSYBOX_IMAGE = "docker.io/library/busybox:1.37.0-uclibc"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
# The verification Job: its script needs only the Python standard library.
VERIFICATION_IMAGE = "docker.io/library/python:3.12.8-slim"
# The model-cache Job: its fetch script, too, needs only the Python standard library.
MODEL_FETCH_IMAGE = VERIFICATION_IMAGE

# KEDA, which scales the model servers on the router's signals: the upstream chart (kedacore/charts) and its
# three images, all tagged with the chart's appVersion (the chart's default; set explicitly so the mirror and
# the pin agree). The newest release is 2.21.1 (2026-11-16, github.com/kedacore/charts/releases/tag/v2.21.1);
# the pin is 2.20.2 (2026-07-31), the newest whose CRDs and chart values tests/fixtures/upstream holds (the
# ScaledObject and TriggerAuthentication schemas the specs are validated against). Bump both together.
KEDA_VERSION = "2.20.2"
KEDA_CHART_REPO = "https://kedacore.github.io/charts"
KEDA_CHART = "keda"
KEDA_OPERATOR_IMAGE_REPOSITORY = "ghcr.io/kedacore/keda"
KEDA_METRICS_SERVER_IMAGE_REPOSITORY = "ghcr.io/kedacore/keda-metrics-apiserver"
KEDA_WEBHOOKS_IMAGE_REPOSITORY = "ghcr.io/kedacore/keda-admission-webhooks"


def keda_images(version: str) -> dict[str, str]:
    """The chart's images by its values key (`image.<key>`): operator, metrics API server, admission webhooks."""
    return {
        "keda": f"{KEDA_OPERATOR_IMAGE_REPOSITORY}:{version}",
        "metricsApiServer": f"{KEDA_METRICS_SERVER_IMAGE_REPOSITORY}:{version}",
        "webhooks": f"{KEDA_WEBHOOKS_IMAGE_REPOSITORY}:{version}",
    }


# EKS GPU nodes: the AL2023 NVIDIA AMI has the driver; the device plugin advertises nvidia.com/gpu.
NVIDIA_DEVICE_PLUGIN_REPO = "https://nvidia.github.io/k8s-device-plugin"
NVIDIA_DEVICE_PLUGIN_VERSION = "0.17.1"

# EKS Kubernetes versions a stack may name for its control plane (cluster.eks.version). A new one is added
# here once EKS offers it (docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html).
EKS_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34")

# The Cluster Autoscaler scaling EKS node groups (GKE scales its own pools): the upstream chart
# (kubernetes/autoscaler, `cluster-autoscaler-chart-9.52.1`, 2025-10-20) and, per control-plane minor, the
# image release that matches it (the autoscaler supports only its own minor; kops' table, pkg/model/components
# clusterautoscaler.go, names the same patch releases).
CLUSTER_AUTOSCALER_CHART_REPO = "https://kubernetes.github.io/autoscaler"
CLUSTER_AUTOSCALER_CHART = "cluster-autoscaler"
CLUSTER_AUTOSCALER_CHART_VERSION = "9.52.1"
CLUSTER_AUTOSCALER_IMAGE_REPOSITORY = "registry.k8s.io/autoscaling/cluster-autoscaler"
CLUSTER_AUTOSCALER_TAGS = {
    "1.30": "v1.30.6",
    "1.31": "v1.31.4",
    "1.32": "v1.32.3",
    "1.33": "v1.33.1",
    "1.34": "v1.34.0",
}


# One Gateway in front of several serving stacks ---------------------------------------------------------
# Gateway API: the standard channel's CRDs (Gateway, HTTPRoute, ReferenceGrant, GatewayClass). v1.3.0 is the
# release the inference extension validates its own manifests against (GAIE v1.6.0 `hack/verify-manifests.sh`,
# GATEWAY_API_VERSION) and the one tests/fixtures/upstream/schemas/gateway-api/ holds; the newest upstream
# release is v1.6.1 (2026-07-16). The objects the program builds use v1 fields only (it builds no ReferenceGrant:
# each route sits beside its pool). GKE installs and manages these CRDs itself (`gateway_api_config`).
GATEWAY_API_VERSION = "v1.3.0"


# Body-based routing (BBR): the inference extension's ext_proc server that copies the body's `model` into a
# header the HTTPRoutes match. Its last release is GAIE v1.5.0 (2026-04-18): GAIE removed BBR from main before
# v1.6.0 (kubernetes-sigs/gateway-api-inference-extension#2959, "Cleanup BBR from main"; its README: moved to
# llm-d/llm-d-inference-payload-processor, which has no release yet), so no `body-based-routing` chart or `bbr`
# image exists at GAIE_VERSION (v1.6.x, which still pins the InferencePool CRD). The chart and its image share
# the tag; tests/fixtures/upstream/charts/body-based-routing-v1.5.0/ holds the chart at that tag.
BBR_VERSION = "v1.5.0"
BBR_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/body-based-routing"
BBR_CHART_REPOSITORY = BBR_CHART.rsplit("/", 1)[0] + "/"
BBR_IMAGE_REPOSITORY = "registry.k8s.io/gateway-api-inference-extension/bbr"

# Every chart repository the program installs from (the router's OCI registry, the cluster add-ons', the
# Gateway's BBR); the policy pack's `chart-registries` allows these and no other.
CHART_REPOSITORIES = (
    ROUTER_CHART.rsplit("/", 1)[0] + "/",
    NVIDIA_DEVICE_PLUGIN_REPO,
    KEDA_CHART_REPO,
    CLUSTER_AUTOSCALER_CHART_REPO,
    BBR_CHART_REPOSITORY,
)


def bbr_image(version: str) -> str:
    """The BBR server's image, released with its chart under the same tag."""
    return f"{BBR_IMAGE_REPOSITORY}:{version}"


# Gateway classes per platform. GKE's managed classes that GKE Inference Gateway supports (regional Application
# Load Balancers: external, and internal to the VPC; both need the region's proxy-only subnet); on an existing
# cluster, a Gateway controller the cluster's operators install beforehand: kgateway or Istio (GAIE v1.5.0
# `config/manifests/gateway/`: `istio`; its kgateway guide has moved to kgateway's `agentgateway` class).
GKE_GATEWAY_CLASSES = ("gke-l7-regional-external-managed", "gke-l7-rilb")
GKE_DEFAULT_GATEWAY_CLASS = "gke-l7-regional-external-managed"
EXISTING_CLUSTER_GATEWAY_CLASSES = ("kgateway", "istio")


# Every image this project pins (repositories where the tag follows a release): a cluster stack (`layer:
# cluster`) mirrors all their registries, since the serving stacks it will carry are not known when it is made.
PINNED_IMAGES: tuple[str, ...] = (
    EPP_IMAGE_REPOSITORY,
    CHART_ENVOY_IMAGE,
    f"{CHART_TOKENIZER_REGISTRY}/{CHART_TOKENIZER_REPOSITORY}",
    VLLM_CUDA_IMAGE,
    VLLM_ROCM_IMAGE,
    VLLM_TPU_IMAGE,
    SGLANG_IMAGE,
    MOONCAKE_IMAGE,
    XPU_NATIVE_IMAGE,
    XPU_LMCACHE_IMAGE,
    BUSYBOX_IMAGE,
    PAUSE_IMAGE,
    VERIFICATION_IMAGE,
    KEDA_OPERATOR_IMAGE_REPOSITORY,
    CLUSTER_AUTOSCALER_IMAGE_REPOSITORY,
    BBR_IMAGE_REPOSITORY,
    lmcache_image(LMCACHE_VERSION),
)
