"""`--kv-transfer-config` JSON per connector (what the model server parses at start-up)."""

from __future__ import annotations

import json
from typing import Any

from components.catalog import labels
from components.specs.sizing import TierSizing

FILES_STORAGE = labels.FILES_STORAGE_MOUNT
# vLLM's TieringOffloadingSpec: offloaded block size and the filesystem tier's I/O threads (the guide's values).
TIERING_BLOCK_TOKENS = 256
FS_IO_THREADS = 16


def offloading_connector(sizing: TierSizing, filesystem_tier: bool) -> dict[str, Any]:
    """vLLM's native OffloadingConnector; with a filesystem tier, through TieringOffloadingSpec."""
    cpu_bytes = int(sizing.knobs["cpu_bytes_to_use"])
    extra: dict[str, Any] = {"cpu_bytes_to_use": cpu_bytes}
    if filesystem_tier:
        extra = {
            "spec_name": "TieringOffloadingSpec",
            "cpu_bytes_to_use": cpu_bytes,
            "block_size": TIERING_BLOCK_TOKENS,
            "secondary_tiers": [
                {
                    "type": "fs",
                    "root_dir": FILES_STORAGE,
                    "n_read_threads": FS_IO_THREADS,
                    "n_write_threads": FS_IO_THREADS,
                }
            ],
        }
    return {"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra}


def lmcache_connector() -> dict[str, Any]:
    """LMCache's in-process connector; its sizes come from LMCACHE_* environment variables."""
    return {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}


def mooncake_store_connector(standalone: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"kv_connector": "MooncakeStoreConnector", "kv_role": "kv_both"}
    if standalone:
        config["kv_connector_extra_config"] = {"load_async": True}
    return config


def tpu_offload_connector() -> dict[str, Any]:
    """The vLLM TPU offload connector; its tier size comes from TPU_OFFLOAD_NUM_CPU_CHUNKS."""
    return {
        "kv_connector": "TPUOffloadConnector",
        "kv_connector_module_path": "tpu_inference.offload.tpu_offload_connector",
        "kv_role": "kv_both",
    }


def to_json(config: dict[str, Any]) -> str:
    """Compact JSON, as upstream writes it on the command line."""
    return json.dumps(config, separators=(",", ":"))
