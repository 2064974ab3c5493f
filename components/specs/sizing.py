"""The derived sizes every connector shares, computed from the model's KV geometry and the tier size.

The seed asks users to compute these by hand (router `lruCapacityPerServer`, the pod's memory,
`/dev/shm`); here they are functions, and each result carries the formulas the render summary shows. A
connector's own sizes (per-rank connector sizes, TPU chunk counts, Mooncake segments) are computed in its
module (`components/specs/connectors/`) with `sized`, as a typed `Sizes` record of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from components.catalog.accelerators import AcceleratorProfile
from components.catalog.labels import ROUTER_BLOCK_TOKENS
from components.catalog.models import ModelSpec
from components.units import ByteSize, GiB

# /dev/shm beyond any tier it holds: NCCL and torch multiprocessing buffers of the vLLM workers
# (the container default of 64 MiB is too small for them).
SHM_HEADROOM = ByteSize(8 * GiB)


def router_block_bytes(kv_bytes_per_token: ByteSize) -> ByteSize:
    return kv_bytes_per_token * ROUTER_BLOCK_TOKENS


def router_lru_capacity(cpu_tier_per_pod: ByteSize, kv_bytes_per_token: ByteSize) -> int:
    """`lruCapacityPerServer` = CPU tier bytes per pod / (64 x KV bytes per token), rounded down.

    Rounding down keeps the router from believing a pod holds blocks it has already evicted.
    """
    return cpu_tier_per_pod.bytes // router_block_bytes(kv_bytes_per_token).bytes


@dataclass(frozen=True)
class Derivation:
    """One derived number, with what it was computed from (rendered as a summary row)."""

    name: str
    value: str
    formula: str


@dataclass(frozen=True)
class Sizes:
    """A connector's own sizes, as its flags, env and config take them (a subclass in its module)."""


S = TypeVar("S", bound=Sizes)


def sizes_of(kind: type[S], sizing: TierSizing) -> S:
    """The connector's own sizes of `sizing`, as the type its module sized them with."""
    if not isinstance(sizing.sizes, kind):
        raise TypeError(f"{kind.__name__} expected, the tier was sized with {type(sizing.sizes).__name__}")
    return sizing.sizes


@dataclass(frozen=True)
class TierSizing:
    model: ModelSpec
    tensor_parallelism: int
    cpu_tier_per_pod: ByteSize  # what one pod's CPU tier holds (MooncakeStore: its share of the pool)
    lru_capacity_per_server: int
    host_runtime_memory: ByteSize
    pod_memory: ByteSize  # request and limit: the tier is filled under load and must be reserved
    shm_size_limit: ByteSize | None
    sizes: Sizes = Sizes()  # the connector's own (`sizes_of`)
    steps: tuple[Derivation, ...] = ()
    # False where the router keeps no CPU-tier index (the LMCache server: it scores token blocks).
    router_counts_tier: bool = True
    # Tokens per block of the router's index (its `blockSizeTokens`; P/D: the engine's block, one for both).
    router_block_tokens: int = ROUTER_BLOCK_TOKENS

    @property
    def derivations(self) -> list[Derivation]:
        kv = self.model.kv_bytes_per_token
        block = kv * self.router_block_tokens
        head = [
            Derivation(
                "KV bytes per token",
                f"{kv.bytes} B ({kv.human()})",
                f"2 x {self.model.full_attention_layers} layers x {self.model.kv_heads} KV heads x"
                f" {self.model.head_dim} head dim x {self.model.kv_dtype}"
                + (
                    f" (the full-attention layers; the {self.model.sliding_layers} sliding-window ones keep"
                    f" {self.model.sliding_window} tokens a sequence at most)"
                    if self.model.sliding_layers
                    else ""
                ),
            ),
            Derivation(
                "router block",
                f"{block.bytes} B ({block.human()})",
                f"{self.router_block_tokens} tokens x {kv.human()}",
            ),
        ]
        capacity = (
            Derivation(
                "router `lruCapacityPerServer`",
                str(self.lru_capacity_per_server),
                f"floor({self.cpu_tier_per_pod.bytes} / {block.bytes})",
            )
            if self.router_counts_tier
            else Derivation("router CPU-tier index", "none", "the router scores token blocks; the tier is the server's")
        )
        tail = [
            capacity,
            Derivation(
                "model-server runtime memory",
                self.host_runtime_memory.quantity(),
                f"base + per-rank x {self.tensor_parallelism} ranks (accelerator profile)",
            ),
        ]
        return [*head, *self.steps, *tail]


def runtime_memory(accelerator: AcceleratorProfile, ranks: int) -> ByteSize:
    return ByteSize((accelerator.host_memory_base_gib + accelerator.host_memory_per_rank_gib * ranks) * GiB)


def _memory_row(runtime: ByteSize, parts: list[tuple[str, ByteSize]], total: ByteSize) -> Derivation:
    terms = " + ".join(f"{name} {size.human()}" for name, size in parts)
    return Derivation("pod memory request = limit", total.quantity(), f"runtime {runtime.quantity()} + {terms}, in GiB")


def sized(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tp: int,
    capacity_bytes: ByteSize,
    memory_parts: list[tuple[str, ByteSize]],
    shm: ByteSize | None,
    sizes: Sizes,
    steps: list[Derivation],
    ranks_on_pod: int | None = None,
) -> TierSizing:
    """The pod's sizing: its runtime memory (for `ranks_on_pod`, default all `tp`) plus `memory_parts`, rounded
    up to GiB; the router's capacity from `capacity_bytes`; `steps` and the memory row as its derivations."""
    runtime = runtime_memory(accelerator, ranks_on_pod if ranks_on_pod is not None else tp)
    memory = runtime
    for _, size in memory_parts:
        memory = memory + size
    memory = memory.ceil_to(GiB)
    return TierSizing(
        model=model,
        tensor_parallelism=tp,
        cpu_tier_per_pod=capacity_bytes,
        lru_capacity_per_server=router_lru_capacity(capacity_bytes, model.kv_bytes_per_token),
        host_runtime_memory=runtime,
        pod_memory=memory,
        shm_size_limit=shm,
        sizes=sizes,
        steps=(*steps, _memory_row(runtime, memory_parts, memory)),
    )


def tpu_tier_bytes(model: ModelSpec, accelerator: AcceleratorProfile, blocks: int) -> ByteSize:
    """A TPU CPU chunk is one KV block of `kv_block_tokens` tokens."""
    return model.kv_bytes_per_token * (blocks * accelerator.kv_block_tokens)
