"""What the KV a stack's servers persist depends on, read from the server spec as it is rendered: the fields of
its shared tier's namespace (components/specs/tier_namespace.py)."""

from __future__ import annotations

from components.specs.connectors.vllm_family import XPU_DTYPE
from components.specs.servers.base import ServerSpec
from components.specs.servers.limits import limits
from components.specs.tier_namespace import TierIdentity
from stacks.config import StackConfig

# What vLLM and SGLang load without a revision flag (the program writes none): the Hub's default branch.
HUB_DEFAULT_REVISION = "main"


def tier_identity(config: StackConfig, spec: ServerSpec) -> TierIdentity | None:
    """None where the servers persist no KV (the cpu variant). Each value is the one the servers run with:
    the revision the model cache fetched (else the Hub's default branch), the dtype the XPU overlays write
    (else the checkpoint's: vLLM's `--dtype auto`), the context `limits` gives the flags."""
    if not spec.filesystem_tier:
        return None
    model = spec.model
    return TierIdentity(
        model=model.name,
        revision=config.model_cache.revision if spec.model_cache is not None else HUB_DEFAULT_REVISION,
        dtype=XPU_DTYPE if spec.accelerator.intel_xpu_flags else model.weight_dtype,
        kv_cache_dtype=model.kv_dtype,
        tensor_parallelism=spec.tensor_parallelism,
        block_tokens=spec.transfer_block_tokens,
        kv_layout=spec.accelerator.key,
        engine=spec.server,
        image=spec.image,
        connector=spec.connector.key,
        max_model_len=limits(spec).max_model_len,
    )
