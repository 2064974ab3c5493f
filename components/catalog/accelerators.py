"""Accelerator profiles: how a model server asks for its devices, where it is scheduled, how it is labelled."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.catalog import labels, startup_figures, versions
from components.catalog.device_runtimes import CUDA, ROCM, XLA, XPU, DeviceRuntime
from components.catalog.gpu_product import A100_SXM4_80GB, H100_SXM, H200_SXM, GpuProduct
from components.catalog.kv_transport import CONNECTX6_200G, CONNECTX7_400G, ROCE_400G, KvTransport, nixl
from components.catalog.rates import (
    H100_DECODE,
    H200_DECODE,
    H200_GEMM_SHARE,
    H200_MEASURED,
    H200_PREFILL,
    H200_STEP_COSTS,
    NVLINK4,
    PCIE5_X16,
    TFLOPS,
    TPU_PREFILL,
    AcceleratorRates,
    Figure,
    HostLink,
    Interconnect,
    pcie5_scaled,
)
from components.catalog.startup_figures import GPU_WARM_COMPILE, H100_LOAD, LoadProfile, SizedImage
from components.units import MB, ByteSize, GiB, MiB


@dataclass(frozen=True, kw_only=True)
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
    # Which GPU its nodes have, by their labels: set where other profiles share its device resource (gpu_product.py).
    product: GpuProduct | None = None
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
    # Why its guide runs the vLLM image as the image's root user (components/specs/security.py exempts its
    # model-server pods by this profile's key); empty: they run as the non-root UID.
    root_reason: str = ""
    # Images pinned here rather than in versions.py, with their sizes: an accelerator whose vLLM (or LMCache) image
    # is its own names it here and points `vllm_image` (`lmcache_image`) at its reference.
    own_images: tuple[SizedImage, ...] = ()
    # The LMCache connector: the guide's image where it differs from `vllm_image`, and its sub-guide label.
    lmcache_image: str | None = None
    lmcache_subguide: str | None = None
    # Precise prefix routing: the vLLM image its precise guide pins, where it differs from `vllm_image`.
    precise_vllm_image: str | None = None
    # Its cold start: weights from disk into device memory and the compile/warm-up (stacks/planning/cold_starts.py),
    # and the share of that compile a warm compile cache leaves.
    load: LoadProfile
    warm_compile_ratio: float
    # One device's memory (a TPU chip's HBM) in bytes as the device reports it to the engine (nvidia-smi,
    # rocm-smi, torch.xpu, the TPU runtime's HBM limit), and where the figure comes from: what the weights, the
    # engine's working memory and the HBM KV tier share (components/formulas/hbm.py).
    device_memory: ByteSize
    device_memory_from: str
    # What the engine's runtime keeps out of the KV pool beside the weights (components/catalog/device_runtimes.py).
    runtime: DeviceRuntime = CUDA
    kv_transport: KvTransport | None = None  # the P/D handoff its image carries (kv_transport.py); None: no P/D
    # One device's memory bandwidth (bytes/s, the data sheet's): a decode step reads every weight once, so
    # a sequence's time per output token is about weights per device / this (the tier replay's queue model).
    memory_bandwidth: float
    # How fast it computes and loads (components/catalog/rates.py: each figure cited, `assumed` where no
    # measurement or data sheet gives it): what the payoff table and the `tiers-beat-recompute` rule judge by.
    rates: AcceleratorRates

    @property
    def is_tpu(self) -> bool:
        return self.tpu_accelerator is not None


TPU_DECODE = H200_DECODE.assumed_for("the H200's measured shares and per-layer cost: no TPU decode measurement")


def _link(name: str, per_direction: float, bandwidth_source: str) -> Interconnect:
    """Links no all-reduce latency is published for: the data sheet's bandwidth (bytes/s, one direction), and the
    latency of vLLM's custom all-reduce over NVLink (assumed)."""
    source = f"{bandwidth_source}; latency as vLLM's custom all-reduce over NVLink (sgl-project/sglang#2904)"
    return Interconnect(name, per_direction, NVLINK4.latency_s, source, assumed=True)


_TPU_ROOT = "the guide runs vllm-tpu as the image's root user and mounts no writable home for it"

# The vLLM TPU offload connector counts its CPU tier in KV blocks of this many tokens.
TPU_KV_BLOCK_TOKENS = 128


