"""Every derived size of the cache hierarchy, computed from the model's KV geometry and the tier size.

The seed asks users to compute these by hand (router `lruCapacityPerServer`, the pod's memory,
`/dev/shm`); here they are functions, and each result carries the formula shown in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.accelerators import AcceleratorProfile
from components.catalog.models import ModelSpec
from components.specs.units import ByteSize, GiB

# The router's approximate prefix index hashes prompts in blocks of 64 tokens.
ROUTER_BLOCK_TOKENS = 64
# /dev/shm beyond the CPU tier: NCCL and torch multiprocessing buffers of the vLLM workers
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
class TierSizing:
    model: ModelSpec
    tensor_parallelism: int
    cpu_tier_per_pod: ByteSize
    lru_capacity_per_server: int
    cpu_bytes_to_use: ByteSize
    shm_size_limit: ByteSize
    host_runtime_memory: ByteSize
    pod_memory: ByteSize  # request and limit: the tier is allocated at start-up, so it is reserved

    @property
    def derivations(self) -> list[Derivation]:
        kv = self.model.kv_bytes_per_token
        block = router_block_bytes(kv)
        return [
            Derivation(
                "KV bytes per token",
                f"{kv.bytes} B ({kv.human()})",
                f"2 x {self.model.layers} layers x {self.model.kv_heads} KV heads x {self.model.head_dim} head dim"
                f" x {self.model.kv_dtype}",
            ),
            Derivation(
                "router block",
                f"{block.bytes} B ({block.human()})",
                f"{ROUTER_BLOCK_TOKENS} tokens x {kv.human()}",
            ),
            Derivation(
                "CPU tier per pod (`cpu_bytes_to_use`)",
                f"{self.cpu_bytes_to_use.bytes} ({self.cpu_bytes_to_use.human()})",
                "stack config `cache.tier.cpu`",
            ),
            Derivation(
                "router `lruCapacityPerServer`",
                str(self.lru_capacity_per_server),
                f"floor({self.cpu_tier_per_pod.bytes} / {block.bytes})",
            ),
            Derivation(
                "`/dev/shm` sizeLimit",
                self.shm_size_limit.quantity(),
                f"CPU tier {self.cpu_tier_per_pod.human()} + headroom {SHM_HEADROOM.human()}, rounded up to GiB",
            ),
            Derivation(
                "model-server runtime memory",
                self.host_runtime_memory.quantity(),
                f"base + per-rank x {self.tensor_parallelism} ranks (accelerator profile)",
            ),
            Derivation(
                "pod memory request = limit",
                self.pod_memory.quantity(),
                f"runtime {self.host_runtime_memory.quantity()} + /dev/shm {self.shm_size_limit.quantity()}",
            ),
        ]


def size_native_cpu_tier(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tensor_parallelism: int,
    cpu_tier_per_pod: ByteSize,
) -> TierSizing:
    """Sizing for vLLM's OffloadingConnector, whose CPU tier lives in /dev/shm.

    tmpfs pages are charged to the pod's memory cgroup, so the limit must hold the runtime
    plus the whole of /dev/shm; the request equals the limit because the tier is filled under load
    and must not be overcommitted on the node.
    """
    shm = (cpu_tier_per_pod + SHM_HEADROOM).ceil_to(GiB)
    runtime = ByteSize(
        (accelerator.host_memory_base_gib + accelerator.host_memory_per_rank_gib * tensor_parallelism) * GiB
    )
    return TierSizing(
        model=model,
        tensor_parallelism=tensor_parallelism,
        cpu_tier_per_pod=cpu_tier_per_pod,
        lru_capacity_per_server=router_lru_capacity(cpu_tier_per_pod, model.kv_bytes_per_token),
        cpu_bytes_to_use=cpu_tier_per_pod,
        shm_size_limit=shm,
        host_runtime_memory=runtime,
        pod_memory=runtime + shm,
    )
