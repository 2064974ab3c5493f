"""Accelerator profiles: how a model server asks for its devices, where it is scheduled, how it is labelled."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.catalog import labels, versions


@dataclass(frozen=True)
class AcceleratorProfile:
    key: str  # the seed's ACCELERATOR_TYPE (tpu/v6 becomes tpu-v6)
    vendor: str  # llm-d.ai/accelerator-vendor
    variant: str  # llm-d.ai/accelerator-variant
    reference_hardware: str
    vllm_image: str
    # How devices are requested: an extended resource (`nvidia.com/gpu: N`) or, for Intel XPU,
    # a DRA ResourceClaimTemplate of N devices of `dra_device_class`.
    device_resource: str | None
    dra_device_class: str | None = None
    devices_per_node: int = 8
    # TPU: chips per pod and the GKE node selectors of the slice; vLLM shards over TensorCores.
    tpu_accelerator: str | None = None
    tpu_topology: str | None = None
    # Host memory a model-server pod needs besides its CPU tier and /dev/shm: the API server
    # process and, per tensor-parallel rank, a worker with its device context and staging buffers.
    host_memory_base_gib: int = 16
    host_memory_per_rank_gib: int = 8
    # Tokens per KV block of the model server on this accelerator, where the tier is counted in blocks.
    kv_block_tokens: int = 16
    cpu_request: str = "8"
    cpu_limit: str = "16"
    extra_env: tuple[tuple[str, str], ...] = field(default=())
    # How its vLLM image serves (the guide's overlays): Intel XPU's flags (dtype, block size, sequences);
    # ROCm's Triton swap-threshold patch under native CPU offloading; whether the image needs `USER`
    # set (its UID has no passwd entry); whether the Hugging Face token may be absent.
    intel_xpu_flags: bool = False
    rocm_swap_patch: bool = False
    sets_user_env: bool = True
    hf_token_optional: bool = False
    # The LMCache connector: the guide's image where it differs from `vllm_image`, and its sub-guide label.
    lmcache_image: str | None = None
    lmcache_subguide: str | None = None

    @property
    def is_tpu(self) -> bool:
        return self.tpu_accelerator is not None


# The vLLM TPU offload connector counts its CPU tier in KV blocks of this many tokens.
TPU_KV_BLOCK_TOKENS = 128

_TPU = {
    "vendor": "google",
    "variant": "tpu",
    "vllm_image": versions.VLLM_TPU_IMAGE,
    "device_resource": "google.com/tpu",
}

ACCELERATORS: dict[str, AcceleratorProfile] = {
    p.key: p
    for p in (
        AcceleratorProfile(
            key="gpu",
            vendor="nvidia",
            variant="gpu",
            reference_hardware="NVIDIA H100 80 GB",
            vllm_image=versions.VLLM_CUDA_IMAGE,
            device_resource="nvidia.com/gpu",
        ),
        AcceleratorProfile(
            key="amd",
            vendor="amd",
            variant="gpu",
            reference_hardware="AMD Instinct MI300X",
            vllm_image=versions.VLLM_ROCM_IMAGE,
            device_resource="amd.com/gpu",
            rocm_swap_patch=True,
            sets_user_env=False,
            hf_token_optional=True,
        ),
        AcceleratorProfile(
            key="xpu",
            vendor="intel",
            variant="xpu",
            reference_hardware="Intel Arc Pro B60",
            vllm_image=versions.XPU_NATIVE_IMAGE,
            device_resource=None,
            dra_device_class="gpu.intel.com",
            devices_per_node=4,
            cpu_limit="8",
            extra_env=(
                ("FI_PROVIDER_PATH", "/opt/intel/oneapi/mpi/latest/opt/mpi/libfabric/lib/prov"),
                ("FI_PROVIDER", "tcp"),
            ),
            intel_xpu_flags=True,
            lmcache_image=versions.XPU_LMCACHE_IMAGE,
            lmcache_subguide=f"{labels.GUIDE}-xpu-lmcache",
        ),
        AcceleratorProfile(
            key="tpu-v5p",
            reference_hardware="Google TPU v5p (ct5p-hightpu-4t, 4 chips)",
            devices_per_node=4,
            tpu_accelerator="tpu-v5p-slice",
            tpu_topology="2x2x1",
            kv_block_tokens=TPU_KV_BLOCK_TOKENS,
            **_TPU,  # type: ignore[arg-type]
        ),
        AcceleratorProfile(
            key="tpu-v6",
            reference_hardware="Google TPU v6e (ct6e-standard-8t, 8 chips)",
            devices_per_node=8,
            tpu_accelerator="tpu-v6e-slice",
            tpu_topology="2x4",
            kv_block_tokens=TPU_KV_BLOCK_TOKENS,
            **_TPU,  # type: ignore[arg-type]
        ),
        AcceleratorProfile(
            key="tpu-v7",
            reference_hardware="Google TPU v7 (tpu7x, 4 chips, 2 TensorCores each)",
            devices_per_node=4,
            tpu_accelerator="tpu7x",
            tpu_topology="2x2x1",
            kv_block_tokens=TPU_KV_BLOCK_TOKENS,
            **_TPU,  # type: ignore[arg-type]
        ),
    )
}