def _tpu(
    *,
    key: str,
    rates: AcceleratorRates,
    memory_bandwidth: float,
    device_memory: ByteSize,
    device_memory_from: str,
    reference_hardware: str,
    devices_per_node: int,
    tpu_accelerator: str,
    tpu_topology: str,
) -> AcceleratorProfile:
    """A Google TPU: the chip's own figures, and what every TPU shares (XLA's runtime, the vllm-tpu image, the
    `google.com/tpu` resource, XLA's precompile and its cache, the offload connector's KV blocks, the guide's root
    user)."""
    return AcceleratorProfile(
        key=key,
        rates=rates,
        memory_bandwidth=memory_bandwidth,
        device_memory=device_memory,
        device_memory_from=device_memory_from,
        reference_hardware=reference_hardware,
        devices_per_node=devices_per_node,
        tpu_accelerator=tpu_accelerator,
        tpu_topology=tpu_topology,
        kv_block_tokens=TPU_KV_BLOCK_TOKENS,
        root_reason=_TPU_ROOT,
        runtime=XLA,
        vendor="google",
        variant="tpu",
        vllm_image=versions.VLLM_TPU_IMAGE,
        device_resource="google.com/tpu",
        load=startup_figures.TPU_LOAD,
        warm_compile_ratio=startup_figures.TPU_WARM_COMPILE,
    )


