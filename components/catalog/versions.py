"""Pinned versions and images: the one place a version lives. Every value is overridable per stack."""

from __future__ import annotations

# The llm-d router release the seeds were tested with: chart, EPP image and P/D sidecar share the tag.
ROUTER_VERSION = "v1.0.0"
ROUTER_CHART = "oci://ghcr.io/llm-d/charts/llm-d-router-standalone"

# Gateway API Inference Extension: the InferencePool CRD.
GAIE_VERSION = "v1.6.2"


def gaie_crds_url(version: str) -> str:
    """The release asset the seed applies (`v1-manifests.yaml`, the v1 InferencePool CRD)."""
    return (
        "https://github.com/kubernetes-sigs/gateway-api-inference-extension/"
        f"releases/download/{version}/v1-manifests.yaml"
    )


# Model server images (llm-d/llm-d guides at d557f83e, see shared/reference/llm-d-upstream.md).
VLLM_CUDA_IMAGE = "docker.io/vllm/vllm-openai:v0.26.0"
