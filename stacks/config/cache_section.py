"""What serves and how it caches: accelerator, server, connector, tiers; the per-node LMCache server."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, PrivateAttr, TypeAdapter, ValidatorFunctionWrapHandler, field_validator

from components.catalog import versions
from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS, ModelSpec
from components.formulas.payoff import MAX_TRANSFER_BLOCK_TOKENS
from components.specs.connectors import ConnectorKey
from components.specs.connectors.interface import EngineKey, HostType, Variant
from components.units import ByteSize, GiB, TiB
from stacks.config import formats
from stacks.config.disaggregation_section import DisaggregationConfig
from stacks.config.errors import ConfigError
from stacks.config.fields import (
    MAX_NODE_MEMORY,
    ImageReference,
    Section,
    check_with,
    key_of,
    size_between,
)

MAX_REPLICAS = 256  # model-server replicas one stack runs (the capacity plan searches no further)
REPLICA_COUNT = TypeAdapter(Annotated[int, Field(ge=1, le=MAX_REPLICAS)])
MAX_MEMORY_FRACTION = 0.99  # cache.memory_fraction's ceiling: the engine keeps a sliver for itself
# A Hugging Face repository id, `organization/name` (the Hub's rules: letters, digits, '-', '_', '.'; at most 96
# each); the name is also the model-server pods' `llm-d.ai/model` label value, so at most 63 and ending in a
# letter or digit.
HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?")


class TierConfig(Section):
    variant: Variant = "cpu"
    """cpu: HBM -> CPU RAM; fs: also a shared filesystem tier (ReadWriteMany claim); default cpu, the seed's default"""
    cpu: Annotated[ByteSize | Literal["auto"] | None, size_between(ByteSize(GiB), MAX_NODE_MEMORY)] = Field(
        default=None,
        description="CPU tier per model-server pod (MooncakeStore fs: Mooncake Client DRAM per node);"
        " default: the seed's size for the combination; auto: the largest that fits the node pool",
    )
    disk: Annotated[ByteSize | None, size_between(ByteSize(GiB), ByteSize(1024 * TiB))] = Field(
        default=None,
        description="LMCache local disk / Mooncake Client SSD budget of the filesystem tier, per pod / per node;"
        " default: the combination's from the seed",
    )