ACCELERATORS: dict[str, AcceleratorProfile] = {
    p.key: p
    for p in (
        AcceleratorProfile(
            key="gpu",
            rates=AcceleratorRates(
                Figure(989.4 * TFLOPS, "NVIDIA H100 SXM datasheet: 1,979 TFLOPS bf16 with sparsity, half dense"),
                H200_PREFILL,
                HostLink("PCIe Gen5 x16", PCIE5_X16, f"{H200_MEASURED}; the H100 has the same link"),
                H100_DECODE,
                NVLINK4,
            ),
            memory_bandwidth=3.35e12,  # H100 SXM5 data sheet: 3.35 TB/s HBM3
            vendor="nvidia",
            variant="gpu",
            reference_hardware="NVIDIA H100 80 GB",
            vllm_image=versions.VLLM_CUDA_IMAGE,
            precise_vllm_image=versions.VLLM_PRECISE_CUDA_IMAGE,
            device_resource="nvidia.com/gpu",
            product=H100_SXM,
            device_memory=ByteSize(81_559 * MiB),
            device_memory_from="nvidia-smi on an H100 80GB HBM3: 81,559 MiB"
            " (huggingface/text-embeddings-inference#350)",
            load=H100_LOAD,
            warm_compile_ratio=GPU_WARM_COMPILE,
            kv_transport=nixl(CONNECTX7_400G),
        ),
        AcceleratorProfile(
            key="h200",
            rates=AcceleratorRates(
                Figure(989.4 * TFLOPS, "NVIDIA H200 SXM data sheet: 1,979 TFLOPS bf16 with sparsity, half dense"),
                H200_PREFILL,
                HostLink("PCIe Gen5 x16", PCIE5_X16, H200_MEASURED),
                H200_DECODE,
                NVLINK4,
            ),
            memory_bandwidth=4.8e12,  # H200 SXM data sheet: 4.8 TB/s HBM3e
            vendor="nvidia",
            variant="gpu",
            reference_hardware="NVIDIA H200 141 GB",
            vllm_image=versions.VLLM_CUDA_IMAGE,
            device_resource="nvidia.com/gpu",
            product=H200_SXM,
            device_memory=ByteSize(143_771 * MiB),
            device_memory_from=f"nvidia-smi on an NVIDIA H200: 143,771 MiB ({H200_STEP_COSTS}, `machine`); the data"
            " sheet says 141 GB HBM3e",
            load=H100_LOAD,
            warm_compile_ratio=GPU_WARM_COMPILE,
            kv_transport=nixl(CONNECTX7_400G),
        ),
        AcceleratorProfile(
            key="a100",
            rates=AcceleratorRates(
                Figure(312 * TFLOPS, "NVIDIA A100 data sheet: 312 TFLOPS bf16 dense (624 with sparsity)"),
                H200_PREFILL.scaled(
                    1.0,
                    "the H200 fit: no published A100 forward-pass measurement; cuBLAS bf16 GEMMs reach a like share"
                    " of either chip's peak",
                ),
                HostLink(
                    "PCIe Gen4 x16",
                    pcie5_scaled(0.5),
                    "half the H200 Gen5 x16 curve: the A100 SXM links to its host at PCIe Gen4 x16 (data sheet)",
                    assumed=True,
                ),
                H200_DECODE.assumed_for("the H200's measured shares and per-layer cost: no A100 decode measurement"),
                _link("NVLink 3", 300e9, "NVIDIA A100 data sheet: NVLink 600 GB/s (both directions)"),
            ),
            memory_bandwidth=2.039e12,  # A100 80GB SXM data sheet: 2,039 GB/s HBM2e
            vendor="nvidia",
            variant="gpu",
            reference_hardware="NVIDIA A100 80 GB SXM",
            vllm_image=versions.VLLM_CUDA_IMAGE,
            device_resource="nvidia.com/gpu",
            product=A100_SXM4_80GB,
            device_memory=ByteSize(81_920 * MiB),
            device_memory_from="nvidia-smi on an A100-SXM4-80GB: 81,920 MiB (as public nvidia-smi logs print it);"
            " the data sheet says 80 GB HBM2e",
            load=H100_LOAD,
            warm_compile_ratio=GPU_WARM_COMPILE,
            kv_transport=nixl(CONNECTX6_200G),
        ),
        AcceleratorProfile(
            key="amd",
            rates=AcceleratorRates(
                Figure(1307.4 * TFLOPS, "AMD Instinct MI300X data sheet: 1,307.4 TFLOPS bf16 dense"),
                H200_PREFILL.scaled(
                    0.5 / H200_GEMM_SHARE,
                    f"the H200 fit x 0.5/{H200_GEMM_SHARE:g}: public MI300X bf16 GEMM results sit near half of peak,"
                    f" where the H200's ran at {H200_GEMM_SHARE:g}",
                ),
                HostLink(
                    "PCIe Gen5 x16",
                    PCIE5_X16,
                    "the NVIDIA H200 curve: the MI300X host interface is the same PCIe Gen5 x16 (data sheet)",
                    assumed=True,
                ),
                H200_DECODE.assumed_for("the H200's measured shares and per-layer cost: no MI300X decode measurement"),
                _link(
                    "Infinity Fabric (xGMI)",
                    64e9,
                    "MI300X data sheet: 128 GB/s a link (both directions), one link a GPU pair",
                ),
            ),
            memory_bandwidth=5.3e12,  # MI300X data sheet: 5.3 TB/s
            vendor="amd",
            variant="gpu",
            reference_hardware="AMD Instinct MI300X",
            vllm_image=versions.VLLM_ROCM_IMAGE,
            device_resource="amd.com/gpu",
            device_memory=ByteSize(196_592 * MiB),
            device_memory_from="rocm-smi --showmeminfo vram on an MI300X: 206,141,652,992 B (196,592 MiB;"
            " ROCm/legacy-rocm-build#4750); the data sheet says 192 GB HBM3",
            runtime=ROCM,
            rocm_swap_patch=True,
            sets_user_env=False,
            hf_token_optional=True,
            root_reason="the guide's ROCm overlay runs as root (runAsUser 0, it patches vLLM in site-packages);"
            " /dev/kfd and /dev/dri belong to the host's render group",
            load=LoadProfile(750 * MB, 180, "as H100, with ROCm's longer graph capture (x2)"),
            warm_compile_ratio=GPU_WARM_COMPILE,
            kv_transport=nixl(ROCE_400G),
        ),
        AcceleratorProfile(
            key="xpu",
            rates=AcceleratorRates(
                Figure(98.3 * TFLOPS, "Intel Arc Pro B60: 197 INT8 TOPS (XMX), bf16 at half the INT8 rate"),
                H200_PREFILL.scaled(
                    0.5 / H200_GEMM_SHARE,
                    f"the H200 fit x 0.5/{H200_GEMM_SHARE:g}: no published prefill measurement for the B60, taken as"
                    f" half of peak where the H200's GEMMs ran at {H200_GEMM_SHARE:g}",
                ),
                HostLink(
                    "PCIe Gen5 x8",
                    pcie5_scaled(0.5),
                    "half the H200 Gen5 x16 curve: the B60 links at PCIe 5.0 x8",
                    assumed=True,
                ),
                H200_DECODE.assumed_for("the H200's measured shares and per-layer cost: no B60 decode measurement"),
                _link("PCIe Gen5 x8", 32e9, "the B60 has no Xe Link: peers over PCIe 5.0 x8, 32 GB/s each direction"),
            ),
            memory_bandwidth=456e9,  # Arc Pro B60: 456 GB/s GDDR6
            vendor="intel",
            variant="xpu",
            reference_hardware="Intel Arc Pro B60",
            vllm_image=versions.XPU_NATIVE_IMAGE,
            device_resource=None,
            dra_device_class="gpu.intel.com",
            devices_per_node=4,
            device_memory=ByteSize(24_480 * MiB),
            device_memory_from="torch.xpu on an Arc Pro B60: total_memory=24480MB (MiB: global_mem_size / 2^20;"
            " intel/torch-xpu-ops#5072); the data sheet says 24 GB GDDR6",
            runtime=XPU,
            kv_block_tokens=64,  # the guide's Intel XPU overlays run vLLM with `--block-size 64`
            root_reason="Intel GPU render nodes belong to the host's render group, whose GID varies per host (the"
            " guide's 107 is the image's); the guide runs the image as its root user",
            cpu_limit="8",
            extra_env=(
                ("FI_PROVIDER_PATH", "/opt/intel/oneapi/mpi/latest/opt/mpi/libfabric/lib/prov"),
                ("FI_PROVIDER", "tcp"),
            ),
            intel_xpu_flags=True,
            lmcache_image=versions.XPU_LMCACHE_IMAGE,
            lmcache_subguide=f"{labels.GUIDE}-xpu-lmcache",
            load=LoadProfile(500 * MB, 180, "slower host-to-device path, x2 compile (estimate)"),
            warm_compile_ratio=GPU_WARM_COMPILE,
        ),
        _tpu(
            key="tpu-v5p",
            rates=AcceleratorRates(
                Figure(459 * TFLOPS, "Google Cloud TPU v5p docs: peak compute per chip (bf16) 459 TFLOPs"),
                TPU_PREFILL,
                HostLink(
                    "PCIe Gen4 x16",
                    pcie5_scaled(0.5),
                    "the v5p host link is not published: taken as PCIe Gen4 x16, half the H200 Gen5 x16 curve",
                    assumed=True,
                ),
                TPU_DECODE,
                _link("ICI", 300e9, "Cloud TPU v5p: ICI 4,800 Gbps per chip, half each way"),
            ),
            memory_bandwidth=2.765e12,  # Cloud TPU v5p: 2,765 GB/s per chip
            device_memory=ByteSize(98_038 * MiB),
            device_memory_from="XLA's HBM limit on a v5p chip: 95.74 GiB, to the MiB (XLA's out-of-memory report"
            " 'Used 112.37G of 95.74G hbm'; memory_stats in AI-Hypercomputer/maxtext#2232: '44.6 / 95.74');"
            " the data sheet says 95 GB",
            reference_hardware="Google TPU v5p (ct5p-hightpu-4t, 4 chips)",
            devices_per_node=4,
            tpu_accelerator="tpu-v5p-slice",
            tpu_topology="2x2x1",
        ),
        _tpu(
            key="tpu-v6",
            rates=AcceleratorRates(
                Figure(918 * TFLOPS, "Google Cloud TPU v6e docs: peak compute per chip (bf16) 918 TFLOPs"),
                TPU_PREFILL,
                HostLink(
                    "PCIe Gen5",
                    PCIE5_X16,
                    "TPU v6e docs: each chip connects to the host through PCIe Gen5 (width not published: the H200"
                    " x16 curve)",
                    assumed=True,
                ),
                TPU_DECODE,
                _link("ICI", 224e9, "Cloud TPU v6e: ICI 3,584 Gbps per chip, half each way"),
            ),
            memory_bandwidth=1.64e12,  # Cloud TPU v6e: 1,640 GB/s per chip
            device_memory=ByteSize(33_550_237_696),
            device_memory_from="the TPU runtime's HBM limit on a v6e chip: 33,550,237,696 B (31.25 GiB; vLLM's"
            " usage report, vllm-project/vllm#16211; XLA reports '31.25G hbm'); the data sheet says 32 GB",
            reference_hardware="Google TPU v6e (ct6e-standard-8t, 8 chips)",
            devices_per_node=8,
            tpu_accelerator="tpu-v6e-slice",
            tpu_topology="2x4",
        ),
        _tpu(
            key="tpu-v7",
            rates=AcceleratorRates(
                Figure(2307 * TFLOPS, "Google Cloud TPU7x (Ironwood) docs: peak compute per chip (BF16) 2307 TFLOPs"),
                TPU_PREFILL,
                HostLink(
                    "PCIe Gen5 x16",
                    PCIE5_X16,
                    "the TPU7x host link is not published: taken as PCIe Gen5 x16, the H200 curve",
                    assumed=True,
                ),
                TPU_DECODE,
                _link("ICI", 600e9, "Cloud TPU7x (Ironwood): ICI 1.2 TB/s per chip, both directions, half each way"),
            ),
            memory_bandwidth=7.37e12,  # Cloud TPU7x: 7.37 TB/s per chip
            device_memory=ByteSize(2 * 96 * GiB),
            device_memory_from="tpu_inference's HBM limit for a TPU7x JAX device (a TensorCore): 96 GiB, 2 per chip"
            " (utils.get_device_hbm_limit); no measured limit found (v5p and v6e measure 0.3-0.8 GiB under theirs);"
            " the data sheet says 192 GB",
            reference_hardware="Google TPU v7 (tpu7x, 4 chips, 2 TensorCores each)",
            devices_per_node=4,
            tpu_accelerator="tpu7x",
            tpu_topology="2x2x1",
        ),
    )
}
