"""The e2e run's comparisons: live objects against the render, the engine's plan against the change plan."""

from __future__ import annotations

from e2e import compare
from policies.resources import CHART_TYPE
from stacks.review.changeplan import Change

_STACK = "urn:pulumi:e2e::llmd::"


def _urn(types: str, name: str) -> str:
    return f"{_STACK}{types}::{name}"


def test_urn_key_takes_the_last_type_and_the_name() -> None:
    urn = _urn("llmd:cache_stack:CacheStack$kubernetes:apps/v1:Deployment", "llmd-model-server-decode")
    assert compare.urn_key(urn) == ("kubernetes:apps/v1:Deployment", "llmd-model-server-decode")


def test_missing_fields_compares_scalars_as_text_and_ignores_server_defaults() -> None:
    want = {"spec": {"replicas": 1, "resources": {"limits": {"nvidia.com/gpu": 1}}, "empty": {}}}
    have = {"spec": {"replicas": 1, "resources": {"limits": {"nvidia.com/gpu": "1"}}, "extra": True}}
    assert compare.missing_fields(want, have) == []
    assert compare.missing_fields({"a": [1, 2]}, {"a": [1]}) == ["a: expected 2 items, found [1]"]
    assert compare.missing_fields({"a": {"b": "x"}}, {"a": {"b": "y"}}) == ["a.b: expected 'x', found 'y'"]
    assert compare.missing_fields({"a": compare.SECRET_MARK}, {"a": "anything"}) == []
    assert compare.missing_fields({"a": True}, {"a": "true"}) == []
    # The API server writes quantities in its canonical form.
    assert compare.missing_fields({"cpu": "0.5", "memory": "1024Mi"}, {"cpu": "500m", "memory": "1Gi"}) == []
    assert compare.missing_fields({"cpu": "0.5"}, {"cpu": "600m"}) == ["cpu: expected '0.5', found '600m'"]


def test_plans_agree_when_kinds_match_and_components_are_left_out() -> None:
    deployment = ("kubernetes:apps/v1:Deployment", "d")
    steps = [
        {"op": "update", "urn": _urn(f"llmd:cache_stack:CacheStack${deployment[0]}", deployment[1])},
        {"op": "same", "urn": _urn("kubernetes:core/v1:Service", "s")},
        {"op": "update", "urn": _urn("llmd:cache_stack:CacheStack", "llmd")},
    ]
    changes = [
        Change("rolling", *deployment, "its pods restart"),
        Change("update", "llmd:cache_stack:CacheStack", "llmd", ""),
    ]
    assert compare.compare_plans(steps, changes) == []


def test_a_replacement_the_plan_calls_an_update_is_a_disagreement() -> None:
    key = ("kubernetes:core/v1:ConfigMap", "c")
    steps = [
        {"op": "create-replacement", "urn": _urn(key[0], key[1])},
        {"op": "replace", "urn": _urn(key[0], key[1])},
        {"op": "delete-replaced", "urn": _urn(key[0], key[1])},
    ]
    out = compare.compare_plans(steps, [Change("update", *key, "in place")])
    assert [(d.engine, d.plan) for d in out] == [("replace", "update")]
    assert compare.compare_plans(steps, [Change("replace", *key, "delete-first")]) == []


def test_a_change_only_one_side_sees_is_a_disagreement() -> None:
    key = ("kubernetes:core/v1:Service", "s")
    assert [d.plan for d in compare.compare_plans([{"op": "update", "urn": _urn(*key)}], [])] == ["no change"]
    assert [d.engine for d in compare.compare_plans([], [Change("added", *key, "created")])] == ["no change"]


_CHART = "llmd:router:Router$kubernetes:helm.sh/v4:Chart"


def test_a_renamed_charts_objects_answer_to_the_charts_row() -> None:
    chart = Change("replace", CHART_TYPE, "llmd-router-chart", "renamed")
    recreated = [
        {"op": "create", "urn": _urn(f"{_CHART}$kubernetes:core/v1:Service", "llmd-router-chart:ns2/r-epp")},
        {"op": "delete", "urn": _urn(f"{_CHART}$kubernetes:core/v1:Service", "llmd-router-chart:ns/r-epp")},
    ]
    assert compare.compare_plans(recreated, [chart]) == []
    # The plan says the objects are recreated; an engine that recreates nothing disagrees.
    (only,) = compare.compare_plans([], [chart])
    assert (only.engine, only.plan) == ("no recreated objects", "replace")


def test_a_charts_objects_changed_without_a_row_are_a_disagreement() -> None:
    step = {"op": "replace", "urn": _urn(f"{_CHART}$kubernetes:core/v1:ConfigMap", "llmd-router-chart:ns/r-epp")}
    (only,) = compare.compare_plans([step], [Change("update", CHART_TYPE, "llmd-router-chart", "values")])
    assert (only.type, only.engine, only.plan) == ("kubernetes:core/v1:ConfigMap", "replace", "no change")


def test_the_objects_a_plan_replaces_are_named_as_the_api_server_names_them() -> None:
    import json

    rows = [
        {"type": "kubernetes:batch/v1:Job", "name": "llmd-verify", "inputs": {"kind": "Job", "metadata": {"name": "v"}}}
    ]
    changes = [
        Change("replace", "kubernetes:batch/v1:Job", "llmd-verify", "template"),
        Change("replace", "kubernetes:core/v1:ConfigMap", "llmd-router-chart:ns/r-epp", "data"),
        Change("rolling", "kubernetes:apps/v1:Deployment", "llmd-model-server", "restarts"),
    ]
    assert compare.replaced_objects(changes, json.dumps(rows)) == {("Job", "v"), ("ConfigMap", "r-epp")}
