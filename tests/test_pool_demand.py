"""The serving stacks of one cluster stack, together against its pools (stacks/review/pool_demand.py): the
example layers fit; two stacks that each fit the pool alone but overfill it together fail `check` with one
line naming the pool, the cluster stack and both stacks."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from components.units import GB, ByteSize
from stacks.__main__ import main
from stacks.config import loading
from stacks.config.cluster_outputs import describe
from stacks.planning import hardware
from stacks.planning.plan import plan
from stacks.review import pool_demand
from tests.helpers import SERVING_STACKS, serving_plans

ROOT = Path(__file__).resolve().parents[1]


def test_the_example_serving_stacks_fit_their_cluster_pool_together() -> None:
    assert pool_demand.misfits(serving_plans()) == []


def test_a_stack_asks_its_pods_devices() -> None:
    share = pool_demand.demand("qwen3-32b", serving_plans()["qwen3-32b"])
    assert share.devices == 2 * 2 and len(share.pods) == 2  # 2 replicas of TP 2
    assert share.autoscaled is None


@pytest.mark.parametrize(
    ("overrides", "asked"),
    [
        # 12 + 5 devices on 2 nodes of 8: the devices alone overfill it
        ({"qwen3-32b": ["cache.replicas=6"], "qwen3-8b": ["cache.replicas=5"]}, "together ask 17 devices; the pool"),
        # 10 + 5 devices fit 16, but memory does not: 4 pods of qwen3-32b fill a node, the 5th shares the
        # other with at most 4 of qwen3-8b's 332Gi pods
        ({"qwen3-32b": ["cache.replicas=5"], "qwen3-8b": ["cache.replicas=5"]}, "together need 3 nodes; the pool"),
    ],
)
def test_two_stacks_that_fit_alone_overfill_the_pool_together_in_one_line(
    overrides: dict[str, list[str]], asked: str
) -> None:
    plans = serving_plans(overrides)  # each plans: its own fit check passes
    for name, stack_plan in plans.items():
        assert pool_demand.misfits({name: stack_plan}) == []
    [line] = pool_demand.misfits(plans)
    assert line.startswith("node_pools.h100 of gke-cluster: qwen3-32b (")
    assert " and qwen3-8b (" in line and asked in line and "2 nodes x 8" in line
    assert "\n" not in line


def test_autoscaling_counts_the_most_replicas_keda_may_reach() -> None:
    scaled = ["autoscaling.enabled=true", "autoscaling.max_replicas=4"]
    stack_plan = plan(loading.load_named("qwen3-32b", ["cache.replicas=1"]))
    assert pool_demand.demand("qwen3-32b", stack_plan).devices == 2
    # the example cluster runs no KEDA: its outputs with KEDA on stand in for it
    outputs = describe(loading.load_named("gke-cluster", ["autoscaling.enabled=true"]), "gke-cluster")
    serving = {
        "namespace": "qwen3-32b",
        "cluster": {"provider": "stack", "stack": "organization/llmd/gke-cluster"},
        "cache": {"model": "Qwen/Qwen3-32B", "node_pool": "h100", "replicas": 1},
    }
    config = loading.build(None, serving, scaled, read_cluster=lambda _: outputs)
    auto_plan = plan(config)
    assert auto_plan.autoscaling is not None and auto_plan.autoscaling.max_replicas == 4
    share = pool_demand.demand("qwen3-32b", auto_plan)
    assert share.devices == 4 * 2 and share.autoscaled == 4


def _stack_files(root: Path, replicas: dict[str, int]) -> None:
    for name in ("gke-cluster", *SERVING_STACKS):
        text = (ROOT / f"Pulumi.{name}.yaml").read_text()
        if name in replicas:
            text = text.replace("    replicas: 2\n", f"    replicas: {replicas[name]}\n")
        (root / f"Pulumi.{name}.yaml").write_text(text)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    monkeypatch.setattr(loading, "preset_names", lambda: [])  # the stacks only: every preset is checked elsewhere
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    return tmp_path


def test_check_passes_the_example_layers(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _stack_files(project, {})
    assert main(["check"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "node_pools." not in out


def test_check_fails_two_serving_stacks_that_overfill_their_pool_with_one_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _stack_files(project, {"qwen3-32b": 6, "qwen3-8b": 5})
    for name in SERVING_STACKS:  # each alone passes its check
        assert main(["check", name]) == 0
    capsys.readouterr()
    assert main(["check"]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    [line] = [line for line in out.splitlines() if line.startswith("node_pools.")]
    assert line == (
        "node_pools.h100 of gke-cluster: qwen3-32b (12 devices, 2 nodes, 560Gi a node) and qwen3-8b (5 devices,"
        " 1 node, 1660Gi a node) together ask 17 devices; the pool has 16 (2 nodes x 8)"
    )
    for name in ("gke-cluster", *SERVING_STACKS):
        assert re.search(rf"^{name}: \d+ rules, 0 mandatory", out, re.MULTILINE)  # each stack's own check passes


POOL = hardware.PoolHardware("h100", "gpu", 8, ByteSize(1872 * GB), 1, "a3-highgpu-8g")


def test_stacks_of_half_a_node_each_share_one() -> None:
    """Each on nodes of its own they would take two; first fit places both on the one node."""
    halves = [pool_demand.Demand(name, [(4, 100 * GB)], 0, None) for name in ("a", "b")]
    assert pool_demand.pool_misfit("h100", "c", POOL, halves) is None
    third = pool_demand.Demand("d", [(1, 100 * GB)], 0, None)
    assert pool_demand.pool_misfit("h100", "c", POOL, [*halves, third]) == (
        "node_pools.h100 of c: a (4 devices, 1 node, 94Gi a node), b (4 devices, 1 node, 94Gi a node) and d"
        " (1 device, 1 node, 94Gi a node) together ask 9 devices; the pool has 8 (1 node x 8)"
    )


def test_a_per_node_daemon_takes_memory_on_every_node_of_the_pool() -> None:
    """One stack's DaemonSet selects the pool's nodes, so it sits beside the other stack's pods too."""
    cache = pool_demand.Demand("cache", [(1, 100 * GB)], 1000 * GB, None)
    large = pool_demand.Demand("large", [(1, 900 * GB)], 0, None)
    assert pool_demand.pool_misfit("h100", "c", POOL, [large]) is None
    line = pool_demand.pool_misfit("h100", "c", POOL, [cache, large])
    assert line is not None and "together ask 932Gi of per-node daemons on every node; a large pod (839Gi)" in line


