"""The device-memory share and the context length a model server is started with: the stack's value, else
what its guide's flags render (the connector says: `Connector.guide_limits`), else the engine's default.
The flags and the HBM budget (stacks/planning/hbm_fit.py) both read `limits`, so what is sized is what the
server is told."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.engines import VLLM_MEMORY_FRACTION, VLLM_MEMORY_FRACTION_FROM
from components.specs.servers.base import GuideLimits as GuideLimits  # the record the connectors return
from components.specs.servers.base import ServerSpec


@dataclass(frozen=True)
class Limits:
    memory_fraction: float
    memory_fraction_from: str
    max_model_len: int
    max_model_len_from: str
    staging_blocks: int = 0  # KV blocks the connector stages in HBM (GuideLimits.hbm_staging_blocks)
    staging_from: str = ""


def limits(spec: ServerSpec) -> Limits:
    guide = spec.connector.guide_limits(spec)
    fraction = (
        (spec.memory_fraction, "stack config `cache.memory_fraction`")
        if spec.memory_fraction is not None
        else guide.memory_fraction or (VLLM_MEMORY_FRACTION, VLLM_MEMORY_FRACTION_FROM)
    )
    context = (
        (spec.max_model_len, "stack config `cache.max_model_len`")
        if spec.max_model_len is not None
        else guide.max_model_len or (spec.model.context_tokens, "the model's `max_position_embeddings`")
    )
    staging = guide.hbm_staging_blocks or (0, "")
    return Limits(fraction[0], fraction[1], context[0], context[1], staging[0], staging[1])


def fraction_text(value: float) -> str:
    return f"{value:g}"


def limit_args(spec: ServerSpec, context_flag: str = "--max-model-len") -> list[str]:
    """The stack's own values as flags where the guide's layout writes none of its own (where it does, the
    layout writes `limits(spec)` in its place)."""
    guide = spec.connector.guide_limits(spec)
    out = []
    if spec.memory_fraction is not None and guide.memory_fraction is None:
        out.append(f"--gpu-memory-utilization={fraction_text(spec.memory_fraction)}")
    if spec.max_model_len is not None and guide.max_model_len is None:
        out.append(f"{context_flag}={spec.max_model_len}")
    return out
