"""Every rule sees every connector's CPU tier: each model-server workload is stamped with the bytes of the CPU tier
one of its pods holds (`llm-d.ai/cpu-tier-bytes`, the connector's `pod_cpu_tier` from its own sizes), a per-node
daemon that holds the tier with its share, and the whole pack, run on a render of every connector with one
memory limit shrunk below what it holds (a seeded draw per workload), flags it with `memory-limit-covers-tier`;
with the shared claim made ReadWriteOnce, `filesystem-tier-rwx` flags every connector that writes it; with the
router's CPU index inflated, `router-capacity-within-tier` flags every connector whose router counts the tier.
Before the stamp the memory rule read only the native connector's `cpu_bytes_to_use`, and the router rule four
connectors' own settings: a connector that names its tier otherwise was not flagged.

A connector added to the registry needs a preset here (the first test): tests/test_contributing.py runs this
module, unedited, on its fixture connector, whose tier setting no rule knows by name."""

from __future__ import annotations

import random
from typing import Any

import pytest

from components.catalog import labels
from components.specs.connectors import IMPLEMENTATIONS
from components.specs.connectors.mooncake_store import client_of
from components.units import GiB
from policies.checks.rule_types import Violation
from policies.checks.ruleset import RULES
from policies.resources import CHART_TYPE, CLAIM_TYPE, Pod, Resource, endpoint_picker_config, pods, quantity
from stacks.config import loading
from stacks.config.connector_choice import connector_of
from stacks.planning.plan import plan
from stacks.planning.stack_plan import StackPlan
from stacks.review import offline

SEED = 40


def _presets_by_connector() -> dict[tuple[str, str, str], tuple[str, bool]]:
    """The first preset of each (connector, variant, host type) the presets run, and whether that connector
    writes the shared claim there: every connector's render."""
    out: dict[tuple[str, str, str], tuple[str, bool]] = {}
    for name in loading.preset_names():
        config = loading.load_preset(name)
        connector, variant = connector_of(config), config.cache.tier.variant
        out.setdefault((connector.key, variant, config.cache.host_type), (name, connector.uses_tier_claim(variant)))
    return out


PRESETS = _presets_by_connector()


def test_every_connector_of_the_registry_has_a_render_here() -> None:
    assert {key for key, _, _ in PRESETS} == {c.key for c in IMPLEMENTATIONS}


def _render(name: str) -> tuple[StackPlan, list[Resource]]:
    stack_plan = plan(loading.load_preset(name))
    assert isinstance(stack_plan, StackPlan)
    recording = offline.record(stack_plan, name)
    return stack_plan, [Resource(r.type, r.name, r.inputs) for r in recording.resources]


def _findings(resources: list[Resource]) -> list[tuple[str, Violation]]:
    """Every mandatory rule of the pack, each with its defaults (as `./run check` runs them)."""
    return [(r.name, v) for r in RULES if r.enforcement == "mandatory" for v in r.check(resources, r.config)]


def _stamp(pod: Pod) -> str | None:
    value = ((pod.owner.props.get("metadata") or {}).get("annotations") or {}).get(labels.CPU_TIER_BYTES_ANNOTATION)
    return value if isinstance(value, str) else None


def _holds(stack_plan: StackPlan, pod: Pod) -> int:
    """What the pod's memory must hold, from the plan (not the render): a model server's CPU tier (the
    connector's own figure) and its /dev/shm; a daemon's L1 or DRAM share (the LMCache server, the Mooncake
    Client)."""
    stack, sizing = stack_plan.stack, stack_plan.sizing
    if pod.labels.get(labels.KV_CONNECTOR_LABEL):
        tier = stack.connector.pod_cpu_tier(sizing, stack.group_size).bytes
        return max(tier, sizing.shm_size_limit.bytes if sizing.shm_size_limit else 0)
    client = client_of(sizing)
    return client.dram.bytes if client is not None else sizing.cpu_tier_per_pod.bytes


def _holders(resources: list[Resource]) -> list[Pod]:
    """Each workload's first pod template that carries a CPU-tier stamp (model servers and tier daemons)."""
    seen: set[str] = set()
    out = []
    for pod in pods(resources):
        if _stamp(pod) is not None and pod.owner.name not in seen:
            seen.add(pod.owner.name)
            out.append(pod)
    return out


@pytest.mark.parametrize("name", sorted({name for name, _ in PRESETS.values()}))
def test_every_rule_sees_a_memory_limit_shrunk_below_every_connectors_tier(name: str) -> None:
    stack_plan, resources = _render(name)
    assert _findings(resources) == []
    holders = _holders(resources)
    servers = [p for p in holders if p.labels.get(labels.KV_CONNECTOR_LABEL)]
    assert servers, "every connector's render has a model-server workload stamped with its CPU tier"
    for pod in servers:  # the stamp is the connector's own figure, for every role
        stack = stack_plan.stack
        assert _stamp(pod) == str(stack.connector.pod_cpu_tier(stack_plan.sizing, stack.group_size).bytes)
    rng = random.Random(f"{SEED}:{name}")
    for index in range(len(holders)):
        _, shrunk = _render(name)
        pod = _holders(shrunk)[index]
        need = _holds(stack_plan, pod)
        memory = rng.randrange(GiB, need) if need > GiB else rng.randrange(1, need)
        container: dict[str, Any] = max(pod.containers(init=False), key=_limit)
        container["resources"]["limits"]["memory"] = str(memory)
        container["resources"]["requests"]["memory"] = str(memory)
        found = [(rule, v.resource.name if v.resource else "") for rule, v in _findings(shrunk)]
        assert ("memory-limit-covers-tier", pod.owner.name) in found, (name, pod.owner.name, memory, need)


