"""The vLLM TPU offload connector (tpu_inference): a CPU tier counted in KV blocks of the accelerator's,
sized through TPU_OFFLOAD_NUM_CPU_CHUNKS; single-host pods or multi-host LeaderWorkerSets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.manifest import Manifest
from components.specs.connectors.interface import Choice, SizingInputs
from components.specs.connectors.vllm_family import VLLM_HBM_EVENTS, VllmConnector
from components.specs.kv_events import TierEvents
from components.specs.servers.base import env_var
from components.specs.servers.limits import GuideLimits
from components.specs.servers.tpu import (
    MULTIHOST_MAX_MODEL_LEN,
    MULTIHOST_MEMORY_FRACTION,
    tpu_manifests,
    tpu_multihost_manifests,
)
from components.specs.sizing import SHM_HEADROOM, Derivation, Sizes, TierSizing, sized, sizes_of
from components.units import ByteSize

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

# HBM blocks staged for the CPU tier's copies, the guide's per host type; tpu_inference deducts them (x the KV
# page) from the HBM it sizes the KV pool from (tpu_worker.determine_available_memory).
STAGING_BLOCKS = {"single-host": 1000, "multi-host": 1024}


@dataclass(frozen=True)
class TPUOffloadSizes(Sizes):
    """What the connector's env takes."""

    cpu_chunks: int  # `TPU_OFFLOAD_NUM_CPU_CHUNKS`: KV blocks of the accelerator's


def tpu_offload_connector() -> dict[str, Any]:
    """The vLLM TPU offload connector; its tier size comes from TPU_OFFLOAD_NUM_CPU_CHUNKS."""
    return {
        "kv_connector": TPUOffload.kv_connector_class,
        "kv_connector_module_path": "tpu_inference.offload.tpu_offload_connector",
        "kv_role": "kv_both",
    }


def size_chunks(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tensor_parallelism: int,
    cpu_tier_per_replica: ByteSize,
    hosts: int = 1,
) -> TierSizing:
    """`TPU_OFFLOAD_NUM_CPU_CHUNKS` counts KV blocks; a multi-host replica splits its tier over its hosts."""
    block = model.kv_bytes_per_token * accelerator.kv_block_tokens
    chunks = cpu_tier_per_replica.bytes // block.bytes
    held = block * chunks
    per_host = ByteSize(held.bytes // hosts)
    steps = [
        Derivation(
            "`TPU_OFFLOAD_NUM_CPU_CHUNKS`",
            str(chunks),
            f"floor(CPU tier {cpu_tier_per_replica.human()} / ({accelerator.kv_block_tokens} tokens x"
            f" {model.kv_bytes_per_token.human()}))",
        )
    ]
    parts = [("CPU tier", per_host)]
    shm = None
    if hosts > 1:  # Ray's object store and the collective buffers of a multi-host group live in /dev/shm
        steps.append(Derivation("CPU tier per host", per_host.human(), f"{held.human()} over {hosts} hosts"))
        shm = SHM_HEADROOM
        parts.append(("/dev/shm", shm))
    return sized(
        model, accelerator, tensor_parallelism, held,
        parts, shm, TPUOffloadSizes(chunks), steps,
        ranks_on_pod=tensor_parallelism // hosts,
    )  # fmt: skip


# The TPU offload connector defines no take_events: KVConnectorBase_V1's default yields none for its CPU tier.
TPU_OFFLOAD_EVENTS = TierEvents(
    "cpu",
    None,
    stores=False,
    evictions=False,
    source="tpu-inference 0.26.0 and 0.27.0 offload/tpu_offload_connector.py: no take_events (vLLM's base yields none)",
)


class TPUOffload(VllmConnector):
    key = "tpu-offload"
    kv_connector_class = "TPUOffloadConnector"

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        return size_chunks(i.model, i.accelerator, i.tensor_parallelism, i.tier, hosts=i.hosts)

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        """`TPU_OFFLOAD_NUM_CPU_CHUNKS` blocks (the tier it holds, `size_chunks`), split over a replica's hosts."""
        sizes_of(TPUOffloadSizes, sizing)  # sized by this connector, or not its tier
        return ByteSize(sizing.cpu_tier_per_pod.bytes // hosts)

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        return choice.accelerator.kv_block_tokens, "TPU offload KV block"

    def kv_events(self, filesystem_tier: bool) -> tuple[TierEvents, ...]:
        return (VLLM_HBM_EVENTS, TPU_OFFLOAD_EVENTS)

    def env(self, spec: ServerSpec) -> list[Manifest]:
        """Its CPU tier in KV blocks, and the HBM blocks it stages for the copies (the guide's per host type)."""
        return [
            env_var("TPU_OFFLOAD_NUM_CPU_CHUNKS", str(sizes_of(TPUOffloadSizes, spec.sizing).cpu_chunks)),
            env_var("TPU_OFFLOAD_NUM_STAGING_BLOCKS", str(STAGING_BLOCKS[spec.host_type])),
        ]

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        """The staging blocks its env writes; the multi-host recipe also writes the share and the context,
        single-host pods take vLLM's defaults."""
        staging = (
            STAGING_BLOCKS[spec.host_type],
            f"`TPU_OFFLOAD_NUM_STAGING_BLOCKS`, the guide's {spec.host_type} value",
        )
        if spec.host_type != "multi-host":
            return GuideLimits(hbm_staging_blocks=staging)
        recipe = "the TPU v7 multi-host recipe's"
        return GuideLimits(
            memory_fraction=(MULTIHOST_MEMORY_FRACTION, f"{recipe} `--gpu-memory-utilization`"),
            max_model_len=(MULTIHOST_MAX_MODEL_LEN, f"{recipe} `--max-model-len`"),
            hbm_staging_blocks=staging,
        )

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        return tpu_multihost_manifests(spec) if spec.host_type == "multi-host" else tpu_manifests(spec)

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        return tpu_offload_connector()


TPU_OFFLOAD = TPUOffload()
