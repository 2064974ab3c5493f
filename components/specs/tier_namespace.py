"""The shared tier's namespace: the directory every connector keeps its persistent KV under, derived from what
makes KV written by one configuration wrong for another. A change of any field moves the servers to a new,
empty directory (the tier goes cold) instead of serving the old files as hits; the evictor reclaims the
directories no stack writes any more before it touches the live one (components/tier_evictor/evict_tier.py).

Each engine keys its own files by part of this list, and upstream has reported persistent KV served across
the rest as hits (silent wrong output). The fields, and the engine's own list each is tied to:

- vLLM's native offloading, `FileMapper.fields` (vllm/v1/kv_offload/file_mapper.py, the fs tier's
  `<root_dir>/<model>_<sha256[:12]>` directory): model_name, tokens_per_hash, blocks_per_file, tp/pp/pcp/dcp
  sizes, dtype (the KV cache's), kv_cache_groups, inference_engine, and since PR 49440 (merged) the model
  runner's layout. Open: the model revision (issue 49261; PR 49266 closed unmerged), the KV layout
  (issue 55904), RoPE scaling and the construction-time model config (issue 56311, PR 56331).
- LMCache's `CacheEngineKey` (lmcache/utils.py): model_name, world_size, worker_id, chunk_hash (over its
  chunk size), dtype, request tags. No revision, layout or engine version.
- SGLang HiCache's file backend (`HiCacheFile`, sglang/srt/mem_cache/hicache_storage.py): the key suffixed
  with model name, tensor-parallel rank and size. No dtype, revision or page size.

What is not a field: pipeline and context parallelism (the program writes no `--pipeline-parallel-size` or
context-parallel flag, so every engine runs them at 1), RoPE overrides (it writes no `--hf-overrides` or
`--rope-scaling`: the model's RoPE is its config.json at `revision`), replicas, tier sizes, memory shares,
labels and anything else that changes how much is cached, not what a cached block means.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, fields

from components.catalog.engines import EngineKey

DIGEST_CHARS = 12  # hex digits of the fields' sha256, as vLLM's FileMapper names its directory


@dataclass(frozen=True)
class TierIdentity:
    """What the KV a stack's servers write to the persistent tier depends on (the module docstring ties each
    field to the engines' own lists; `SET_BY` says which config key sets it)."""

    model: str  # the Hugging Face id served (vLLM, LMCache, SGLang: model_name)
    revision: str  # the weights' branch, tag or commit the servers load (vLLM issue 49261)
    dtype: str  # the compute dtype the engine runs the model in (vLLM PR 56331's computation dtype)
    kv_cache_dtype: str  # the KV cache's element type (vLLM FileMapper dtype, LMCache dtype)
    tensor_parallelism: int  # (vLLM tp_size, LMCache world_size, SGLang tp_size)
    block_tokens: int  # tokens per stored block: the connector's transfer block (vLLM tokens_per_hash x
    # blocks_per_file, LMCache's chunk, SGLang's page)
    kv_layout: str  # the accelerator family whose attention backend lays KV out (NHD, HND; vLLM issue 55904)
    engine: EngineKey  # (vLLM inference_engine)
    image: str  # the engine build the servers run: its version (hashing and layout change between versions)
    connector: str  # the connector implementation writing the files: each has its own file format
    max_model_len: int  # the context the engine is constructed with (LongRoPE picks its factors by it: PR 56331)


# Which config keys set each field (what the change plan names when the namespace moves). The revision is the
# model cache's (without one the servers load the Hub's `main`); the dtype the checkpoint's, or the XPU overlays'
# --dtype; the KV cache's dtype the model's (vLLM's --kv-cache-dtype auto); the block the connector's transfer block.
SET_BY: dict[str, str] = {
    "model": "cache.model",
    "revision": "model_cache.revision",
    "dtype": "cache.model, cache.accelerator",
    "kv_cache_dtype": "cache.model",
    "tensor_parallelism": "cache.tensor_parallelism",
    "block_tokens": "cache.connector, cache.accelerator",
    "kv_layout": "cache.accelerator",
    "engine": "cache.server",
    "image": "cache.image, lmcache.version or the pinned image",
    "connector": "cache.connector",
    "max_model_len": "cache.max_model_len",
}
FIELD_NAMES = tuple(f.name for f in fields(TierIdentity))


def identity_fields(identity: TierIdentity) -> dict[str, str | int]:
    """The fields by name, as hashed and as stamped on the workload."""
    return asdict(identity)


def identity_text(identity: TierIdentity) -> str:
    """Canonical JSON (sorted keys, no spaces): the text hashed, and the workload's stamp."""
    return json.dumps(identity_fields(identity), sort_keys=True, separators=(",", ":"))


def _slug(model: str) -> str:
    """The model's name without its organisation, in characters every file system and Kubernetes path takes."""
    return re.sub(r"(?:[^A-Za-z0-9._-]|\.\.)+", "-", model.split("/", 1)[-1]).strip("-.") or "model"


def tier_namespace(identity: TierIdentity) -> str:
    """`<model>-<sha256 of the fields, 12 hex>`: one directory, readable by the model it serves, and the same
    for the same fields on every render (no time, host or order enters it)."""
    digest = hashlib.sha256(identity_text(identity).encode("utf-8")).hexdigest()[:DIGEST_CHARS]
    return f"{_slug(identity.model)}-{digest}"


def changed_fields(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """The fields that differ between two stamps (a field only one side has counts as changed)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
