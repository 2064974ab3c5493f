"""The change plan sees the objects the charts render (issue 29 item 5): the router chart and the Gateway's
body-based-routing chart expanded with the pinned Helm from the values the program passes, so a value that
adds, removes or changes a chart object shows as that object's row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e import compare
from scripts import install_helm
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan_any
from stacks.review import chart_objects
from stacks.review.changeplan import Change
from stacks.review.diff import change_plan
from stacks.review.render import render
from tests.helpers import UPSTREAM, rendered

RBAC = "kubernetes:rbac.authorization.k8s.io/v1"
EPP = "llmd-router-chart:llm-d-tiered-prefix-cache/tiered-prefix-cache-epp"
LEADER = "llmd-router-chart:llm-d-tiered-prefix-cache/tiered-prefix-cache-epp-leader-election"


def _rows(changes: list[Change]) -> set[tuple[str, str, str]]:
    return {(c.kind, c.type, c.name) for c in changes}


def test_a_second_epp_adds_the_charts_leader_election_role_and_binding() -> None:
    one, two = rendered("dev").resources, rendered("dev", ("router.epp_replicas=2",)).resources
    planned = change_plan(one, two)
    assert {
        ("added", f"{RBAC}:Role", LEADER),
        ("added", f"{RBAC}:RoleBinding", LEADER + "-binding"),
        ("rolling", "kubernetes:apps/v1:Deployment", EPP),
    } <= _rows(planned)
    # the ConfigMap and the Service the value leaves alone are not in the plan
    assert not [c for c in planned if c.type == "kubernetes:core/v1:ConfigMap"]
    back = change_plan(two, one)
    assert {("removed", f"{RBAC}:Role", LEADER), ("removed", f"{RBAC}:RoleBinding", LEADER + "-binding")} <= _rows(back)


def test_a_tier_change_replaces_the_epps_config_and_rolls_the_epp_and_nothing_else_of_the_chart() -> None:
    old, new = rendered("dev").resources, rendered("dev", ("cache.tier.cpu=6GiB",)).resources
    children = [c for c in change_plan(old, new) if c.name.startswith("llmd-router-chart:")]
    assert _rows(children) == {
        ("replace", "kubernetes:core/v1:ConfigMap", EPP),
        ("rolling", "kubernetes:apps/v1:Deployment", EPP),
    }
    [config_map] = [c for c in children if c.kind == "replace"]
    assert config_map.why.startswith("delete-first: `data")
    [epp] = [c for c in children if c.kind == "rolling"]
    assert "CPU tier" not in epp.why  # the EPP holds none


def test_an_unchanged_chart_is_not_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(row: object) -> None:
        raise AssertionError("expanded")

    monkeypatch.setattr(chart_objects, "objects", refuse)
    old, new = rendered("dev").resources, rendered("dev", ("cache.replicas=2",)).resources
    assert change_plan(old, new)  # the model server scales; the chart's inputs are the same


def _cluster_resources(overrides: list[str], out: Path) -> str:
    render(plan_any(loading.load_named("gke-cluster", overrides), "gke-cluster"), "gke-cluster").write(out)
    return (out / "resources.json").read_text()


def test_the_gateways_body_based_routing_chart_is_expanded(tmp_path: Path) -> None:
    old = _cluster_resources([], tmp_path / "a")
    new = _cluster_resources(["images.mirror=off"], tmp_path / "b")
    children = [c for c in change_plan(old, new) if c.name.startswith("llmd-gateway-bbr:")]
    assert ("rolling", "kubernetes:apps/v1:Deployment", "llmd-gateway-bbr:llm-d-gateway/body-based-router") in _rows(
        children
    )


def test_the_expanded_epp_carries_what_the_programs_transforms_add() -> None:
    [row] = [r for r in json.loads(rendered("dev").resources) if r["name"] == "llmd-router-chart"]
    objects = chart_objects.objects(row)
    epp = objects[("kubernetes:apps/v1:Deployment", EPP)]["inputs"]
    annotations = epp["spec"]["template"]["metadata"]["annotations"]
    assert "llm-d.ai/router-values-checksum" in annotations
    pod = epp["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True  # the EPP watches its pool
    assert all(c["securityContext"]["allowPrivilegeEscalation"] is False for c in pod["containers"])


def test_a_missing_helm_is_installed_where_the_chart_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone (no .tools/) running the change plan by any path, `python -m e2e` included: Helm is installed
    once, at the first expansion, and the plan goes on with it."""
    real = install_helm.HELM
    missing = loading.PROJECT_DIR / ".tools" / "no-helm" / "helm"
    installs: list[Path] = []

    def install() -> Path:
        installs.append(missing)
        return real

    monkeypatch.setattr(install_helm, "HELM", missing)
    monkeypatch.setattr(install_helm, "install", install)
    old, new = rendered("dev").resources, rendered("dev", ("router.epp_replicas=2",)).resources
    assert change_plan(old, new)
    assert len(installs) >= 1


def test_a_helm_that_cannot_be_installed_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def install() -> Path:
        raise SystemExit("error: the pinned Helm is linux-amd64; put a Helm v3.17.1 binary at X")

    monkeypatch.setattr(install_helm, "HELM", loading.PROJECT_DIR / ".tools" / "no-helm" / "helm")
    monkeypatch.setattr(install_helm, "install", install)
    old, new = rendered("dev").resources, rendered("dev", ("router.epp_replicas=2",)).resources
    with pytest.raises(ConfigError) as caught:
        change_plan(old, new)
    text = str(caught.value)
    assert "\n" not in text
    assert text == (
        "invalid stack config: helm = '.tools/no-helm/helm': the change plan expands the router chart with the"
        f" pinned Helm {install_helm.HELM_VERSION}, which is missing and could not be installed (error: the pinned"
        " Helm is linux-amd64; put a Helm v3.17.1 binary at X): run `python scripts/install_helm.py`"
    )


def test_the_e2e_epp_replicas_change_plans_what_the_engine_plans_for_the_charts_objects() -> None:
    """The e2e's `epp replicas` change (e2e/changes.py) on the chart file the e2e deploys: the steps are those
    the engine plans for chart objects (a create per new object, an update per changed one; not recorded from
    a run yet: `./run e2e dev` records them)."""
    chart = UPSTREAM / "charts" / "llm-d-router-standalone-v0.10.0.tgz"
    e2e = (f"router.chart_file={chart}", "router.version=v0.10.0")
    old, new = rendered("dev", e2e).resources, rendered("dev", (*e2e, "router.epp_replicas=2")).resources
    planned = change_plan(old, new)
    children = {(c.type, c.name): c.kind for c in planned if c.name.startswith("llmd-router-chart:")}
    assert children == {
        (f"{RBAC}:Role", LEADER): "added",
        (f"{RBAC}:RoleBinding", LEADER + "-binding"): "added",
        ("kubernetes:apps/v1:Deployment", EPP): "rolling",
    }
    chart_urn = "urn:pulumi:e2e::llmd::llmd:cache_stack:CacheStack$llmd:router:Router$kubernetes:helm.sh/v4:Chart"
    op = {"added": "create", "rolling": "update"}
    steps = [{"op": op[kind], "urn": f"{chart_urn}${t}::{n}"} for (t, n), kind in children.items()]
    assert compare.compare_plans(steps, planned) == []
    assert [d.line() for d in compare.compare_plans(steps[1:], planned)] == [
        f"{RBAC}:Role {LEADER}: the engine plans no change, the change plan says added"
    ]