class CacheConfig(Section):
    """What serves and how it caches. Unset sizes and counts take the combination's defaults."""

    accelerator: Annotated[str, key_of(ACCELERATORS)] = Field(
        default="gpu",
        description=f"accelerator family of the model servers ({', '.join(ACCELERATORS)}); default gpu (NVIDIA),"
        " the seed's default",
    )
    server: EngineKey = "vllm"
    """model server: vllm or sglang; default vllm, the seed's default"""
    connector: ConnectorKey = Field(
        default="native",
        description=f"how KV blocks are offloaded (components/specs/connectors): {', '.join(get_args(ConnectorKey))};"
        " default native",
    )
    host_type: HostType = "single-host"
    """single-host, or multi-host (TPU v7 slices on a LeaderWorkerSet); default single-host"""
    tier: TierConfig = TierConfig()
    """the offload tiers: variant, CPU tier size, disk size"""
    model: str | None = None
    """model served, its Hugging Face id: a catalog key, or any id with `cache.model_file`; default: the
    combination's from the seed (Qwen/Qwen3-32B on GPUs)"""
    model_file: Annotated[str, check_with(formats.relative_json_path)] | None = None
    """a model outside the catalog: its Hugging Face config.json, a .json file inside the project relative to its
    root (read at plan time, never fetched; its geometry sizes the stack as a catalog model's); `cache.model`
    names the id the servers fetch and serve; unset: the catalog's geometry"""
    replicas: int | Literal["auto"] | None = None
    """model-server replicas (pods, or LeaderWorkerSet groups); default: the combination's from the seed (2 on GPUs);
    auto: the fewest that keep up with `workload` and meet `workload.slo` (the capacity plan, with the tiers as
    configured)"""
    tensor_parallelism: int | None = Field(default=None, ge=1, le=64)
    """devices one replica shards the model over (--tensor-parallel-size); default: the combination's from the seed"""
    memory_fraction: float | None = Field(default=None, ge=0.05, le=MAX_MEMORY_FRACTION)
    """share of each device's memory the engine takes for weights, activations and KV (vLLM
    --gpu-memory-utilization, SGLang --mem-fraction-static); default: the guide's flag, else the engine's 0.9"""
    max_model_len: int | None = Field(default=None, ge=256, le=10_000_000)
    """longest prompt + output a server accepts (vLLM --max-model-len, SGLang --context-length), at most the model's
    context; default: the combination's, else the model's context"""
    node_pool: str | None = Field(
        default=None,
        description="key of `node_pools` the model servers run on; default: none (required on a created cluster)",
    )
    image: ImageReference | None = Field(default=None, description="model-server image; default: the pinned one")
    disaggregation: DisaggregationConfig | None = None
    """prefill and decode on separate pools (P/D over NIXL, the CPU tier on the prefill pods); vLLM with the native
    connector; `cache.replicas` then counts nothing (each pool has its own); default: none, one aggregated pool"""

    @field_validator("replicas", mode="wrap")
    @classmethod
    def _replica_count(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """`auto`, or a whole count validated alone (one line, not one per member of the union)."""
        if value == "auto" or value is None or isinstance(value, bool):  # a boolean: Section's own one line
            return handler(value)
        return handler(REPLICA_COUNT.validate_python(value))

    # The geometry of `model_file`, read at load (stacks/config/model_file.py); None without one.
    _model_file: ModelSpec | None = PrivateAttr(default=None)

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str | None) -> str | None:
        """A catalog key, or a Hugging Face id (one outside the catalog needs `cache.model_file`: a cross-check)."""
        if value is not None and value not in MODELS and not HF_ID.fullmatch(value):
            raise ValueError(
                f"allowed: {', '.join(sorted(MODELS))}, or a Hugging Face id (organization/name) with cache.model_file"
            )
        return value

    def with_model_file(self, spec: ModelSpec) -> CacheConfig:
        """This section with the geometry its `model_file` holds (read at load)."""
        copied = self.model_copy()
        copied._model_file = spec
        return copied

    def model_spec(self, default: str) -> ModelSpec:
        """The model served: `model_file`'s geometry, else the catalog's entry for `model` (or `default`, the
        combination's)."""
        if self.model_file is None:
            return MODELS[self.model or default]
        if self._model_file is None:
            raise ConfigError(
                "cache.model_file", self.model_file, "not read: a stack config is loaded by loading.build"
            )
        return self._model_file


class LMCacheConfig(Section):
    """The LMCache server of `cache.connector: lmcache-server` (its L1 size is `cache.tier.cpu`)."""

    version: str = Field(
        default=versions.LMCACHE_VERSION,
        pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$",
        description="tag of lmcache/vllm-openai, for the server and every vLLM pod",
    )
    mode: Literal["prefix-reuse", "pd"] = Field(default="prefix-reuse", description="pd: P/D disaggregation")
    test_mode: bool = Field(
        default=False, description="--no-enable-prefix-caching, so a repeated prompt goes to LMCache (tests only)"
    )
    chunk_size: int = Field(default=256, ge=16, le=MAX_TRANSFER_BLOCK_TOKENS)
    """tokens per LMCache chunk, a multiple of the model server's KV block; default 256, the LMCache integration's"""
    hash_algorithm: Literal["blake3", "sha256", "builtin"] = "blake3"
    """chunk hash: blake3, sha256 or builtin; default blake3, LMCache's default"""
    isolated_ipc: bool = True
    """move KV over CUDA IPC without hostIPC (--isolated-ipc); default on, as the integration guide"""
    eviction_policy: Literal["LRU"] = "LRU"
    """the server's eviction policy; LRU, the only one it has"""
    eviction_trigger_watermark: float = Field(default=0.80, gt=0, le=1)
    """fraction of L1 in use (0-1] that starts eviction; default 0.80, LMCache's"""
    eviction_ratio: float = Field(default=0.20, gt=0, le=1)
    """fraction of L1 (0-1] one eviction frees; default 0.20, LMCache's"""
    max_workers: int = Field(default=1, ge=1, le=64)
    """the server's worker threads; default 1, as the integration guide"""
    privileged: bool = Field(default=False, description="run the server privileged where NVML cannot see the GPUs")