def _cpu_index(resources: list[Resource]) -> list[dict[str, Any]]:
    """The router's CPU prefix index (the approx-prefix-cache-producer sized by `lruCapacityPerServer`), in either
    chart layout (none: the router scores without counting the tier); the map layout's plugins are the chart's own,
    so a change to them changes the render."""
    plugins: list[dict[str, Any]] = []
    for r in resources:
        values = r.props.get("values") or {}
        if r.type == CHART_TYPE and "router" in values:
            config = values["router"]["epp"].get("pluginsConfig")
            plugins += (config or endpoint_picker_config(values)).get("plugins") or []
    return [
        p
        for p in plugins
        if p.get("type") == "approx-prefix-cache-producer" and "lruCapacityPerServer" in (p.get("parameters") or {})
    ]


def _router_findings(resources: list[Resource]) -> list[str]:
    return [v.message for rule, v in _findings(resources) if rule == "router-capacity-within-tier"]


@pytest.mark.parametrize("name", sorted({name for name, _ in PRESETS.values()}))
def test_the_router_rule_sees_an_index_beyond_every_connectors_tier(name: str) -> None:
    """`router-capacity-within-tier` reads the tier a server reaches from its workload's stamp, whatever setting
    its connector writes the tier under: the router's index inflated 1000x is flagged for every connector whose
    router counts the tier (the plan's `router_counts_tier`), and the largest index the rule names passes while one
    block more does not. Before the stamp the rule parsed four connectors' settings (the native JSON, LMCache's
    env, `--hicache-size`, TPU chunks) and saw 0 violations on a connector that names its tier otherwise."""
    stack_plan, resources = _render(name)
    assert _findings(resources) == []
    index = _cpu_index(resources)
    assert bool(index) is stack_plan.sizing.router_counts_tier
    if not index:
        return
    for plugin in index:
        plugin["parameters"]["lruCapacityPerServer"] *= 1000
    found = _router_findings(resources)
    assert found, name
    most = min(int(m.rsplit("at most ", 1)[1].rstrip(")")) for m in found)
    for plugin in index:
        plugin["parameters"]["lruCapacityPerServer"] = most
    assert _router_findings(resources) == []
    for plugin in index:
        plugin["parameters"]["lruCapacityPerServer"] = most + 1
    assert _router_findings(resources)


def _limit(container: dict[str, Any]) -> int:
    """The container's memory limit in bytes (the one with the largest holds the tier)."""
    limit = quantity(((container.get("resources") or {}).get("limits") or {}).get("memory"))
    return limit.bytes if limit is not None else 0


@pytest.mark.parametrize("name", sorted({name for name, shared in PRESETS.values() if shared}))
def test_every_connector_that_writes_the_shared_tier_needs_its_claim_read_write_many(name: str) -> None:
    _, resources = _render(name)
    assert _findings(resources) == []
    for claim in (r for r in resources if r.type == CLAIM_TYPE):
        claim.props["spec"]["accessModes"] = ["ReadWriteOnce"]
    flagged = {v.resource.name for rule, v in _findings(resources) if rule == "filesystem-tier-rwx" and v.resource}
    servers = {p.owner.name for p in pods(resources) if p.labels.get(labels.KV_CONNECTOR_LABEL)}
    assert servers and servers <= flagged


# Not a stamp: missing, negative, a decimal, a unit, empty, padded, fullwidth digits, a number not a string.
@pytest.mark.parametrize("value", [None, "-1", "1.5", "300Gi", "", " 1", "\uff11", 1])
def test_a_connector_workload_without_a_whole_cpu_tier_stamp_is_reported(value: Any) -> None:
    """`identity-labels` reports it; the memory rule, blind to that workload's stamp, still reads what the
    native connector's own config says (the render's pod stays flagged when its limit is shrunk)."""
    _, resources = _render("gpu-vllm-native-cpu")
    [pod] = _holders(resources)
    annotations = pod.owner.props["metadata"]["annotations"]
    if value is None:
        del annotations[labels.CPU_TIER_BYTES_ANNOTATION]
    else:
        annotations[labels.CPU_TIER_BYTES_ANNOTATION] = value
    what = "the bytes of the CPU tier one of its pods holds in its own memory (the connector's pod_cpu_tier)"
    expected = (
        f"its pods carry {labels.KV_CONNECTOR_LABEL}: native but it carries no {labels.CPU_TIER_BYTES_ANNOTATION}"
        f" annotation: annotate the workload's own metadata with {what}"
        if value is None
        else f"it carries {labels.CPU_TIER_BYTES_ANNOTATION}: {value!r}, not a whole number as a string:"
        f" set it to {what}"
    )
    assert [(rule, v.message) for rule, v in _findings(resources)] == [("identity-labels", expected)]
    next(pod.containers(init=False))["resources"]["limits"]["memory"] = "200Gi"  # below the 300 GiB tier
    assert "memory-limit-covers-tier" in {rule for rule, _ in _findings(resources)}
