"""Rollouts: a template change replayed on each stack's nodes with the strategy it renders completes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stacks.config import StackConfig, loading
from stacks.planning import hardware
from tests.helpers import by_kind, manifests, rendered
from tests.rollout_simulation import (
    Node,
    Pod,
    Result,
    Workload,
    accelerator_workloads,
    claim_devices,
    daemon_memory,
    pod_requests,
    simulate,
    strategy,
)

PRESETS = loading.preset_names()
POOL_PRESETS = [n for n in PRESETS if loading.load_preset(n).cache.node_pool]


def _workloads(objects: list[dict[str, Any]]) -> list[Workload]:
    devices = claim_devices(objects)
    out = []
    for obj in accelerator_workloads(objects):
        surge, unavailable = strategy(obj)
        # A LeaderWorkerSet's unit is a group, which takes a whole slice.
        pod = Pod(1, 0) if obj["kind"] == "LeaderWorkerSet" else pod_requests(obj["spec"]["template"], devices)
        out.append(Workload(obj["metadata"]["name"], int(obj["spec"]["replicas"]), surge, unavailable, pod))
    return out


def _nodes(config: StackConfig, objects: list[dict[str, Any]], workloads: list[Workload]) -> list[Node]:
    """The pool's nodes (multi-host: its slices); without a described pool, the tightest cluster that
    runs the stack: one node per running pod, the size of that pod."""
    multi_host = any(o["kind"] == "LeaderWorkerSet" for o in objects)
    daemon = daemon_memory(objects)
    if config.cache.node_pool is None:
        return [Node(w.pod.devices, w.pod.memory + daemon) for w in workloads for _ in range(w.replicas)]
    pool = hardware.pool_hardware(config, config.cache.node_pool)
    if multi_host:
        hosts = int(accelerator_workloads(objects)[0]["spec"]["leaderWorkerTemplate"]["size"])
        return [Node(1, 0) for _ in range(pool.nodes // hosts)]
    assert pool.devices_per_node is not None and pool.allocatable is not None
    return [Node(pool.devices_per_node, pool.allocatable.bytes - daemon) for _ in range(pool.nodes)]


def _replay(name: str, overrides: tuple[str, ...] = (), objects: list[dict[str, Any]] | None = None) -> Result:
    config = loading.load_named(name, list(overrides))
    objects = objects if objects is not None else manifests(rendered(name, overrides))
    workloads = _workloads(objects)
    assert workloads
    return simulate(_nodes(config, objects, workloads), workloads)


@pytest.mark.parametrize("name", PRESETS)
def test_a_template_change_rolls_to_completion_with_the_rendered_strategy(name: str) -> None:
    result = _replay(name)
    assert result.completed, f"{name}: the rollout stops after {result.steps} steps"
    for workload in accelerator_workloads(manifests(rendered(name))):
        _, unavailable = strategy(workload)
        assert result.min_available[workload["metadata"]["name"]] >= int(workload["spec"]["replicas"]) - unavailable


@pytest.mark.parametrize("name", POOL_PRESETS)
def test_a_tier_sized_auto_leaves_a_rollout_that_completes(name: str) -> None:
    result = _replay(name, ("cache.tier.cpu=auto",))
    assert result.completed


def test_kubernetes_default_strategy_never_finishes_on_existing_mi300() -> None:
    """The issue's case: `tier: auto` fills each node, 25% surge rounds up to one pod that stays Pending."""
    objects = copy.deepcopy(manifests(rendered("existing-mi300")))
    for workload in by_kind(objects, "Deployment"):
        workload["spec"].pop("strategy")
    assert not _replay("existing-mi300", objects=objects).completed
    assert _replay("existing-mi300").completed


def test_surge_where_a_pod_fits_so_every_replica_keeps_serving() -> None:
    """gke-h100-lustre: 2 pods of 4 GPUs on 2 nodes of 8 leave room for one more."""
    [workload] = accelerator_workloads(manifests(rendered("gke-h100-lustre")))
    assert strategy(workload) == (1, 0)
    result = _replay("gke-h100-lustre")
    assert result.completed and result.min_available[workload["metadata"]["name"]] == workload["spec"]["replicas"]


@pytest.mark.parametrize("name", PRESETS)
def test_every_model_server_role_has_a_disruption_budget_of_one_pod(name: str) -> None:
    objects = manifests(rendered(name))
    budgets = {p["metadata"]["name"]: p for p in by_kind(objects, "PodDisruptionBudget")}
    for workload in accelerator_workloads(objects):
        budget = budgets[workload["metadata"]["name"]]
        assert budget["spec"]["maxUnavailable"] == 1
        selector = budget["spec"]["selector"]["matchLabels"]
        template_labels = (
            {"leaderworkerset.sigs.k8s.io/name": workload["metadata"]["name"]}
            if workload["kind"] == "LeaderWorkerSet"
            else workload["spec"]["template"]["metadata"]["labels"]
        )
        assert selector.items() <= template_labels.items()


@pytest.mark.parametrize("name", [n for n in PRESETS if "lmcache-server" in n or "mooncake" in n])
def test_per_node_daemons_update_one_node_at_a_time(name: str) -> None:
    for daemon_set in by_kind(manifests(rendered(name)), "DaemonSet"):
        assert daemon_set["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}


def test_the_summary_says_how_a_change_rolls_and_what_tier_auto_leaves() -> None:
    text = rendered("existing-mi300").summary
    assert "one pod at a time (maxSurge 0, maxUnavailable 1): 1 of 2 replicas serve" in text
    assert "`cache.tier.cpu: auto` sized the tier to fill the nodes), the stack runs 2: 0 spare" in text
    assert "each restart drops that pod's 960 GiB CPU tier" in text


def test_a_config_change_rolls_the_pods_that_read_it() -> None:
    """The LMCache connection ConfigMap is replaced on change, which restarts nothing: the checksum on the
    vLLM pods' template makes the change roll them."""

    def checksums(overrides: tuple[str, ...]) -> tuple[str, str]:
        objects = manifests(rendered("gpu-vllm-lmcache-server", overrides))
        [vllm] = accelerator_workloads(objects)
        [config_map] = [
            c for c in by_kind(objects, "ConfigMap") if c["metadata"]["name"] == "lmcache-engine-connection"
        ]
        return vllm["spec"]["template"]["metadata"]["annotations"]["llm-d.ai/config-checksum"], str(config_map["data"])

    before, after = checksums(()), checksums(("lmcache.isolated_ipc=false",))
    assert before[1] != after[1] and before[0] != after[0]
    assert checksums(("router.epp_replicas=2",))[0] == before[0]  # a change the pods do not read rolls nothing
