"""Every policy rule's enforcement level, as the README states it: four advisories, the rest mandatory.

Written out here, not read from `policies/checks/ruleset.py`, so a rule whose level flips fails a test; then the
same level through the pack (what `pulumi preview --policy-pack` enforces) and through `stacks check`
(whose exit status follows the mandatory findings only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pulumi_policy import EnforcementLevel

from policies.checks.rule_types import Settings, setting
from policies.checks.ruleset import RULES
from policies.pack import POLICIES
from stacks.__main__ import main
from stacks.review import docs_pages

ADVISORY = {"prefix-scoring-tokens", "tiers-beat-recompute", "weights-fetched-once", "monthly-budget-default"}
MANDATORY = {
    "router-capacity-within-tier", "memory-limit-covers-tier", "filesystem-tier-rwx", "mooncake-rdma",
    "filesystem-tier-capacity", "lmcache-hash-seed", "lmcache-image-tags", "lmcache-isolated-ipc", "prefix-caching-on",
    "router-selects-servers", "one-router-per-namespace", "images-pinned", "image-prepull",
    "resource-requests", "privileged-containers", "root-containers", "hardened-containers", "host-namespaces",
    "host-paths", "token-automount", "network-policies", "chart-registries", "hf-token-secret",
    "cluster-hardening", "identity-labels", "monthly-budget", "filesystem-tier-within-limits",
    "annotator-least-privilege",
    "kv-events-block-size", "kv-events-hash-seed", "kv-events-port-per-rank", "precise-scorer-publishers",
    "prefill-rate-agrees",
    "pd-block-size", "pd-hash-seed", "pd-rank-ports", "pd-handoff-both-sides",
}  # fmt: skip
LEVELS = {**{name: "mandatory" for name in MANDATORY}, **{name: "advisory" for name in ADVISORY}}


def test_every_rule_has_its_stated_level() -> None:
    assert {rule.name: rule.enforcement for rule in RULES} == LEVELS


def test_the_pack_enforces_each_rule_at_its_level() -> None:
    levels = {p.name: p.enforcement_level for p in POLICIES}
    expected = {
        name: EnforcementLevel.ADVISORY if level == "advisory" else EnforcementLevel.MANDATORY
        for name, level in LEVELS.items()
    }
    assert {name: levels.get(name) for name in LEVELS} == expected
    # Anything else in the pack (a helper that reports nothing) can never block `pulumi up`.
    assert {n: lv for n, lv in levels.items() if n not in LEVELS and lv != EnforcementLevel.ADVISORY} == {}


def test_check_exits_zero_on_advisory_findings_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "eks-h100-efs"]) == 0  # its EFS tier cannot beat recompute: advisory
    out = capsys.readouterr().out
    assert out.startswith("advisory tiers-beat-recompute [")
    assert out.rstrip().endswith("eks-h100-efs: 41 rules, 0 mandatory and 1 advisory violations")


def test_check_exits_one_on_a_mandatory_finding(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "gpu-vllm-native-cpu", "--set", "cache.image=vllm/vllm-openai:latest"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("mandatory images-pinned [")
    assert out.rstrip().endswith("gpu-vllm-native-cpu: 41 rules, 1 mandatory and 0 advisory violations")


# Each rule's config keys (what `--policy-pack-config` sets) and defaults, written out: a renamed key fails here.
CONFIG: dict[str, dict[str, Any]] = {
    "tiers-beat-recompute": {"filesystemReadBandwidth": 0, "prefixTokens": 10_000},
    "prefix-caching-on": {"testMode": False},
    "monthly-budget": {"monthlyBudget": 0.0},
    "monthly-budget-default": {"defaultMonthlyBudget": 0.0},
    "filesystem-tier-within-limits": {"throttleShare": 0.1},
    "images-pinned": {"allowMutableTags": False},
    "privileged-containers": {"allowedContainers": ["tpu-node-setup", "lmcache"]},
    "host-paths": {"allowedHostPaths": ["/mnt/mooncake-offload"]},
    "network-policies": {"requireNetworkPolicies": True},
    "chart-registries": {
        "allowedChartRegistries": [
            "oci://ghcr.io/llm-d/charts/",
            "https://nvidia.github.io/k8s-device-plugin",
            "https://kedacore.github.io/charts",
            "https://kubernetes.github.io/autoscaler",
            "oci://registry.k8s.io/gateway-api-inference-extension/charts/",
        ],
        "allowLocalCharts": False,
    },
}


def test_every_rules_config_keys_and_defaults() -> None:
    assert {rule.name: rule.config for rule in RULES if rule.config} == CONFIG
    schemas = {p.name: p.config_schema for p in POLICIES if p.name in LEVELS}
    properties = {name: dict(s.properties) for name, s in schemas.items() if s is not None}
    types = {bool: "boolean", int: "integer", float: "number", list: "array"}
    assert {name: {k: {**v, "description": "-"} for k, v in props.items()} for name, props in properties.items()} == {
        name: {key: {"type": types[type(value)], "default": value, "description": "-"}
               for key, value in keys.items()}
        for name, keys in CONFIG.items()
    }  # fmt: skip
    # each key says what it does, in the schema the engine shows and in docs/policy-rules.md
    descriptions = [v["description"] for props in properties.values() for v in props.values()]
    assert all(isinstance(d, str) and len(d) > 10 for d in descriptions), descriptions
    page = docs_pages.rules_markdown()
    for name, keys in CONFIG.items():
        for key, value in keys.items():
            assert f"| `{name}` | `{key}` | `{json.dumps(value)}` |" in page


def test_the_engines_config_keys_reach_each_rules_typed_config() -> None:
    rule = {r.name: r for r in RULES}
    charts = rule["chart-registries"].settings.read({"allowLocalCharts": True, "allowedChartRegistries": ["oci://x/"]})
    assert (charts.allowed_chart_registries, charts.allow_local_charts) == (("oci://x/",), True)
    # an empty list falls back to the defaults, as the rule always read it
    assert rule["host-paths"].settings.read({"allowedHostPaths": []}).allowed_host_paths == ("/mnt/mooncake-offload",)
    payoff = rule["tiers-beat-recompute"].settings.read({"filesystemReadBandwidth": 2.5e9, "prefixTokens": 0})
    assert (payoff.filesystem_read_bandwidth, payoff.prefix_tokens) == (2.5e9, 10_000)
    assert rule["network-policies"].settings.read({}).require_network_policies is True
    assert rule["network-policies"].settings.read({"requireNetworkPolicies": False}).require_network_policies is False
    assert rule["prefix-caching-on"].settings.read({"testMode": True}).test_mode is True
    assert rule["images-pinned"].settings.read({"allowMutableTags": True}).allow_mutable_tags is True
    budget = rule["monthly-budget-default"].settings
    assert budget.read({"defaultMonthlyBudget": 25000}).default_monthly_budget == 25000.0
    assert budget.read({}).default_monthly_budget == 0.0
    assert rule["privileged-containers"].settings.read({"allowedContainers": ["x"]}).allowed_containers == ("x",)


@dataclass(frozen=True)
class _NewRuleConfig(Settings):
    """A new rule's settings: written once, read with no code of its own."""

    limit: float = setting("limitBytes", 1.5, "a limit")
    names: tuple[str, ...] = setting("names", ("a",), "names")
    strict: bool = setting("strict", True, "a switch")


def test_a_rules_settings_are_read_from_their_records_alone() -> None:
    assert _NewRuleConfig.read({}) == _NewRuleConfig(1.5, ("a",), True)
    assert _NewRuleConfig.read({"limitBytes": 3, "names": ["x", "y"], "strict": False}) == _NewRuleConfig(
        3.0, ("x", "y"), False
    )
    assert isinstance(_NewRuleConfig.read({"limitBytes": 3}).limit, float)
    # unset, null or empty takes the default; a boolean set false stays false
    assert _NewRuleConfig.read({"limitBytes": None, "names": [], "strict": None}) == _NewRuleConfig()
    assert [(r.key, r.default) for r in _NewRuleConfig.records()] == [
        ("limitBytes", 1.5),
        ("names", ["a"]),
        ("strict", True),
    ]
