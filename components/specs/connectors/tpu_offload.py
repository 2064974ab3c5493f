"""The vLLM TPU offload connector (tpu_inference): a CPU tier counted in KV blocks of the accelerator's,
sized through TPU_OFFLOAD_NUM_CPU_CHUNKS; single-host pods or multi-host LeaderWorkerSets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.manifest import Manifest
from components.specs import sizing
from components.specs.connectors.interface import Choice, Connector, SizingInputs
from components.specs.servers.limits import GuideLimits
from components.specs.servers.tpu import (
    MULTIHOST_MAX_MODEL_LEN,
    MULTIHOST_MEMORY_FRACTION,
    tpu_manifests,
    tpu_multihost_manifests,
)

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec


def tpu_offload_connector() -> dict[str, Any]:
    """The vLLM TPU offload connector; its tier size comes from TPU_OFFLOAD_NUM_CPU_CHUNKS."""
    return {
        "kv_connector": "TPUOffloadConnector",
        "kv_connector_module_path": "tpu_inference.offload.tpu_offload_connector",
        "kv_role": "kv_both",
    }


class TPUOffload(Connector):
    key = "tpu-offload"

    def size(self, inputs: SizingInputs) -> tuple[sizing.TierSizing, sizing.MooncakeClientSizing | None]:
        i = inputs
        return sizing.size_tpu(i.model, i.accelerator, i.tensor_parallelism, i.tier, hosts=i.hosts), None

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        return choice.accelerator.kv_block_tokens, "TPU offload KV block"

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        """The multi-host recipe writes both; single-host pods take vLLM's defaults."""
        if spec.host_type != "multi-host":
            return GuideLimits()
        recipe = "the TPU v7 multi-host recipe's"
        return GuideLimits(
            memory_fraction=(MULTIHOST_MEMORY_FRACTION, f"{recipe} `--gpu-memory-utilization`"),
            max_model_len=(MULTIHOST_MAX_MODEL_LEN, f"{recipe} `--max-model-len`"),
        )

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        return tpu_multihost_manifests(spec) if spec.host_type == "multi-host" else tpu_manifests(spec)

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        return tpu_offload_connector()


TPU_OFFLOAD = TPUOffload()
