"""What the vLLM connectors share (the native OffloadingConnector, LMCache in-process and as a server,
MooncakeStore): vLLM's manifests, its argument layout (upstream's or the Intel XPU overlays'), the XPU
overlays' device-memory share, and the filesystem tier's shared claim."""

from __future__ import annotations

from components.catalog import labels
from components.manifest import Manifest
from components.specs.connectors.interface import Connector
from components.specs.servers.base import GuideLimits, ServerSpec, files_storage_mount, files_storage_volume
from components.specs.servers.limits import fraction_text, limit_args, limits
from components.specs.servers.vllm import vllm_manifests

# Intel XPU serving flags of the guide's overlays.
XPU_DTYPE_ARGS = ["--dtype", "bfloat16", "--block-size", "64"]
XPU_TAIL_ARGS = ["--max-num-seqs", "128"]
XPU_LOG_ARGS = ["--uvicorn-log-level", "warning"]
XPU_MEMORY_FRACTION = 0.85


def vllm_layout(spec: ServerSpec, model: list[str], tp: str, kv: list[str], extra: list[str]) -> list[str]:
    """vLLM's arguments in the guide's order: the Intel XPU overlays' or upstream's."""
    if spec.accelerator.intel_xpu_flags:
        return [
            *model,
            *XPU_DTYPE_ARGS,
            tp,
            "--gpu-memory-utilization",
            fraction_text(limits(spec).memory_fraction),
            *kv,
            *extra,
            *XPU_TAIL_ARGS,
            *XPU_LOG_ARGS,
            *limit_args(spec),
        ]
    return [*model, f"--port={labels.MODEL_SERVER_PORT}", tp, *kv, *extra, *limit_args(spec)]


def shared_tier_volumes(spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
    """The filesystem tier's shared claim and its mount, where the pod has the tier."""
    if not spec.filesystem_tier:
        return [], []
    return [files_storage_volume()], [files_storage_mount(spec)]


class VllmConnector(Connector):
    """A connector of vLLM on an accelerator's vLLM image: the family's defaults."""

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        return vllm_manifests(spec)

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        """The Intel XPU overlays write the device-memory share."""
        if spec.accelerator.intel_xpu_flags:
            return GuideLimits(
                memory_fraction=(XPU_MEMORY_FRACTION, "the Intel XPU overlays' `--gpu-memory-utilization`")
            )
        return GuideLimits()

    def vllm_args(self, spec: ServerSpec, model: list[str], tp: str, kv: list[str]) -> list[str]:
        return vllm_layout(spec, model, tp, kv, [])

    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
        """The shared tier's claim, where the pod has the tier."""
        return shared_tier_volumes(spec)
