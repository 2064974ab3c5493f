"""The policy tests' shared cases: a preset's recorded resources, a rule's violations on them, and
hand-built pods to break a rule with."""

from __future__ import annotations

import copy
from typing import Any

from policies.checks.rule_types import Rule
from policies.checks.ruleset import RULES
from policies.resources import Resource
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review import offline

RULE = {r.name: r for r in RULES}
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def recorded(name: str = "gpu-vllm-native-cpu") -> list[Resource]:
    """A preset's recording; 'PRESET+ACCELERATOR': the preset on another accelerator profile."""
    preset, _, accelerator = name.partition("+")
    overrides = [f"cache.accelerator={accelerator}"] if accelerator else []
    recording = offline.record(plan(loading.load_preset(preset, overrides)), preset)
    return [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]


def violations_of(rule: Rule[Any], resources: list[Resource], **config: Any) -> list[str]:
    return [v.message for v in rule.check(resources, {**rule.config, **config})]


def deployment_of(resources: list[Resource]) -> Resource:
    return next(r for r in resources if r.type == DEPLOYMENT)


def container_of(resources: list[Resource]) -> dict[str, Any]:
    container: dict[str, Any] = deployment_of(resources).props["spec"]["template"]["spec"]["containers"][0]
    return container


def chart_values_of(resources: list[Resource]) -> dict[str, Any]:
    values: dict[str, Any] = next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart").props["values"]
    return values


def pod_resource(name: str, container: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> Resource:
    labels = labels or {"app": name}
    return Resource(
        DEPLOYMENT,
        name,
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container], **spec}},
            },
        },
    )
