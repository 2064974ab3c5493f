"""The summary's rows of precise prefix routing: what the engines publish and the index's figures, in place of the
approximate index's capacity rows it has no use for."""

from __future__ import annotations

from components.specs.kv_events import PreciseIndex
from stacks.planning.plan import StackPlan
from stacks.planning.precise_routing import precise_index


def prefix_routing_rows(stack_plan: StackPlan) -> list[tuple[str, str]]:
    """The publisher and the pickers that dial it (none under approximate routing)."""
    publisher = stack_plan.model_server.publisher
    if publisher is None:
        return []
    pickers = stack_plan.router_values["router"]["epp"]["replicas"]
    return [
        (
            "prefix routing",
            f"precise: each model-server pod publishes its KV-cache events on port {publisher.port}"
            f" (topic `{publisher.topic}`), which each of the {pickers} endpoint pickers"
            f" ({'active-active' if pickers > 1 else 'one'}) dials and indexes",
        )
    ]


def sizing_rows(stack_plan: StackPlan) -> list[tuple[str, str, str]]:
    """The sizing derivations, the router's approximate index left out where it routes precisely, and the precise
    index's own figures."""
    index = precise_index(stack_plan.stack, stack_plan.payoff)
    sizing = [d for d in stack_plan.sizing.derivations if index is None or not d.name.startswith("router ")]
    return [*((d.name, d.value, d.formula) for d in sizing), *precise_rows(index)]


def precise_rows(index: PreciseIndex | None) -> list[tuple[str, str, str]]:
    """The precise index's figures, shared with the engines (none under approximate routing)."""
    if index is None:
        return []
    return [
        ("precise index block", f"{index.block_tokens} tokens", "the engine's KV block, stated on every engine"),
        ("precise index hash seed", index.hash_seed, "PYTHONHASHSEED on every engine, the router's hashSeed"),
        *((f"precise index weight `{w.medium}`", f"{w.weight:g}", w.formula) for w in index.weights),
    ]
