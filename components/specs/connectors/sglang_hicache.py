"""SGLang's HiCache: SGLang's own hierarchical cache (host memory and, with the fs variant, its file
backend on the shared claim), counted in pages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.catalog import labels, versions
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.manifest import Manifest
from components.specs.connectors.interface import Choice, Connector, SizingInputs
from components.specs.servers.limits import GuideLimits
from components.specs.servers.sglang import MEMORY_FRACTION, PAGE_TOKENS, SGLANG_SHM, HiCacheSizes, sglang_manifests
from components.specs.sizing import Derivation, TierSizing, sized
from components.units import GB, ByteSize

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec


def size_host_pool(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, cpu_tier_per_pod: ByteSize
) -> TierSizing:
    """SGLang's `--hicache-size` is whole GB (10^9 bytes) of host memory per tensor-parallel rank."""
    per_rank_gb = cpu_tier_per_pod.bytes // tensor_parallelism // GB
    held = ByteSize(per_rank_gb * GB * tensor_parallelism)
    return sized(
        model,
        accelerator,
        tensor_parallelism,
        held,
        [("HiCache host pool", held), ("/dev/shm", SGLANG_SHM)],
        SGLANG_SHM,
        HiCacheSizes(per_rank_gb),
        [
            Derivation(
                "`--hicache-size` (GB per rank)",
                str(per_rank_gb),
                f"floor(CPU tier {cpu_tier_per_pod.human()} per pod / {tensor_parallelism} ranks / 10^9)",
            )
        ],
    )


class HiCache(Connector):
    key = "sglang-hicache"
    engine = "sglang"

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        return size_host_pool(i.model, i.accelerator, i.tensor_parallelism, i.tier)

    def transfer_block(self, choice: Choice) -> tuple[int, str]:
        return PAGE_TOKENS, "HiCache page"

    def image(self, choice: Choice) -> str:
        return versions.SGLANG_IMAGE

    def pod_labels(self, accelerator: AcceleratorProfile) -> dict[str, str]:
        return {labels.ENGINE_TYPE_LABEL: "sglang"}

    def guide_limits(self, spec: ServerSpec) -> GuideLimits:
        return GuideLimits(memory_fraction=(MEMORY_FRACTION, "the guide's `--mem-fraction-static`"))

    def manifests(self, spec: ServerSpec) -> list[Manifest]:
        return sglang_manifests(spec)

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        raise NotImplementedError("SGLang takes --hicache-* flags (servers/sglang.py), not a kv-transfer config")


HICACHE = HiCache()
