"""e2e/layers.py's pure parts: the stack configs the layered run writes (valid, one pool both serving stacks
fit), the `--path` keys they become, the packaged BBR chart, and which runs `./run e2e` selects."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from e2e import layers
from e2e.__main__ import DEFAULT, selection
from e2e.layers import CLUSTER_STACK, POOL, SERVING, cluster_sections, flatten, serving_sections
from e2e.nodes import device_requests
from e2e.session import GAIE_CRDS, ROUTER_CHART, ROUTER_CHART_VERSION
from stacks.config import loading
from stacks.config.cluster_outputs import describe
from stacks.planning.plan import plan


@pytest.fixture
def cluster_config(tmp_path: Path) -> dict[str, object]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    bbr = layers._package_chart(layers.BBR_CHART_DIR, tmp_path / "bbr.tgz")
    return cluster_sections(str(kubeconfig), str(GAIE_CRDS[0]), str(bbr))


def test_the_cluster_stack_is_a_valid_cluster_layer_with_the_one_pool_and_a_kgateway_gateway(
    cluster_config: dict[str, object],
) -> None:
    config = loading.build(None, cluster_config)
    assert config.effective_layer == "cluster" and config.cluster.provider == "existing"
    assert list(config.node_pools) == [POOL] and config.node_pools[POOL].labels == layers.POOL_LABELS
    assert config.gateway.enabled and config.gateway.class_name == "kgateway"
    outputs = describe(config, CLUSTER_STACK)
    assert outputs.gateway is not None and outputs.gateway.class_name == "kgateway"


def test_both_serving_stacks_plan_on_the_cluster_stacks_pool_in_their_own_namespaces(
    cluster_config: dict[str, object],
) -> None:
    outputs = describe(loading.build(None, cluster_config), CLUSTER_STACK)
    devices = 0
    for serving in SERVING:
        sections = serving_sections(serving, str(ROUTER_CHART), ROUTER_CHART_VERSION)
        config = loading.build(None, sections, read_cluster=lambda _: outputs)
        assert config.effective_layer == "serving"
        assert config.cluster.stack == f"organization/llmd/{CLUSTER_STACK}"
        assert (config.namespace, config.router.release) == (serving.namespace, serving.namespace)
        stack_plan = plan(config)
        devices += sum(
            int(m["spec"].get("replicas", 1)) * device_requests(m["spec"]["template"]["spec"]).get("nvidia.com/gpu", 0)
            for w in stack_plan.workloads.values()
            for m in w.manifests
            if m["kind"] == "Deployment"
        )
        assert stack_plan.sizing.cpu_tier_per_pod.human() == "64 GiB"
    assert len({s.namespace for s in SERVING}) == len(SERVING)
    assert 2 <= devices <= 8, "both serving stacks fit the pool's one 8-GPU node"


def test_flatten_gives_path_keys_quoting_label_keys_and_keeping_booleans_and_integers() -> None:
    flat = flatten({"layer": "cluster", "node_pools": {"h100": {"node_count": 1, "labels": {"a.b/c": "x"}}}})
    assert flat == {
        "llmd:layer": "cluster",
        "llmd:node_pools.h100.node_count": "1",
        'llmd:node_pools.h100.labels["a.b/c"]': "x",
    }
    assert flatten({"gateway": {"enabled": True}}) == {"llmd:gateway.enabled": "true"}


def test_the_bbr_chart_is_packaged_as_helm_reads_it(tmp_path: Path) -> None:
    archive = layers._package_chart(layers.BBR_CHART_DIR, tmp_path / "charts" / "bbr.tgz")
    with tarfile.open(archive) as opened:
        names = opened.getnames()
    assert "body-based-routing/Chart.yaml" in names and "body-based-routing/templates/bbr.yaml" in names


@pytest.mark.parametrize(
    ("named", "every", "only_layers", "presets", "layered"),
    [
        ([], False, False, list(DEFAULT), True),  # CI's `./run e2e`
        ([], False, True, [], True),  # `--layers`
        (["dev"], False, False, ["dev"], False),
        (["dev"], False, True, ["dev"], True),
        ([], True, False, None, True),  # `--all`: every local preset
    ],
)
def test_which_runs_e2e_selects(
    named: list[str], every: bool, only_layers: bool, presets: list[str] | None, layered: bool
) -> None:
    assert selection(named, every, only_layers) == (presets, layered)
