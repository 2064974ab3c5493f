"""Issue 29 item 7: the surfaces added last round, each computation tested at its boundary with values written
out here (a seeded fault in the code it tests fails one of these, not only a golden)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from components.catalog.labels import EPP_EXT_PROC_PORT, EPP_METRICS_PORT, MODEL_SERVER_PORT
from components.specs import network
from components.specs.bbr import BBR_EXT_PROC_PORT, BBR_HEALTH_PORT, BBR_NAME
from components.specs.gateway import GATEWAY_NAME_LABEL
from components.specs.router_values import router_pod_labels
from components.units import GB, ByteSize
from e2e import compare
from policies.checks import tier_payoff
from policies.checks.cluster_isolation import NETWORK_POLICY_TYPE, selector_matches
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning import hardware
from stacks.planning.plan import StackPlan, plan
from stacks.review import offline, pool_demand
from stacks.review.changeplan import classify
from stacks.review.render import render
from tests.helpers import manifests, rendered_stack

ON = "autoscaling.enabled=true"


def _plan(name: str, *sets: str) -> StackPlan:
    return plan(loading.load_preset(name, list(sets)))


# -- autoscaling's bounds beside per-node daemons and P/D roles ---------------------------------------------
@pytest.mark.parametrize(
    ("name", "host_memory", "most", "formula"),
    [
        # 244 GiB allocatable - the 25Gi LMCache server on the node = 219 GiB: 6 pods of 32Gi (7 without it)
        (
            "gpu-vllm-lmcache-server",
            "256GiB",
            6,
            "1 nodes of node pool h100 x 6 pods a node (6 by memory (32Gi a pod)) / 1 pods a replica",
        ),
        # the same 6 pods a node, a P/D replica is a prefill and a decode pod: 3 (6 if the roles were dropped)
        (
            "gpu-vllm-lmcache-server-pd",
            "256GiB",
            3,
            "1 nodes of node pool h100 x 6 pods a node (6 by memory (32Gi a pod)) / 2 pods a replica",
        ),
        # memory to spare: the 8 devices bound it, 4 replicas of 2 pods
        (
            "gpu-vllm-lmcache-server-pd",
            "320GiB",
            4,
            "1 nodes of node pool h100 x 8 pods a node (8 by devices) / 2 pods a replica",
        ),
    ],
)
def test_autoscaling_holds_what_the_pool_holds_beside_its_daemon_and_by_role(
    name: str, host_memory: str, most: int, formula: str
) -> None:
    pool = f"node_pools.h100.host_memory={host_memory}"
    auto = _plan(name, ON, pool).autoscaling
    assert auto is not None
    assert (auto.max_replicas, auto.max_from) == (most, formula)
    assert _plan(name, ON, pool, f"autoscaling.max_replicas={most}").autoscaling is not None
    with pytest.raises(ConfigError, match=rf"autoscaling.max_replicas = {most + 1}: above the {most} replicas"):
        _plan(name, ON, pool, f"autoscaling.max_replicas={most + 1}")


# -- pool demand with several daemons -------------------------------------------------------------------------
POOL = hardware.PoolHardware("h100", "gpu", 8, ByteSize(1100 * GB), 1, "a3-highgpu-8g")


def test_every_stacks_daemon_sits_on_every_node_so_their_sum_is_what_the_pods_lose() -> None:
    """Two daemons of 500 GB each: 1000 GB of every node is theirs, and a 100 GB pod no longer fits beside
    them (with only the larger counted it would)."""
    a = pool_demand.Demand("a", [(1, 100 * GB)], 500 * GB, None)
    b = pool_demand.Demand("b", [(1, 100 * GB)], 500 * GB, None)
    assert pool_demand.pool_misfit("h100", "c", POOL, [a]) is None
    line = pool_demand.pool_misfit("h100", "c", POOL, [a, b])
    assert line is not None and "together ask 932Gi of per-node daemons on every node; a a pod (94Gi)" in line
    smaller = pool_demand.Demand("b", [(1, 100 * GB)], 300 * GB, None)
    assert pool_demand.pool_misfit("h100", "c", POOL, [a, smaller]) is None  # 997Gi - 800 GB: both pods fit


@pytest.mark.parametrize(
    ("name", "daemon"),
    [
        ("gpu-vllm-lmcache-server", "25Gi"),
        ("gpu-vllm-lmcache-server-pd", "25Gi"),
        ("gpu-vllm-mooncake-store-fs", "82Gi"),
    ],
)
def test_a_stacks_daemon_share_is_its_daemonsets_memory(name: str, daemon: str) -> None:
    assert pool_demand.demand(name, _plan(name)).daemon == ByteSize.parse(daemon).bytes


# -- the pool facts a cluster stack exports -------------------------------------------------------------------
def _server(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [server] = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "gpu-vllm-decode"]
    return dict(server["spec"]["template"]["spec"])


def test_a_serving_stack_lands_on_the_pool_its_cluster_stack_created_by_its_label() -> None:
    assert _server(manifests(rendered_stack("qwen3-8b")))["nodeSelector"] == {"llm-d.ai/node-pool": "h100"}


def test_a_taint_on_a_cluster_stacks_pool_is_tolerated_by_its_serving_stacks_pods(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster stack's outputs (recorded as its render writes them) carry the pool's taints; the serving
    stack's model servers tolerate exactly those."""
    import shutil
    from pathlib import Path

    from stacks.config.cluster_outputs import OUTPUTS_FILE
    from stacks.planning.plan import plan_any

    for path in Path(loading.PROJECT_DIR).glob("Pulumi*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    taint = "node_pools.h100.taints=[{key: dedicated, value: llm, effect: NoSchedule}]"
    render(plan_any(loading.load_named("gke-cluster", [taint]), "gke-cluster"), "gke-cluster").write(tmp_path / "c")
    config = loading.load_named("qwen3-8b", [f"cluster.outputs_file=c/{OUTPUTS_FILE}"])
    pod = _server(manifests(render(plan(config), "qwen3-8b")))
    assert {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"} in pod["tolerations"]


# -- the Gateway's and the router's NetworkPolicies: who they admit, who they refuse --------------------------
@dataclass(frozen=True)
class Source:
    """A pod (namespace, labels) or an address outside the pods (`ip`, namespace None)."""

    namespace: str | None
    labels: dict[str, str]
    ip: str | None = None


def _peer_admits(peer: dict[str, Any], policy_namespace: str, source: Source) -> bool:
    import ipaddress

    if "ipBlock" in peer:
        block = peer["ipBlock"]
        if source.ip is None:
            return False
        address = ipaddress.ip_address(source.ip)
        inside = address in ipaddress.ip_network(block["cidr"])
        return inside and not any(address in ipaddress.ip_network(e) for e in block.get("except", []))
    if source.namespace is None:  # an address outside the pods matches no pod selector
        return False
    if "namespaceSelector" in peer:
        namespace_labels = {network.NAMESPACE_NAME_LABEL: source.namespace}
        if not selector_matches(peer["namespaceSelector"], namespace_labels):
            return False
    elif source.namespace != policy_namespace:
        return False
    return selector_matches(peer.get("podSelector") or {}, source.labels)


def admits(policies: list[dict[str, Any]], source: Source, namespace: str, target: dict[str, str], port: int) -> bool:
    """The NetworkPolicy API's reading: a pod no ingress policy selects accepts all; else one rule must admit."""
    governing = [
        p
        for p in policies
        if p["metadata"]["namespace"] == namespace
        and "Ingress" in p["spec"]["policyTypes"]
        and selector_matches(p["spec"]["podSelector"], target)
    ]
    if not governing:
        return True
    return any(
        (rule.get("from") is None or any(_peer_admits(s, namespace, source) for s in rule["from"]))
        and (not rule.get("ports") or port in [p["port"] for p in rule["ports"]])
        for policy in governing
        for rule in policy["spec"].get("ingress") or []
    )


def _policies(stack_plan: Any, name: str) -> list[dict[str, Any]]:
    return [r.inputs for r in offline.record(stack_plan, name).resources if r.type == NETWORK_POLICY_TYPE]


def _serving(name: str) -> tuple[list[dict[str, Any]], str, dict[str, str], dict[str, str]]:
    """A serving stack's policies, namespace, EPP pod labels (as the chart labels them) and model-server labels."""
    stack_plan = plan(loading.load_named(name))
    config = stack_plan.config
    selector = router_pod_labels(config.router.release, stack_plan.router_values)
    mode = "llm-d-router-gateway" if "llm-d-router-gateway" in selector else "llm-d-router-standalone"
    [server] = [
        o["spec"]["template"]["metadata"]["labels"]
        for w in stack_plan.workloads.values()
        for o in w.manifests
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "gpu-vllm-decode"
    ]
    return _policies(stack_plan, name), config.namespace, {**selector, "llm-d.ai/igw-mode": mode}, server


PROXY, ELSEWHERE = Source(None, {}, "10.129.0.7"), Source(None, {}, "10.131.0.7")


def test_behind_gkes_gateway_only_the_proxy_subnet_reaches_the_epps_ext_proc_and_the_servers_port() -> None:
    policies, namespace, epp, server = _serving("qwen3-8b")  # gke-cluster: proxy-only subnet 10.129.0.0/23
    assert admits(policies, PROXY, namespace, epp, EPP_EXT_PROC_PORT)
    assert not admits(policies, ELSEWHERE, namespace, epp, EPP_EXT_PROC_PORT)  # another range
    assert not admits(policies, PROXY, namespace, epp, EPP_METRICS_PORT)  # another port
    assert admits(policies, PROXY, namespace, server, MODEL_SERVER_PORT)
    assert not admits(policies, ELSEWHERE, namespace, server, MODEL_SERVER_PORT)
    assert not admits(policies, PROXY, namespace, server, 9999)
    assert not admits(policies, Source("llm-d-gateway", {}), namespace, server, MODEL_SERVER_PORT)  # a pod there


@pytest.fixture
def in_cluster(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A cluster stack on an existing cluster whose Gateway is kgateway's (its proxies are pods), and a serving
    stack on it."""
    import shutil
    from pathlib import Path

    for path in Path(loading.PROJECT_DIR).glob("Pulumi*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "Pulumi.kg-cluster.yaml").write_text(
        "config:\n  llmd:layer: cluster\n  llmd:cluster:\n    provider: existing\n  llmd:node_pools:\n    h100:\n"
        "      accelerator: gpu\n      accelerators_per_node: 8\n      host_memory: 1872GiB\n      labels:\n"
        '        nvidia.com/gpu.present: "true"\n  llmd:gateway:\n    enabled: true\n    class_name: kgateway\n'
    )
    text = (tmp_path / "Pulumi.qwen3-8b.yaml").read_text()
    (tmp_path / "Pulumi.kg-serving.yaml").write_text(text.replace("llmd/gke-cluster", "llmd/kg-cluster"))
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    return tmp_path


GATEWAY_POD = Source("llm-d-gateway", {GATEWAY_NAME_LABEL: "inference-gateway"})


def test_an_in_cluster_gateways_proxies_reach_the_epp_and_the_servers_and_look_alikes_do_not(in_cluster: Any) -> None:
    policies, namespace, epp, server = _serving("kg-serving")
    for target, port in ((epp, EPP_EXT_PROC_PORT), (server, MODEL_SERVER_PORT)):
        assert admits(policies, GATEWAY_POD, namespace, target, port)
        assert not admits(policies, Source("other", GATEWAY_POD.labels), namespace, target, port)  # namespace
        assert not admits(policies, Source("llm-d-gateway", {GATEWAY_NAME_LABEL: "x"}), namespace, target, port)
        assert not admits(policies, Source("llm-d-gateway", {"app": "other"}), namespace, target, port)
        assert not admits(policies, GATEWAY_POD, namespace, target, 9999)  # another port
    assert not admits(policies, GATEWAY_POD, namespace, epp, EPP_METRICS_PORT)


def _bbr_policies(name: str) -> list[dict[str, Any]]:
    from stacks.planning.plan import plan_any

    return _policies(plan_any(loading.load_named(name), name), name)


BBR = {"app": BBR_NAME}


def test_gkes_bbr_admits_the_proxy_subnet_on_ext_proc_and_the_health_checkers_on_health_alone() -> None:
    policies = _bbr_policies("gke-cluster")
    checker = Source(None, {}, "35.191.3.4")
    assert admits(policies, PROXY, "llm-d-gateway", BBR, BBR_EXT_PROC_PORT)
    assert not admits(policies, ELSEWHERE, "llm-d-gateway", BBR, BBR_EXT_PROC_PORT)
    assert admits(policies, checker, "llm-d-gateway", BBR, BBR_HEALTH_PORT)
    assert not admits(policies, checker, "llm-d-gateway", BBR, BBR_EXT_PROC_PORT)
    assert not admits(policies, PROXY, "llm-d-gateway", BBR, 9090)
    assert not admits(policies, Source("llm-d-gateway", {"app": "other"}), "llm-d-gateway", BBR, BBR_EXT_PROC_PORT)


def test_an_in_cluster_bbr_admits_its_gateways_proxies_alone(in_cluster: Any) -> None:
    policies = _bbr_policies("kg-cluster")
    assert admits(policies, GATEWAY_POD, "llm-d-gateway", BBR, BBR_EXT_PROC_PORT)
    assert not admits(policies, Source("other", GATEWAY_POD.labels), "llm-d-gateway", BBR, BBR_EXT_PROC_PORT)
    assert not admits(policies, Source("llm-d-gateway", {"app": "other"}), "llm-d-gateway", BBR, BBR_EXT_PROC_PORT)
    assert not admits(policies, GATEWAY_POD, "llm-d-gateway", BBR, BBR_HEALTH_PORT)


# -- the e2e harness's comparison of live objects with the render ---------------------------------------------
@pytest.mark.parametrize(
    ("want", "have", "found"),
    [
        # the render sets false and 0: the live object lacks them, or holds another value
        ({"spec": {"automountServiceAccountToken": False}}, {"spec": {}}, "spec.automountServiceAccountToken"),
        ({"spec": {"automountServiceAccountToken": False}}, {"spec": {"automountServiceAccountToken": True}}, "spec"),
        ({"spec": {"replicas": 0}}, {"spec": {}}, "spec.replicas: expected 0, found None"),
        ({"spec": {"replicas": 0}}, {"spec": {"replicas": 1}}, "spec.replicas: expected 0, found 1"),
        ({"spec": {"minReadySeconds": 0}}, {"spec": {"minReadySeconds": "0s"}}, "spec.minReadySeconds"),
        ({"spec": {"paused": False}}, {"spec": {"paused": "false "}}, "spec.paused"),
        ({"a": ""}, {}, "a: expected '', found None"),
        # the render sets an object or a list: the live object holds a scalar, or fewer items
        ({"spec": {"template": {"x": 1}}}, {"spec": {"template": "x"}}, "spec.template: expected an object"),
        ({"spec": {"ports": [{"port": 0}]}}, {"spec": {"ports": [{"port": 80}]}}, "spec.ports[0].port"),
        ({"spec": {"ports": [{"port": 0}]}}, {"spec": {"ports": []}}, "spec.ports: expected 1 items"),
    ],
)
def test_the_e2e_comparison_fails_on_a_field_the_render_sets_and_the_live_object_lacks_or_holds_otherwise(
    want: dict[str, Any], have: dict[str, Any], found: str
) -> None:
    [line] = compare.missing_fields(want, have)
    assert line.startswith(found), line


@pytest.mark.parametrize(
    ("want", "have"),
    [
        ({"spec": {"automountServiceAccountToken": False}}, {"spec": {"automountServiceAccountToken": False}}),
        ({"spec": {"replicas": 0}}, {"spec": {"replicas": 0}}),
        ({"spec": {"replicas": 0}}, {"spec": {"replicas": "0"}}),  # int-or-string as the API server returns it
        ({"flag": False}, {"flag": "false"}),
        ({"spec": {"empty": {}, "none": None, "list": []}}, {"spec": {}}),  # nothing set, nothing compared
    ],
)
def test_the_e2e_comparison_passes_a_live_object_holding_what_the_render_sets(
    want: dict[str, Any], have: dict[str, Any]
) -> None:
    assert compare.missing_fields(want, have) == []


# -- await budgets of per-node daemons on multi-node pools ----------------------------------------------------
@pytest.mark.parametrize(
    ("name", "nodes", "daemon", "seconds"),
    [
        # the daemon rolls one node at a time (maxUnavailable 1): a cold start per node of the pool, in turn
        ("gpu-vllm-lmcache-server", 1, "lmcache-engine", 660),
        ("gpu-vllm-lmcache-server", 3, "lmcache-engine", 3 * 660),
        ("gpu-vllm-mooncake-store-fs", 2, "mooncake-client", 2 * 480),
        ("gpu-vllm-mooncake-store-fs", 3, "mooncake-client", 3 * 480),
    ],
)
def test_a_per_node_daemon_is_awaited_a_cold_start_per_node_of_its_pool(
    name: str, nodes: int, daemon: str, seconds: int
) -> None:
    stack_plan = _plan(name, f"node_pools.h100.node_count={nodes}")
    [budget] = [b for b in stack_plan.budgets if b.workload == daemon]
    assert (budget.waves, budget.seconds) == (nodes, seconds)
    [daemon_set] = [
        m
        for w in stack_plan.workloads.values()
        for m in w.manifests
        if m["metadata"]["name"] == daemon and m["kind"] == "DaemonSet"
    ]
    assert daemon_set["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == str(seconds)
    assert daemon_set["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1}


# -- the HTTPRoute's parent and timeouts ----------------------------------------------------------------------
def _route(name: str) -> dict[str, Any]:
    stack_plan = plan(loading.load_named(name))
    [route] = [m for w in stack_plan.workloads.values() for m in w.manifests if m["kind"] == "HTTPRoute"]
    return dict(route)


PARENT = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference-gateway"}


def test_a_route_behind_gkes_gateway_names_it_in_its_namespace_and_sets_no_timeouts() -> None:
    """GKE's managed classes refuse `timeouts` on a route (their backend policy holds it)."""
    route = _route("qwen3-8b")
    assert route["spec"]["parentRefs"] == [{**PARENT, "namespace": "llm-d-gateway"}]
    assert route["metadata"]["namespace"] == "qwen3-8b"
    assert all("timeouts" not in rule for rule in route["spec"]["rules"])


def test_a_route_behind_an_in_cluster_gateway_waits_the_request_timeout(in_cluster: Any) -> None:
    route = _route("kg-serving")
    assert route["spec"]["parentRefs"] == [{**PARENT, "namespace": "llm-d-gateway"}]
    assert [rule["timeouts"] for rule in route["spec"]["rules"]] == [{"request": "300s"}]


# -- the change plan's `ignored`: the fields KEDA owns --------------------------------------------------------
def _row(ignore: list[str] | None, replicas: int, image: str = "a") -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": image}]}}
    row: dict[str, Any] = {
        "type": "kubernetes:apps/v1:Deployment",
        "name": "d",
        "inputs": {"metadata": {"name": "d"}, "spec": {"replicas": replicas, "template": template}},
    }
    if ignore is not None:
        row["options"] = {"ignoreChanges": ignore}
    return row


@pytest.mark.parametrize(
    ("before", "after", "paths", "kind"),
    [
        (["spec.replicas"], ["spec.replicas"], ["spec.replicas"], "ignored"),  # KEDA's: no step
        # a field beside the owned one: the step is the other field's
        (["spec.replicas"], ["spec.replicas"], ["spec.replicas", "spec.template.spec.containers[0].image"], "rolling"),
        (["spec.replicas"], ["spec.replicas"], ["spec.replicasCount"], "update"),  # shares only the text
        (None, ["spec.replicas"], ["spec.replicas"], "ignored"),  # the new program's options decide
        (["spec.replicas"], None, ["spec.replicas"], "scale"),  # autoscaling off: the count is the program's again
    ],
)
def test_the_change_plan_leaves_to_keda_exactly_the_fields_the_new_options_give_it(
    before: list[str] | None, after: list[str] | None, paths: list[str], kind: str
) -> None:
    old, new = _row(before, 2), _row(after, 3, "b" if len(paths) > 1 else "a")
    assert classify(old, new, paths).kind == kind


# -- the filesystem tier's share capped by the path onward ----------------------------------------------------
class _SlowHostLink:
    """components/formulas/payoff.py with a 10 GB/s host link (the rule's module reads it as `payoff`)."""

    def __getattr__(self, name: str) -> Any:
        from components.formulas import payoff

        return (lambda replica, block: 10e9) if name == "cpu_tier_bandwidth" else getattr(payoff, name)


FAST_FS = ("cache.model=Qwen/Qwen3-0.6B", "cache.tensor_parallelism=1", "storage.read_bandwidth=1TiB")


def test_the_summarys_filesystem_tier_reads_no_faster_than_the_cpu_path_it_goes_through() -> None:
    """1 TiB/s over 2 pods would be 549.76 GB/s each; the blocks go on over the pod's host link, 55 GB/s."""
    cpu, fs = _plan("gpu-vllm-native-fs", *FAST_FS).payoff.tiers
    assert cpu.bandwidth == fs.bandwidth == 55e9
    assert fs.formula == "min(1099.51 GB/s aggregate / 2 pods, CPU path 55.00 GB/s)"
    slow, _ = _plan("gpu-vllm-native-fs", "cache.model=Qwen/Qwen3-0.6B", "cache.tensor_parallelism=1").payoff.tiers
    assert slow.bandwidth == 55e9  # the CPU tier itself is the path


def test_the_policy_holds_the_filesystem_tier_to_the_cpu_path_it_goes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host link below break-even (10 GB/s here): the filesystem tier behind it cannot beat recomputing
    either, however fast the file system, and the rule says so for both tiers."""
    from stacks.review.check import check, stack_policy_config

    stack_plan = _plan("gpu-vllm-native-fs", *FAST_FS)
    recording = offline.record(stack_plan, "gpu-vllm-native-fs")
    monkeypatch.setattr(tier_payoff, "payoff", _SlowHostLink())
    lines = [f.line() for f in check(recording, stack_policy_config(stack_plan.config)) if "reloads at" in f.line()]
    assert [line.split(" reloads at about ")[1].split(" per pod")[0] for line in lines] == ["10.00 GB/s"] * 2
    assert any("the filesystem tier of" in line for line in lines)
