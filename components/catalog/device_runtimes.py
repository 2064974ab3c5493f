"""How the engine's device runtime keeps working memory out of the KV pool, per runtime (CUDA, ROCm, Level Zero,
XLA): what the HBM budget (components/formulas/hbm.py) takes beside the weights.

vLLM on a GPU (CUDA, ROCm, XPU) runs one full batch before it sizes the pool and keeps that peak (activations,
the sampler's logits) and the memory outside torch (context, communication buffers, captured graphs) out of it.
vLLM on a TPU (tpu_inference) runs no such batch: the pool is the HBM limit x the share, less what is in use once
the weights are loaded; XLA's compiled programs run in the rest (1 - share), and the runtime's own region lies
outside the limit the device reports.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.units import ByteSize, GiB


@dataclass(frozen=True, kw_only=True)
class DeviceRuntime:
    name: str
    # Per device, beside the weights and (where profiled) the activations: what the runtime holds outside the
    # engine's allocator. An estimate where no measurement is cited.
    reserve: ByteSize
    reserve_from: str
    # Whether the engine measures a full batch's activation peak and keeps it out of the KV pool.
    profiles_activations: bool
    sizing_from: str  # where the engine sizes its pool this way


_VLLM_GPU_SIZING = "vLLM's gpu_worker.determine_available_memory, after a profile run of one full batch"

CUDA = DeviceRuntime(
    name="CUDA",
    reserve=ByteSize(2 * GiB),
    reserve_from="estimate: the CUDA context, NCCL buffers and captured CUDA graphs; vLLM logs the graphs' share"
    " at start ('Graph capturing finished ... took X GiB', about 0.5-1.5 GiB for a 32B model)",
    profiles_activations=True,
    sizing_from=_VLLM_GPU_SIZING,
)
ROCM = DeviceRuntime(
    name="ROCm",
    reserve=ByteSize(2 * GiB),
    reserve_from="estimate, as CUDA's: the HIP context, RCCL buffers and captured HIP graphs",
    profiles_activations=True,
    sizing_from=_VLLM_GPU_SIZING,
)
XPU = DeviceRuntime(
    name="XPU (Level Zero)",
    reserve=ByteSize(1 * GiB),
    reserve_from="estimate: the Level Zero context and oneCCL buffers; vLLM's XPU worker runs eager (no graphs)",
    profiles_activations=True,
    sizing_from="vLLM's xpu_worker.determine_available_memory, after the GPU worker's profile run",
)
XLA = DeviceRuntime(
    name="XLA (TPU)",
    reserve=ByteSize(0),
    reserve_from="XLA's compiled programs run in the (1 - share) rest, and the runtime's own region is outside"
    " the HBM limit the device reports",
    profiles_activations=False,
    sizing_from="tpu_inference's tpu_worker.determine_available_memory: HBM limit x share - bytes in use after"
    " the weights load (no profile run)",
)
