"""Accelerator profiles: how a model server asks for its devices and how its pods are labelled."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog import versions


@dataclass(frozen=True)
class AcceleratorProfile:
    key: str  # the seed's ACCELERATOR_TYPE (tpu/v6 becomes tpu-v6)
    vendor: str  # llm-d.ai/accelerator-vendor
    variant: str  # llm-d.ai/accelerator-variant
    device_resource: str  # extended resource the pod requests per tensor-parallel rank
    vllm_image: str
    reference_hardware: str
    # Host memory a vLLM pod needs besides the CPU tier and /dev/shm: the API server process,
    # and per tensor-parallel rank a worker with its CUDA context and pinned staging buffers.
    host_memory_base_gib: int
    host_memory_per_rank_gib: int


ACCELERATORS: dict[str, AcceleratorProfile] = {
    p.key: p
    for p in (
        AcceleratorProfile(
            key="gpu",
            vendor="nvidia",
            variant="gpu",
            device_resource="nvidia.com/gpu",
            vllm_image=versions.VLLM_CUDA_IMAGE,
            reference_hardware="NVIDIA H100 80 GB",
            host_memory_base_gib=16,
            host_memory_per_rank_gib=8,
        ),
    )
}
