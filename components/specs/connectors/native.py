"""vLLM's native OffloadingConnector: a CPU tier, and a filesystem tier below it through
TieringOffloadingSpec (on the shared claim)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from components.manifest import Manifest
from components.specs import sizing
from components.specs.connectors.interface import (
    FILES_STORAGE,
    Choice,
    Connector,
    SizingInputs,
    shared_tier_volumes,
    vllm_layout,
)
from components.specs.servers.base import empty_dir, env_var

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

# vLLM's TieringOffloadingSpec: offloaded block size and the filesystem tier's I/O threads (the guide's values).
TIERING_BLOCK_TOKENS = 256
FS_IO_THREADS = 16
# ROCm: CPU->GPU loads of native offloading take the fast Triton path below this many bytes per
# block; the guide raises it from 28 KiB to 40 KiB for Qwen3-32B's blocks.
ROCM_SWAP_KERNEL = "/usr/local/lib/python3.12/dist-packages/vllm/v1/kv_offload/cpu/swap_blocks_triton.py"
ROCM_SWAP_THRESHOLD = ("28 * 1024", "40 * 1024")


def offloading_connector(tier: sizing.TierSizing, filesystem_tier: bool) -> dict[str, Any]:
    """vLLM's native OffloadingConnector; with a filesystem tier, through TieringOffloadingSpec."""
    cpu_bytes = int(tier.knobs["cpu_bytes_to_use"])
    extra: dict[str, Any] = {"cpu_bytes_to_use": cpu_bytes}
    if filesystem_tier:
        extra = {
            "spec_name": "TieringOffloadingSpec",
            "cpu_bytes_to_use": cpu_bytes,
            "block_size": TIERING_BLOCK_TOKENS,
            "secondary_tiers": [
                {
                    "type": "fs",
                    "root_dir": FILES_STORAGE,
                    "n_read_threads": FS_IO_THREADS,
                    "n_write_threads": FS_IO_THREADS,
                }
            ],
        }
    return {"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra}


class Native(Connector):
    key = "native"
    vllm_offload_metrics = True

    def size(self, inputs: SizingInputs) -> tuple[sizing.TierSizing, sizing.MooncakeClientSizing | None]:
        i = inputs
        return sizing.size_native_cpu_tier(i.model, i.accelerator, i.tensor_parallelism, i.tier), None

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        if choice.filesystem_tier:
            return TIERING_BLOCK_TOKENS, "TieringOffloadingSpec `block_size`"
        return super().transfer_block(choice)

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        return offloading_connector(spec.sizing, spec.filesystem_tier)

    def vllm_args(self, spec: ServerSpec, model: list[str], tp: str, kv: list[str]) -> list[str]:
        extra = ["--disable-hybrid-kv-cache-manager"] if spec.model.hybrid_attention else []
        return vllm_layout(spec, model, tp, kv, extra)

    def command(self, spec: ServerSpec, args: list[str]) -> tuple[list[str], list[str]]:
        if spec.accelerator.rocm_swap_patch and not spec.filesystem_tier:
            old, new = ROCM_SWAP_THRESHOLD
            pattern = old.replace("*", "\\*")  # a literal `*` in the sed pattern
            patch = (
                f"sed -i 's/THRESHOLD_BYTES = {pattern}/THRESHOLD_BYTES = {new}/' {ROCM_SWAP_KERNEL}"
                ' || echo "WARNING: Triton threshold patch skipped; the fast CPU-to-GPU load path may not engage"'
            )
            return ["/bin/bash", "-c"], [f"{patch}; exec vllm serve {shlex.join(args)}"]
        return super().command(spec, args)

    def env(self, spec: ServerSpec) -> list[Manifest]:
        if spec.filesystem_tier:  # every pod must hash blocks alike to share the filesystem tier
            return [env_var("PYTHONHASHSEED", "42")]
        return []

    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
        if not spec.filesystem_tier:
            return [], []
        volumes = [empty_dir("workspace"), empty_dir("pip-user-site")]
        mounts: list[Manifest] = [
            {"name": "workspace", "mountPath": "/workspace"},
            {"name": "pip-user-site", "mountPath": "/.local"},
        ]
        tier_volumes, tier_mounts = shared_tier_volumes(spec)
        return volumes + tier_volumes, mounts + tier_mounts


NATIVE = Native()
