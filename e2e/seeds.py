"""Violations the e2e seeds to see the policy pack fail a real `pulumi preview`.

A floating image tag is a config value (`llmd:cache.image`). The router's CPU index above the tier is not:
the config derives `lruCapacityPerServer` from the tier, so no config value makes them disagree. It is
seeded by hand after the fact: a stack transform (registered by the project copy's entry point, `ENTRY`)
halves the CPU tier each model-server workload is stamped with and leaves the router's chart values as
derived, so the router believes each server holds twice the blocks its workload says it does.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from components.catalog import labels

# The rule the shrunken tier must trip.
TIER_RULE = "router-capacity-within-tier"
# The project copy's `__main__.py` while the tier violation is seeded.
ENTRY = (
    '"""e2e: the stack with every model server\'s CPU-tier stamp halved (e2e/seeds.py)."""\n\n'
    "import pulumi\n\n"
    "from e2e.seeds import halve_tier_transform\n\n"
    "pulumi.runtime.register_stack_transform(halve_tier_transform)\n\n"
    "from stacks.deploy.program import run  # noqa: E402\n\n"
    "run()\n"
)
_WORKLOADS = {
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
}


def halve_tier(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of a model-server workload with its CPU-tier stamp halved (`llm-d.ai/cpu-tier-bytes` on its own
    metadata: what the rule reads, whichever setting its connector writes the tier to); None when it carries no
    positive stamp (a per-node daemon holds its tier, or it holds none)."""
    out = copy.deepcopy(obj)
    annotations = (out.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(labels.CPU_TIER_BYTES_ANNOTATION)
    if not (isinstance(value, str) and value.isascii() and value.isdigit() and int(value) > 0):
        return None
    annotations[labels.CPU_TIER_BYTES_ANNOTATION] = str(int(value) // 2)
    return out


def tier_violations(resources_json: str) -> list[str]:
    """What the pack's rule says of an offline render's resources with every workload's tier halved: the
    messages the seeded preview must fail with (none: the stack has no tier the router sizes its index by)."""
    from policies.checks.ruleset import RULES
    from policies.resources import Resource

    resources = []
    for r in json.loads(resources_json):
        inputs = r.get("inputs") or {}
        if r["type"] in _WORKLOADS:
            inputs = halve_tier(inputs) or inputs
        resources.append(Resource(r["type"], r["name"], inputs))
    rule = next(r for r in RULES if r.name == TIER_RULE)
    return [v.message for v in rule.check(resources, {})]


def halve_tier_transform(args: Any) -> Any:
    """The stack transform: `halve_tier` on every workload the engine registers."""
    import pulumi

    if args.type_ not in _WORKLOADS:
        return None
    props = halve_tier(dict(args.props))
    return None if props is None else pulumi.ResourceTransformResult(props=props, opts=args.opts)
