"""The prefill -> decode KV handoff of P/D disaggregation: the transport (vLLM's NixlConnector), the facts both
sides must agree on, and the fabric each accelerator's KV crosses, with its bandwidth per device.

Sources: llm-d/llm-d `guides/pd-disaggregation/README.multi-tier.md` and its overlays
`modelserver/gpu/vllm/multi-tier/patch-{prefill,decode}.yaml` (commit 3cfabd6a, 2026;
github.com/llm-d/llm-d/issues/2297 and pull/2298):
NIXL is the handoff on both roles, the prefillers compose it with the OffloadingConnector in a MultiConnector,
engine and router block sizes are equal (128 tokens), every engine pod sets one `PYTHONHASHSEED` (0). vLLM's
NixlConnector listens for handshakes on `VLLM_NIXL_SIDE_CHANNEL_PORT` + the engine's local data-parallel index
(`nixl/scheduler.py`: `side_channel_port = VLLM_NIXL_SIDE_CHANNEL_PORT + data_parallel_index`), default 5600.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.rates import Cited

PD_BLOCK_TOKENS = 128  # engine `--block-size` = router `blockSizeTokens` (the multi-tier guide's 128)
PD_HASH_SEED = "0"  # one PYTHONHASHSEED on every engine pod (the multi-tier overlays' value)
NIXL_SIDE_CHANNEL_PORT = 5600  # vLLM's default VLLM_NIXL_SIDE_CHANNEL_PORT; rank i listens on it + i
MAX_LOCAL_RANKS = 8  # data-parallel engines one pod runs (one per device of an 8-device node at TP=1)


@dataclass(frozen=True)
class KvFabric(Cited):
    """The network a prefill's KV crosses to its decode pod: each device's share of it, one direction."""

    name: str
    bandwidth: float  # bytes/s one device's KV leaves at
    source: str
    assumed: bool = False


@dataclass(frozen=True)
class KvTransport:
    """A P/D transport an accelerator's vLLM image carries."""

    key: str  # the config's `cache.disaggregation.transport`
    connector_class: str  # its kv-transfer config's `kv_connector`
    sidecar_connector: str  # the routing sidecar's `--kv-connector`
    fabric: KvFabric


CONNECTX7_400G = KvFabric(
    "InfiniBand NDR 400 Gb/s per GPU (ConnectX-7)",
    50e9,
    "NVIDIA DGX H100/H200 data sheets: 8x single-port ConnectX-7 at 400 Gb/s, one per GPU (50 GB/s each)",
)
CONNECTX6_200G = KvFabric(
    "InfiniBand HDR 200 Gb/s per GPU (ConnectX-6)",
    25e9,
    "NVIDIA DGX A100 data sheet: 8x single-port ConnectX-6 VPI at 200 Gb/s, one per GPU (25 GB/s each)",
)
ROCE_400G = KvFabric(
    "RoCE 400 Gb/s per GPU",
    50e9,
    "one 400 Gb/s NIC per MI300X as the DGX H100 has per GPU; llm-d guides/pd-disaggregation"
    " modelserver/amd/vllm/nixl runs NIXL on ROCm, no published per-GPU fabric figure",
    assumed=True,
)


def nixl(fabric: KvFabric) -> KvTransport:
    return KvTransport("nixl", "NixlConnector", "nixlv2", fabric)
