"""Every policy rule's enforcement level, as the README states it: three advisories, the rest mandatory.

Written out here, not read from `policies/checks/ruleset.py`, so a rule whose level flips fails a test; then the
same level through the pack (what `pulumi preview --policy-pack` enforces) and through `stacks check`
(whose exit status follows the mandatory findings only).
"""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from policies.checks.ruleset import RULES
from policies.pack import POLICIES
from stacks.__main__ import main

ADVISORY = {"prefix-scoring-tokens", "tiers-beat-recompute", "weights-fetched-once"}
MANDATORY = {
    "router-capacity-within-tier", "memory-limit-covers-tier", "filesystem-tier-rwx", "mooncake-rdma",
    "lmcache-hash-seed", "lmcache-image-tags", "lmcache-isolated-ipc", "prefix-caching-on",
    "router-selects-servers", "one-router-per-namespace", "images-pinned", "image-prepull",
    "resource-requests", "privileged-containers", "root-containers", "hardened-containers", "host-namespaces",
    "host-paths", "token-automount", "network-policies", "chart-registries", "hf-token-secret",
    "cluster-hardening",
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
    assert out.rstrip().endswith("eks-h100-efs: 26 rules, 0 mandatory and 1 advisory violations")


def test_check_exits_one_on_a_mandatory_finding(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "gpu-vllm-native-cpu", "--set", "cache.image=vllm/vllm-openai:latest"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("mandatory images-pinned [")
    assert out.rstrip().endswith("gpu-vllm-native-cpu: 26 rules, 1 mandatory and 0 advisory violations")
