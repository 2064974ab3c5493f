"""SGLang's HiCache: SGLang's own hierarchical cache (host memory and, with the fs variant, its file
backend on the shared claim), counted in pages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from components.catalog import labels, versions
from components.catalog.accelerators import AcceleratorProfile
from components.manifest import Manifest
from components.specs import sizing
from components.specs.connectors.interface import Choice, Connector, SizingInputs
from components.specs.servers.limits import GuideLimits
from components.specs.servers.sglang import MEMORY_FRACTION, PAGE_TOKENS, sglang_manifests

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec


class HiCache(Connector):
    key = "sglang-hicache"
    engine = "sglang"

    def size(self, inputs: SizingInputs) -> tuple[sizing.TierSizing, sizing.MooncakeClientSizing | None]:
        i = inputs
        return sizing.size_hicache(i.model, i.accelerator, i.tensor_parallelism, i.tier), None

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
