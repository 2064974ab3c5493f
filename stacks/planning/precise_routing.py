"""Precise prefix routing resolved for a stack (`router.prefix_routing: precise`): what each engine publishes and
what the router's index is configured with, from one set of figures, so the block size, hash seed and port the
engines use are the ones the router hashes and dials. The medium weights are derived from the payoff.

Whether a stack routes precisely is the config's field, and the rendered router values say it too
(`routing_weights.Routing.precise`, read from the scorer's producer): the plan reads either.
"""

from __future__ import annotations

from components.catalog import labels
from components.specs.kv_events import MediumWeight, PreciseIndex, Publisher
from components.specs.payoff_table import Payoff
from stacks.config import StackConfig
from stacks.config.cross_checks import check_stack
from stacks.planning.resolution import Resolved

# A CPU-tier weight where the payoff has no CPU bandwidth to derive one from: llm-d-kv-cache's default
# (`kvcache/backend.go` DefaultKVCacheBackendConfig: gpu 1.0, cpu 0.8).
DEFAULT_CPU_WEIGHT = 0.8


def other_routing(config: StackConfig) -> StackConfig:
    """The stack with the other `router.prefix_routing`, checked as a loaded stack is: a connector whose engine
    leaves a tier unreported is refused for precise routing (ConfigError, its one line)."""
    other = "approximate" if config.router.prefix_routing == "precise" else "precise"
    flipped = config.model_copy(update={"router": config.router.model_copy(update={"prefix_routing": other})})
    check_stack(flipped)
    return flipped


def is_precise(stack: Resolved) -> bool:
    return stack.config.router.prefix_routing == "precise"


def publisher(stack: Resolved) -> Publisher | None:
    """What every model server of the stack publishes (None: approximate routing)."""
    if not is_precise(stack):
        return None
    return Publisher(
        block_tokens=stack.connector.engine_block(stack.choice),
        hash_seed=labels.KV_HASH_SEED,
        model=stack.model.name,
    )


def cpu_weight(payoff: Payoff) -> tuple[float, str]:
    """What a block on the CPU tier saves against one in HBM: the prefill it replaces less its reload, as a share
    of the prefill. Reload over recompute is the payoff's break-even bandwidth over the tier's, so the weight is
    1 - break-even / bandwidth (0 where the tier reloads slower than recompute)."""
    bandwidth = payoff.tiers[0].bandwidth if payoff.tiers else None
    if not bandwidth:
        return DEFAULT_CPU_WEIGHT, "llm-d-kv-cache's default (no CPU-tier bandwidth to derive one from)"
    weight = round(max(0.0, 1 - payoff.break_even / bandwidth), 3)
    formula = (
        f"1 - break-even {payoff.break_even / 1e9:.2f} GB/s / CPU tier {bandwidth / 1e9:.2f} GB/s per pod"
        f" (reload over recompute at {payoff.prefix_tokens} tokens)"
    )
    return weight, formula


def precise_index(stack: Resolved, payoff: Payoff) -> PreciseIndex | None:
    """The router's side of the same figures (None: approximate routing)."""
    published = publisher(stack)
    if published is None:
        return None
    weights = []
    for tier in stack.connector.kv_events(stack.choice.filesystem_tier):
        if tier.medium is None:
            continue
        if tier.tier == "hbm":
            weights.append(MediumWeight(tier.medium.lower(), 1.0, "HBM: the whole prefill saved"))
        elif tier.tier == "cpu":
            weight, formula = cpu_weight(payoff)
            weights.append(MediumWeight(tier.medium.lower(), weight, formula))
    return PreciseIndex(
        block_tokens=published.block_tokens,
        hash_seed=published.hash_seed,
        port=published.port,
        engine=stack.connector.engine,
        weights=tuple(weights),
    )
