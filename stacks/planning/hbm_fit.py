"""Does the model fit its accelerators, and how much KV do they hold? The replica's HBM budget
(components/formulas/hbm.py) from the server as it is rendered (servers/limits.py), checked at plan time: a
model that does not fit, or whose longest sequence does not fit the KV left, stops with one line naming the
model, the devices and what would fit."""

from __future__ import annotations

import dataclasses
import math

from components.catalog.support import ComboDefaults
from components.formulas.hbm import HbmBudget, gib
from components.specs.servers.base import ServerSpec
from components.specs.servers.limits import limits
from stacks.config.cache_section import MAX_MEMORY_FRACTION
from stacks.config.errors import ConfigError
from stacks.planning.resolution import Resolved

# A suggested `--max-model-len` is rounded down to this many tokens.
SUGGESTED_LENGTH_STEP = 1024


def hbm_budget(spec: ServerSpec) -> HbmBudget:
    served = limits(spec)
    return HbmBudget(
        model=spec.model,
        accelerator=spec.accelerator,
        devices=spec.devices * spec.group_size,
        tensor_parallelism=spec.tensor_parallelism,
        memory_fraction=served.memory_fraction,
        memory_fraction_from=served.memory_fraction_from,
        max_model_len=served.max_model_len,
        max_model_len_from=served.max_model_len_from,
        staging_blocks=served.staging_blocks,
        staging_block_tokens=spec.accelerator.kv_block_tokens,
        staging_from=served.staging_from,
    )


def _larger_parallelism(budget: HbmBudget, defaults: ComboDefaults) -> HbmBudget | None:
    """The smallest tensor parallelism above the stack's that fits (one device per rank; not on TPU pods,
    whose chips per pod are the combination's)."""
    if defaults.devices is not None:
        return None
    model, accelerator = budget.model, budget.accelerator
    for tp in range(budget.tensor_parallelism + 1, accelerator.devices_per_node + 1):
        if model.attention_heads % tp:
            continue
        wider = dataclasses.replace(budget, devices=tp, tensor_parallelism=tp)
        if wider.weights_fit and wider.context_fits:
            return wider
    return None


def _what_fits(budget: HbmBudget, defaults: ComboDefaults) -> str:
    options = []
    wider = _larger_parallelism(budget, defaults)
    if wider is not None:
        options.append(f"cache.tensor_parallelism {wider.tensor_parallelism} ({wider.kv_tokens:,} tokens of KV)")
    shorter = budget.kv_tokens // SUGGESTED_LENGTH_STEP * SUGGESTED_LENGTH_STEP
    if budget.weights_fit and shorter >= SUGGESTED_LENGTH_STEP:
        options.append(f"cache.max_model_len {shorter}")
    if not options:
        return "a larger accelerator or a smaller model"
    return " or ".join(options)


def check_model_fits(stack: Resolved, budget: HbmBudget) -> None:
    """The model's weights and one `max_model_len` sequence fit a replica's HBM, else one error naming the field
    to change and what fits (capacity_plan.check_fits is the other check: the replicas keep up with the traffic)."""
    model, accelerator = budget.model, budget.accelerator
    if budget.max_model_len > model.context_tokens:
        raise ConfigError(
            "cache.max_model_len",
            budget.max_model_len,
            f"must be at most {model.name}'s context of {model.context_tokens} tokens (max_position_embeddings)",
        )
    devices = f"{budget.devices} x {accelerator.reference_hardware} ({gib(accelerator.device_memory.bytes)} each)"
    share = f"at an engine share of {budget.memory_fraction:g}"
    if not budget.weights_fit:
        problem = (
            f"{model.name} ({gib(model.weight_bytes.bytes)} of weights) does not fit {devices} {share}:"
            f" {gib(budget.weights_per_device)} of weights and {gib(budget.reserve_per_device)} of working memory"
            " per device"
        )
    elif not budget.context_fits:
        problem = (
            f"{model.name} on {devices} {share} leaves {gib(budget.kv_bytes.bytes)} of KV per replica,"
            f" {budget.kv_tokens:,} tokens, fewer than one {budget.max_model_len:,}-token sequence"
            f" ({budget.max_model_len_from})"
        )
    else:
        return
    field, value, cache = "cache.tensor_parallelism", stack.tensor_parallelism, stack.config.cache
    least = _least_fraction(budget) if cache.memory_fraction is not None else None
    if least is not None:  # the stack's own share is what does not fit
        raise ConfigError("cache.memory_fraction", cache.memory_fraction, f"{problem}; what fits: {least:g} or more")
    if cache.max_model_len is not None and budget.weights_fit:
        field, value = "cache.max_model_len", cache.max_model_len
    raise ConfigError(field, value, f"{problem}; what fits: {_what_fits(budget, stack.defaults)}")


def _least_fraction(budget: HbmBudget) -> float | None:
    """The smallest engine share, in hundredths up to the most the config allows, at which the weights and one
    sequence fit; None where none does (the share is not what fails)."""
    for hundredths in range(math.floor(budget.memory_fraction * 100) + 1, round(MAX_MEMORY_FRACTION * 100) + 1):
        fraction = hundredths / 100
        larger = dataclasses.replace(budget, memory_fraction=fraction)
        if larger.weights_fit and larger.context_fits:
            return fraction
    return None
