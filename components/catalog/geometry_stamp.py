"""The served model's geometry as the plan sized it, stamped on its model-server workload
(`labels.MODEL_GEOMETRY_ANNOTATION`, by components/specs/servers/base.py `workload_metadata`): the `ModelSpec` fields
its KV bytes per token and the compute a token costs follow from, as canonical JSON. The policy rules that judge a
model (`tiers-beat-recompute`, `router-capacity-within-tier`) read it back here rather than look the served name up
in the catalog, so a model given by `cache.model_file` is judged as a catalog one is; a stamp that is missing or
not a geometry is a reason the rule gives, never a guess. The weights' dtype and quantization are not in it: no rule
reads the weight bytes."""

from __future__ import annotations

import json

from components.catalog.hf_config import BOUNDS
from components.catalog.model_geometry import DTYPE_BYTES, ModelSpec

# Each whole-number field, the config.json bound it shares (hf_config.BOUNDS) and its least value.
COUNTS: dict[str, tuple[str, int]] = {
    "layers": ("num_hidden_layers", 1),
    "kv_heads": ("num_key_value_heads", 1),
    "head_dim": ("head_dim", 1),
    "attention_heads": ("num_attention_heads", 1),
    "hidden_size": ("hidden_size", 1),
    "intermediate_size": ("intermediate_size", 1),
    "vocab_size": ("vocab_size", 1),
    "context_tokens": ("max_position_embeddings", 1),
    "experts": ("experts", 0),
    "experts_per_token": ("experts_per_token", 0),
    "expert_intermediate_size": ("moe_intermediate_size", 0),
    "shared_expert_intermediate_size": ("shared_expert_intermediate_size", 0),
    "moe_layers": ("num_hidden_layers", 0),
    "sliding_window": ("sliding_window", 0),
    "sliding_layers": ("num_hidden_layers", 0),
}
FIELDS = (*COUNTS, "tied_embeddings", "kv_dtype")


class StampError(ValueError):
    """Why a stamp is not a model's geometry (one line)."""


def geometry_stamp(model: ModelSpec) -> str:
    """The stamp's value: the geometry fields as compact JSON, keys sorted (equal geometries, equal text)."""
    return json.dumps({f: getattr(model, f) for f in FIELDS}, sort_keys=True, separators=(",", ":"))


def model_from_stamp(name: str, value: object) -> ModelSpec:
    """The geometry a stamp holds, as the `ModelSpec` of the served model `name`. Raises StampError saying why
    it is not one: not JSON, a field missing or unknown, a count not a whole number within config.json's bounds,
    a KV dtype the sizing does not know, counts that contradict each other."""
    if not isinstance(value, str):
        raise StampError("missing" if value is None else f"not a string: {type(value).__name__}")
    try:
        data = json.loads(value)
    except ValueError:
        raise StampError("not JSON") from None
    if not isinstance(data, dict):
        raise StampError("not a JSON object")
    missing, unknown = sorted(set(FIELDS) - set(data)), sorted(set(data) - set(FIELDS))
    if missing or unknown:
        raise StampError(f"fields missing: {', '.join(missing) or 'none'}; unknown: {', '.join(unknown) or 'none'}")
    for field, (bound, low) in COUNTS.items():
        count = data[field]
        if isinstance(count, bool) or not isinstance(count, int) or not low <= count <= BOUNDS[bound]:
            raise StampError(f"{field} = {count!r}: must be a whole number from {low} to {BOUNDS[bound]:,}")
    if not isinstance(data["tied_embeddings"], bool):
        raise StampError(f"tied_embeddings = {data['tied_embeddings']!r}: must be true or false")
    if data["kv_dtype"] not in DTYPE_BYTES:
        raise StampError(f"kv_dtype = {data['kv_dtype']!r}: allowed: {', '.join(DTYPE_BYTES)}")
    model = ModelSpec(name, **data)
    if model.sliding_layers >= model.layers or model.moe_layers > model.layers:
        raise StampError(f"{model.sliding_layers} sliding and {model.moe_layers} expert layers of {model.layers}")
    if bool(model.sliding_layers) != bool(model.sliding_window):
        raise StampError(f"{model.sliding_layers} sliding layers with a {model.sliding_window}-token window")
    if model.experts_per_token > model.experts or bool(model.moe_layers) != bool(model.experts_per_token):
        raise StampError(
            f"{model.experts_per_token} of {model.experts} experts a token, in {model.moe_layers} expert layers"
        )
    return model
