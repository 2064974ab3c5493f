"""Every derived size of the cache hierarchy, computed from the model's KV geometry and the tier size.

The seed asks users to compute these by hand (router `lruCapacityPerServer`, the pod's memory,
`/dev/shm`, per-rank connector sizes, TPU chunk counts); here they are functions, and each result
carries the formulas the render summary shows.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from components.catalog.accelerators import AcceleratorProfile
from components.catalog.labels import ROUTER_BLOCK_TOKENS
from components.catalog.models import ModelSpec
from components.specs.lmcache import server_memory, server_memory_formula
from components.units import GB, ByteSize, GiB

# /dev/shm beyond any tier it holds: NCCL and torch multiprocessing buffers of the vLLM workers
# (the container default of 64 MiB is too small for them).
SHM_HEADROOM = ByteSize(8 * GiB)
# SGLang's /dev/shm, as upstream sizes it (its HiCache host pool is pinned memory, not tmpfs).
SGLANG_SHM = ByteSize(20 * GiB)
# MooncakeStore: each rank's private transfer buffer (`local_buffer_size`).
MOONCAKE_LOCAL_BUFFER = ByteSize(4 * GiB)
# Mooncake Client: /dev/shm, and the memory limit's margin over the request (the guide's 82Gi / 84Gi).
MOONCAKE_CLIENT_SHM = ByteSize(2 * GiB)


def router_block_bytes(kv_bytes_per_token: ByteSize) -> ByteSize:
    return kv_bytes_per_token * ROUTER_BLOCK_TOKENS


def router_lru_capacity(cpu_tier_per_pod: ByteSize, kv_bytes_per_token: ByteSize) -> int:
    """`lruCapacityPerServer` = CPU tier bytes per pod / (64 x KV bytes per token), rounded down.

    Rounding down keeps the router from believing a pod holds blocks it has already evicted.
    """
    return cpu_tier_per_pod.bytes // router_block_bytes(kv_bytes_per_token).bytes


def gib_text(size: ByteSize) -> str:
    """GiB as LMCache reads them: a float, "100.0"."""
    value = f"{size.bytes / GiB:g}"
    return value if "." in value or "e" in value else value + ".0"


def mooncake_text(size: ByteSize) -> str:
    """Mooncake's size strings ("80GB", read as GiB); sizes must be whole GiB."""
    if size.bytes % GiB:
        raise ValueError(f"{size.human()} is not a whole number of GiB, which Mooncake sizes must be")
    return f"{size.bytes // GiB}GB"


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
    cpu_tier_per_pod: ByteSize  # what one pod's CPU tier holds (MooncakeStore: its share of the pool)
    lru_capacity_per_server: int
    host_runtime_memory: ByteSize
    pod_memory: ByteSize  # request and limit: the tier is filled under load and must be reserved
    shm_size_limit: ByteSize | None
    knobs: dict[str, str] = field(default_factory=dict)  # connector settings by their upstream name
    steps: tuple[Derivation, ...] = ()
    # False where the router keeps no CPU-tier index (the LMCache server: it scores token blocks).
    router_counts_tier: bool = True

    @property
    def derivations(self) -> list[Derivation]:
        kv = self.model.kv_bytes_per_token
        block = router_block_bytes(kv)
        head = [
            Derivation(
                "KV bytes per token",
                f"{kv.bytes} B ({kv.human()})",
                f"2 x {self.model.layers} layers x {self.model.kv_heads} KV heads x {self.model.head_dim} head dim"
                f" x {self.model.kv_dtype}",
            ),
            Derivation(
                "router block", f"{block.bytes} B ({block.human()})", f"{ROUTER_BLOCK_TOKENS} tokens x {kv.human()}"
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


def _runtime(accelerator: AcceleratorProfile, ranks: int) -> ByteSize:
    return ByteSize((accelerator.host_memory_base_gib + accelerator.host_memory_per_rank_gib * ranks) * GiB)


def _memory_row(runtime: ByteSize, parts: list[tuple[str, ByteSize]], total: ByteSize) -> Derivation:
    terms = " + ".join(f"{name} {size.human()}" for name, size in parts)
    return Derivation("pod memory request = limit", total.quantity(), f"runtime {runtime.quantity()} + {terms}, in GiB")


def _sized(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tp: int,
    capacity_bytes: ByteSize,
    memory_parts: list[tuple[str, ByteSize]],
    shm: ByteSize | None,
    knobs: dict[str, str],
    steps: list[Derivation],
    ranks_on_pod: int | None = None,
) -> TierSizing:
    runtime = _runtime(accelerator, ranks_on_pod if ranks_on_pod is not None else tp)
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
        knobs=knobs,
        steps=(*steps, _memory_row(runtime, memory_parts, memory)),
    )


def size_native_cpu_tier(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, cpu_tier_per_pod: ByteSize
) -> TierSizing:
    """vLLM's OffloadingConnector keeps its CPU tier in /dev/shm, which is charged to the pod's memory cgroup."""
    shm = (cpu_tier_per_pod + SHM_HEADROOM).ceil_to(GiB)
    return _sized(
        model,
        accelerator,
        tensor_parallelism,
        cpu_tier_per_pod,
        [("/dev/shm", shm)],
        shm,
        {"cpu_bytes_to_use": str(cpu_tier_per_pod.bytes)},
        [
            Derivation(
                "CPU tier per pod (`cpu_bytes_to_use`)",
                f"{cpu_tier_per_pod.bytes} ({cpu_tier_per_pod.human()})",
                "stack config `cache.tier.cpu`",
            ),
            Derivation(
                "`/dev/shm` sizeLimit",
                shm.quantity(),
                f"CPU tier {cpu_tier_per_pod.human()} + headroom {SHM_HEADROOM.human()}, rounded up to GiB",
            ),
        ],
    )


def size_lmcache(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tensor_parallelism: int,
    cpu_tier_per_pod: ByteSize,
    disk_per_pod: ByteSize | None,
) -> TierSizing:
    """LMCache sizes its CPU (and local disk) cache per tensor-parallel rank, in GiB."""
    per_rank = ByteSize(cpu_tier_per_pod.bytes // tensor_parallelism)
    knobs = {"LMCACHE_MAX_LOCAL_CPU_SIZE": gib_text(per_rank)}
    steps = [
        Derivation(
            "`LMCACHE_MAX_LOCAL_CPU_SIZE` (GiB per rank)",
            knobs["LMCACHE_MAX_LOCAL_CPU_SIZE"],
            f"CPU tier {cpu_tier_per_pod.human()} per pod / {tensor_parallelism} ranks",
        )
    ]
    if disk_per_pod is not None:
        knobs["LMCACHE_MAX_LOCAL_DISK_SIZE"] = gib_text(ByteSize(disk_per_pod.bytes // tensor_parallelism))
        steps.append(
            Derivation(
                "`LMCACHE_MAX_LOCAL_DISK_SIZE` (GiB per rank)",
                knobs["LMCACHE_MAX_LOCAL_DISK_SIZE"],
                f"disk tier {disk_per_pod.human()} per pod / {tensor_parallelism} ranks",
            )
        )
    shm = SHM_HEADROOM
    return _sized(
        model, accelerator, tensor_parallelism, cpu_tier_per_pod,
        [("CPU tier", cpu_tier_per_pod), ("/dev/shm", shm)], shm, knobs, steps,
    )  # fmt: skip


def size_hicache(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, cpu_tier_per_pod: ByteSize
) -> TierSizing:
    """SGLang's `--hicache-size` is whole GB (10^9 bytes) of host memory per tensor-parallel rank."""
    per_rank_gb = cpu_tier_per_pod.bytes // tensor_parallelism // GB
    held = ByteSize(per_rank_gb * GB * tensor_parallelism)
    return _sized(
        model,
        accelerator,
        tensor_parallelism,
        held,
        [("HiCache host pool", held), ("/dev/shm", SGLANG_SHM)],
        SGLANG_SHM,
        {"hicache-size": str(per_rank_gb)},
        [
            Derivation(
                "`--hicache-size` (GB per rank)",
                str(per_rank_gb),
                f"floor(CPU tier {cpu_tier_per_pod.human()} per pod / {tensor_parallelism} ranks / 10^9)",
            )
        ],
    )


def tpu_tier_bytes(model: ModelSpec, accelerator: AcceleratorProfile, blocks: int) -> ByteSize:
    """A TPU CPU chunk is one KV block of `kv_block_tokens` tokens."""
    return model.kv_bytes_per_token * (blocks * accelerator.kv_block_tokens)


def size_tpu(
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
    return _sized(
        model, accelerator, tensor_parallelism, held,
        parts, shm, {"TPU_OFFLOAD_NUM_CPU_CHUNKS": str(chunks)}, steps,
        ranks_on_pod=tensor_parallelism // hosts,
    )  # fmt: skip


def size_mooncake_embedded(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, replicas: int, tier_per_pod: ByteSize
) -> TierSizing:
    """Each rank contributes `global_segment_size` to one pool all pods read, so a server can hit the whole pool."""
    segment = ByteSize(tier_per_pod.bytes // tensor_parallelism)
    pool = tier_per_pod * replicas
    buffers = MOONCAKE_LOCAL_BUFFER * tensor_parallelism
    return _sized(
        model,
        accelerator,
        tensor_parallelism,
        pool,
        [("segments", tier_per_pod), ("local buffers", buffers), ("/dev/shm", SHM_HEADROOM)],
        SHM_HEADROOM,
        {"global_segment_size": mooncake_text(segment), "local_buffer_size": mooncake_text(MOONCAKE_LOCAL_BUFFER)},
        [
            Derivation(
                "`global_segment_size` (per rank)",
                mooncake_text(segment),
                f"{tier_per_pod.human()} per pod / {tensor_parallelism} ranks",
            ),
            Derivation(
                "MooncakeStore pool (one for all pods)",
                pool.human(),
                f"{tier_per_pod.human()} x {replicas} pods; any server loads from the whole pool, so the"
                " router's per-server capacity is the pool",
            ),
        ],
    )


@dataclass(frozen=True)
class MooncakeClientSizing:
    nodes: int
    dram: ByteSize
    ssd: ByteSize
    memory_request: ByteSize
    memory_limit: ByteSize


def mooncake_client(dram: ByteSize, ssd: ByteSize, nodes: int) -> MooncakeClientSizing:
    request = (dram + MOONCAKE_CLIENT_SHM).ceil_to(GiB)
    return MooncakeClientSizing(nodes, dram, ssd, request, request + MOONCAKE_CLIENT_SHM)


def size_mooncake_standalone(
    model: ModelSpec,
    accelerator: AcceleratorProfile,
    tensor_parallelism: int,
    replicas: int,
    client_dram: ByteSize,
    client_ssd: ByteSize,
) -> tuple[TierSizing, MooncakeClientSizing]:
    """The Mooncake Client DaemonSet owns the DRAM + SSD pool, one per node the model servers run on."""
    nodes = math.ceil(replicas * tensor_parallelism / accelerator.devices_per_node)
    client = mooncake_client(client_dram, client_ssd, nodes)
    pool = client_dram * nodes
    buffers = MOONCAKE_LOCAL_BUFFER * tensor_parallelism
    sizing = _sized(
        model,
        accelerator,
        tensor_parallelism,
        pool,
        [("local buffers", buffers), ("/dev/shm", SHM_HEADROOM)],
        SHM_HEADROOM,
        {
            "global_segment_size": "0",
            "local_buffer_size": mooncake_text(MOONCAKE_LOCAL_BUFFER),
            "client_global_segment_size": mooncake_text(client_dram),
            "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES": str(client_ssd.bytes),
        },
        [
            Derivation(
                "Mooncake Client nodes",
                str(nodes),
                f"ceil({replicas} pods x {tensor_parallelism} devices / {accelerator.devices_per_node} per node)",
            ),
            Derivation(
                "MooncakeStore DRAM pool (one for all pods)",
                pool.human(),
                f"{client_dram.human()} per client x {nodes} nodes; any server loads from the whole pool",
            ),
            Derivation("Mooncake Client SSD per node", client_ssd.human(), "stack config `cache.tier.disk`"),
            Derivation(
                "Mooncake Client memory request / limit",
                f"{client.memory_request.quantity()} / {client.memory_limit.quantity()}",
                f"DRAM {client_dram.human()} + /dev/shm {MOONCAKE_CLIENT_SHM.human()};"
                f" limit + {MOONCAKE_CLIENT_SHM.human()}",
            ),
        ],
    )
    return sizing, client


def size_lmcache_server_client(
    model: ModelSpec, accelerator: AcceleratorProfile, tensor_parallelism: int, l1_per_node: ByteSize
) -> TierSizing:
    """vLLM pods of the LMCache server: the CPU tier is the server's L1 on each node, shared by its pods.

    The pods hold no tier themselves; the router scores token blocks and does not count the tier.
    """
    server_request, server_limit = server_memory(l1_per_node)
    sized = _sized(
        model,
        accelerator,
        tensor_parallelism,
        l1_per_node,
        [("/dev/shm", SHM_HEADROOM)],
        SHM_HEADROOM,
        {"l1-size-gb": f"{l1_per_node.bytes / GiB:g}"},
        [
            Derivation(
                "LMCache server L1 per node (`--l1-size-gb`)", l1_per_node.human(), "stack config `cache.tier.cpu`"
            ),
            Derivation(
                "LMCache server memory request / limit",
                f"{server_request.quantity()} / {server_limit.quantity()}",
                server_memory_formula(),
            ),
        ],
    )
    return dataclasses.replace(sized, router_counts_tier=False)
