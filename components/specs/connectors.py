"""`--kv-transfer-config` JSON per connector (what vLLM parses at start-up)."""

from __future__ import annotations

import json
from typing import Any

from components.specs.sizing import TierSizing


def offloading_connector(sizing: TierSizing) -> dict[str, Any]:
    """vLLM's native OffloadingConnector with a CPU tier of `cpu_bytes_to_use` bytes per pod."""
    return {
        "kv_connector": "OffloadingConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"cpu_bytes_to_use": sizing.cpu_bytes_to_use.bytes},
    }


def to_json(config: dict[str, Any]) -> str:
    """Compact JSON, as upstream writes it on the command line."""
    return json.dumps(config, separators=(",", ":"))
