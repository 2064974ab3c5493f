"""Figures of the cold-start model (components/specs/startup.py) and of the cloud resources' creation time.

Each figure is an estimate on the slow side, with where it comes from. The model is only as good as
these: a stack whose real start is slower still fails its `pulumi up`, with the model's parts in the
summary to say which figure was wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.units import GB, MB

MINUTE = 60

# Compressed size of the images the model servers and daemons pull (what a cold node downloads).
# vllm/vllm-openai: 10-12 GB (measured upstream); the others are the same class of
# CUDA/ROCm/XPU/JAX vLLM images, rounded up.
IMAGE_BYTES: dict[str, int] = {
    "docker.io/vllm/vllm-openai": 12 * GB,
    "docker.io/vllm/vllm-tpu": 10 * GB,
    "ghcr.io/llm-d/llm-d-rocm": 20 * GB,
    "ghcr.io/llm-d/llm-d-xpu-dev": 16 * GB,
    "docker.io/lmsysorg/sglang": 14 * GB,
    "lmcache/vllm-openai": 14 * GB,
    "ghcr.io/llm-d/mooncake-master-store": 3 * GB,
    "docker.io/library/python": 50 * MB,
    # The P/D routing sidecar: one Go binary on a distroless base, well under this.
    "ghcr.io/llm-d/llm-d-router-disagg-sidecar": 100 * MB,
    # Docker Hub's busybox (all variants) is about 2 MB, registry.k8s.io's pause under 1 MB.
    "docker.io/library/busybox": 2 * MB,
    "registry.k8s.io/pause": 1 * MB,
}


@dataclass(frozen=True)
class SizedImage:
    """An image pinned where what runs it is defined (an accelerator profile's `own_images`, a connector's), with
    its compressed size (what a cold node downloads) and where that figure comes from: the images above are the
    catalog's shared ones, pinned in versions.py."""

    reference: str  # a pinned reference (tag or digest)
    compressed_bytes: int
    size_from: str


# An image the catalog does not know (`cache.image`): assume the largest model-server image.
UNKNOWN_IMAGE_BYTES = 20 * GB

# Registry pull including layer extraction on a cold node: 60 MB/s (conservative for the large
# single layers of these images; extraction, not the network, is the limit).
PULL_BYTES_PER_SECOND = 60 * MB

# GKE image streaming (images from Artifact Registry on pools with it on) starts a container before its
# image is on the node and fetches the files it opens on demand, the rest in the background. What a
# model server waits for is then what it reads at start (Python, PyTorch, the CUDA or XLA libraries it
# loads), assumed a quarter of the image at the same rate. Not for the first pull of an image: "you
# might not notice the benefits of Image streaming during the first pull of an eligible image" (GKE,
# use image streaming, limitations), so the first pod and every await budget keep the whole pull.
STREAMED_IMAGE_READ_RATIO = 0.25


@dataclass(frozen=True)
class WeightSource:
    """Where a model server reads its weights from, and how fast one pod gets them."""

    name: str
    bytes_per_second: int
    why: str


# Hugging Face Hub through huggingface_hub's default downloader (no hf_transfer): 100 MB/s per pod,
# so Qwen3-32B's 65.6 GB take about 11 minutes: more than the engine's 10-minute default await alone.
HUGGING_FACE = WeightSource("huggingface", 100 * MB, "Hugging Face Hub download, 100 MB/s per pod")


@dataclass(frozen=True)
class LoadProfile:
    """Weights from local disk (or page cache) into device memory, then compile/warm-up, per accelerator."""

    load_bytes_per_second: int
    compile_seconds: int
    why: str


# Each accelerator's LoadProfile is a field of its profile (components/catalog/accelerators.py).

# Margin on top of the modeled cold start: half of it, and never less than 5 minutes.
MARGIN_RATIO = 0.5
MARGIN_FLOOR_SECONDS = 5 * MINUTE

# Per-node daemons (LMCache server, Mooncake client): the process itself starts in seconds; the
# pinned host memory they allocate up front (the whole L1 / segment) is touched at about 2 GB/s.
DAEMON_START_SECONDS = 60
PIN_BYTES_PER_SECOND = 2 * GB

# Cloud resources: each create timeout exceeds the documented worst case of the creation (each type's
# `create_worst_seconds`, components/catalog/cloud_resources.py) by half.
CLOUD_TIMEOUT_RATIO = 1.5


# NVIDIA: calibrated to the upstream measurement of about 3 minutes from container start
# to serving for Qwen3-32B on H100, excluding pull and download: 65.6 GB / 0.75 GB/s = 87 s of
# load + 90 s of torch.compile and CUDA graph capture.
H100_LOAD = LoadProfile(750 * MB, 90, "Qwen3-32B on H100: ~3 min from start to serving (upstream)")
# JAX/XLA precompiles every shape bucket at start (SKIP_JAX_PRECOMPILE=0 in the guide).
TPU_LOAD = LoadProfile(500 * MB, 900, "XLA precompilation of every bucket (SKIP_JAX_PRECOMPILE=0)")
# A warm compile cache skips compilation but not what is not cached. vLLM on GPUs: torch.compile's
# artifacts load from VLLM_CACHE_ROOT, CUDA graphs are still captured at every start (~30 s of the 90 s
# the lifecycle model calibrates for Qwen3-32B on H100; estimate). TPU: the XLA executables load
# from VLLM_XLA_CACHE_PATH instead of compiling every bucket ("vLLM can load these graphs directly
# from the cache", vLLM docs/configuration/tpu.md): a tenth of the precompile (estimate).
GPU_WARM_COMPILE = 1 / 3
TPU_WARM_COMPILE = 0.1