def test_check_names_each_stacks_share_of_a_one_node_pool(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _stack_files(project, {"qwen3-32b": 4})
    cluster = project / "Pulumi.gke-cluster.yaml"
    cluster.write_text(cluster.read_text().replace("node_count: 2", "node_count: 1"))
    assert main(["check"]) == 1
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("node_pools.")]
    assert line == (
        "node_pools.h100 of gke-cluster: qwen3-32b (8 devices, 1 node, 560Gi a node) and qwen3-8b (2 devices,"
        " 1 node, 664Gi a node) together ask 10 devices; the pool has 8 (1 node x 8)"
    )


def test_two_stacks_share_a_node_where_each_on_its_own_would_take_one(project: Path) -> None:
    _stack_files(project, {})
    cluster = project / "Pulumi.gke-cluster.yaml"
    cluster.write_text(cluster.read_text().replace("node_count: 2", "node_count: 1"))
    assert pool_demand.misfits(serving_plans()) == []  # 4 + 2 devices, 280Gi + 664Gi on the one node


def test_a_rollout_sized_to_the_pool_alone_overfills_it_beside_another_stack() -> None:
    """At rest 6 + 2 devices fill the one node; a's rollout surges one 2-device pod (its plan sized the surge to
    the pool alone: 8 of 8), which beside b needs 10: the rollout would wait on a Pending pod."""
    a = pool_demand.Demand("a", [(2, 100 * GB)] * 3, 0, None, surge=[(2, 100 * GB)])
    b = pool_demand.Demand("b", [(2, 100 * GB)], 0, None, surge=[(2, 100 * GB)])
    for alone in (a, b):
        assert pool_demand.rollout_misfit("h100", "c", POOL, [alone]) is None
    assert pool_demand.pool_misfit("h100", "c", POOL, [a, b]) is None  # at rest they fit
    assert pool_demand.rollout_misfit("h100", "c", POOL, [a, b]) == (
        "node_pools.h100 of c: a (8 devices, 1 node, 373Gi a node) and b (2 devices, 1 node, 94Gi a node)"
        " together ask 10 devices; the pool has 8 (1 node x 8), during a's rollout (its surge adds 1 pod,"
        " sized to the pool alone)"
    )


def test_a_stack_rolls_out_one_extra_pod_per_role() -> None:
    plans = serving_plans()
    share = pool_demand.demand("qwen3-8b", plans["qwen3-8b"])
    assert plans["qwen3-8b"].rollout is not None and plans["qwen3-8b"].rollout.max_surge == 1
    assert share.surge == [share.pods[0]]
