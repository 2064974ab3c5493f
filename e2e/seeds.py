"""Violations the e2e seeds to see the policy pack fail a real `pulumi preview`.

A floating image tag is a config value (`llmd:cache.image`). The router's CPU index above the tier is not:
the config derives `lruCapacityPerServer` from the tier, so no config value makes them disagree. It is
seeded the way the seed's users break it, by hand after the fact: a stack transform (registered by the
project copy's entry point, `ENTRY`) halves each model server's CPU tier and leaves the router's chart
values as derived, so the router believes each pod holds twice the blocks it does.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

# The rule the shrunken tier must trip.
TIER_RULE = "router-capacity-within-tier"
# The project copy's `__main__.py` while the tier violation is seeded.
ENTRY = (
    '"""e2e: the stack with every model server\'s CPU tier halved (e2e/seeds.py)."""\n\n'
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


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    if "leaderWorkerTemplate" in spec:
        lwt = spec["leaderWorkerTemplate"] or {}
        templates = [lwt.get("leaderTemplate"), lwt.get("workerTemplate")]
    else:
        templates = [spec.get("template")]
    return [t["spec"] for t in templates if isinstance(t, dict) and isinstance(t.get("spec"), dict)]


# Where a container's argv (a list, or a shell line of one) holds its tier: the JSON field of the
# --kv-transfer-config, and SGLang's --hicache-size.
_TIER_ARGS = (re.compile(r'("cpu_bytes_to_use"\s*:\s*)(\d+)'), re.compile(r"(--hicache-size[= ])(\d+)"))


def _halve_args(args: list[Any]) -> bool:
    changed = False
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            continue
        for pattern in _TIER_ARGS:
            arg = pattern.sub(lambda m: f"{m.group(1)}{int(m.group(2)) // 2}", arg)
        if arg == "--hicache-size" and i + 1 < len(args) and str(args[i + 1]).isdigit():
            args[i + 1] = str(int(args[i + 1]) // 2)
            changed = True
        changed |= arg != args[i]
        args[i] = arg
    return changed


def _halve_env(env: list[Any]) -> bool:
    changed = False
    for var in env:
        if not isinstance(var, dict) or not isinstance(var.get("value"), str):
            continue
        if var.get("name") == "LMCACHE_MAX_LOCAL_CPU_SIZE":
            try:
                var["value"] = f"{float(var['value']) / 2:g}"
            except ValueError:
                continue
            changed = True
        elif var.get("name") == "TPU_OFFLOAD_NUM_CPU_CHUNKS" and var["value"].isdigit():
            var["value"] = str(int(var["value"]) // 2)
            changed = True
    return changed


def halve_tier(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of a workload with each model server's CPU tier halved, read where its connector reads it
    (`cpu_bytes_to_use`, `LMCACHE_MAX_LOCAL_CPU_SIZE`, `--hicache-size`, `TPU_OFFLOAD_NUM_CPU_CHUNKS`);
    None when it holds no tier."""
    out = copy.deepcopy(obj)
    changed = False
    seen: set[int] = set()  # a template the leader and the workers share is halved once
    for pod in _pod_specs(out):
        if id(pod) in seen:
            continue
        seen.add(id(pod))
        for container in pod.get("containers") or []:
            changed |= _halve_args(container.get("command") or [])
            changed |= _halve_args(container.get("args") or [])
            changed |= _halve_env(container.get("env") or [])
    return out if changed else None


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
