"""Names the serving stacks of one cluster stack must not share (stacks/review/shared_cluster.py): each
stack alone loads and checks, together the second `pulumi up` would fail on an object the first owns, or the
Gateway would have two routes for one model. One line per clash, naming the stacks."""

from __future__ import annotations

import pytest

from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.review import shared_cluster
from tests.helpers import serving_plans


def test_the_example_serving_stacks_share_nothing() -> None:
    assert shared_cluster.clashes(serving_plans()) == []


def test_two_serving_stacks_in_one_namespace_clash_in_one_line_per_object() -> None:
    plans = serving_plans({"qwen3-8b": ["namespace=qwen3-32b"]})
    for name, stack_plan in plans.items():
        assert shared_cluster.clashes({name: stack_plan}) == []
    assert shared_cluster.clashes(plans) == [
        "cluster stack gke-cluster: qwen3-32b and qwen3-8b both create Namespace qwen3-32b (the second `pulumi up`"
        " fails: it exists); give each serving stack its own namespace and router.release"
    ]


def test_one_release_in_two_namespaces_is_no_clash() -> None:
    """The chart's ClusterRole carries the namespace: the same release twice is fine across namespaces."""
    assert shared_cluster.clashes(serving_plans({"qwen3-8b": ["router.release=qwen3-32b"]})) == []


def test_one_model_from_two_stacks_behind_the_gateway_clashes() -> None:
    plans = serving_plans({"qwen3-8b": ["cache.model=Qwen/Qwen3-32B", "cache.tensor_parallelism=2"]})
    [line] = shared_cluster.clashes(plans)
    assert line == (
        "cluster stack gke-cluster: qwen3-32b and qwen3-8b both serve Qwen/Qwen3-32B behind its Gateway (a request"
        " for it would have two routes); serve each model from one stack"
    )


def test_a_serving_stack_in_the_gateways_namespace_is_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        loading.load_named("qwen3-8b", ["namespace=llm-d-gateway"])
    assert str(caught.value).startswith("invalid stack config: namespace = 'llm-d-gateway': the cluster stack")
    assert "Gateway lives there" in str(caught.value)
