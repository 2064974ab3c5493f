"""The NetworkPolicies against real traffic: who must get through, and who must not.

`admits` reads the rendered policies the way the Kubernetes NetworkPolicy API defines them (a pod
no ingress policy selects accepts everything; a selected pod accepts what one of its policies'
rules admits), then every flow serving needs is replayed, with its port read from the manifests.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from components.catalog import labels
from components.catalog.kv_transport import NIXL_SIDE_CHANNEL_PORT as NIXL_PORT
from components.specs import lmcache, mooncake, network
from components.specs.router_values import router_pod_labels
from components.specs.servers.tpu import RAY_GCS_PORT
from policies.checks.cluster_isolation import NETWORK_POLICY_TYPE, selector_matches
from policies.resources import Resource, pods
from stacks.config import loading
from stacks.planning.plan import StackPlan, plan
from stacks.review import offline
from tests import helm


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]


OUTSIDE = Pod("somewhere-else", {"app": "curl"})
PROMETHEUS = Pod("monitoring", {"app.kubernetes.io/name": "prometheus", "prometheus": "k8s"})


def _resources(stack_plan: StackPlan, name: str) -> list[Resource]:
    recording = offline.record(stack_plan, name)
    return [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]


def _policies(resources: list[Resource]) -> list[dict[str, Any]]:
    return [r.props for r in resources if r.type == NETWORK_POLICY_TYPE]


def _peer_admits(peer: dict[str, Any], policy_namespace: str, source: Pod) -> bool:
    if "namespaceSelector" in peer:
        namespace_labels = {network.NAMESPACE_NAME_LABEL: source.namespace}
        if not selector_matches(peer["namespaceSelector"], namespace_labels):
            return False
    elif source.namespace != policy_namespace:
        return False
    return selector_matches(peer.get("podSelector") or {}, source.labels)


def admits(policies: list[dict[str, Any]], source: Pod, target: Pod, port: int) -> bool:
    governing = [
        p
        for p in policies
        if p["metadata"]["namespace"] == target.namespace
        and "Ingress" in p["spec"]["policyTypes"]
        and selector_matches(p["spec"]["podSelector"], target.labels)
    ]
    if not governing:
        return True
    for policy in governing:
        for rule in policy["spec"].get("ingress") or []:
            sources = rule.get("from")
            ports = [p["port"] for p in rule.get("ports") or []]
            if (sources is None or any(_peer_admits(s, target.namespace, source) for s in sources)) and (
                not ports or port in ports
            ):
                return True
    return False


@dataclass(frozen=True)
class Stack:
    plan: StackPlan
    resources: list[Resource]

    @property
    def policies(self) -> list[dict[str, Any]]:
        return _policies(self.resources)

    def pods(self, name_part: str) -> list[Pod]:
        return [
            Pod(str(p.owner.props["metadata"]["namespace"]), p.labels)
            for p in pods(self.resources)
            if name_part in p.owner.name
        ]

    def pod(self, name_part: str) -> Pod:
        return self.pods(name_part)[0]

    @property
    def router(self) -> Pod:
        """An EPP pod as the chart labels it (selector labels plus the mode label)."""
        values = self.plan.router_values
        selector = router_pod_labels(self.plan.config.router.release, values)
        mode = "llm-d-router-gateway" if "llm-d-router-gateway" in selector else "llm-d-router-standalone"
        return Pod(self.plan.config.namespace, {**selector, "llm-d.ai/igw-mode": mode})

    def admits(self, source: Pod, target: Pod, port: int) -> bool:
        return admits(self.policies, source, target, port)


def _stack(name: str, *overrides: str) -> Stack:
    stack_plan = plan(loading.load_named(name, list(overrides)))
    return Stack(stack_plan, _resources(stack_plan, name))


ALL = loading.preset_names()


@pytest.mark.parametrize("name", ALL)
def test_the_router_and_the_verification_reach_every_serving_pod_and_strangers_do_not(name: str) -> None:
    stack = _stack(name, "verification.enabled=true", "monitoring.enabled=true")
    targets = [int(p["number"]) for p in stack.plan.router_values["router"]["modelServers"]["targetPorts"]]
    verify = stack.pod("verification")
    assert stack.policies, "network policies are on by default"
    roles = {r.spec.role: r for r in stack.plan.roles}
    servers = stack.pods("model-server")
    assert {s.labels[labels.ROLE_LABEL] for s in servers} == set(roles)
    for server in servers:
        for port in targets:
            assert stack.admits(stack.router, server, port), (server.labels, port)
            assert stack.admits(verify, server, port)
            assert not stack.admits(OUTSIDE, server, port)
            assert not stack.admits(Pod(server.namespace, {"app": "neighbour"}), server, port)
        events = stack.plan.model_server.publisher.ports if stack.plan.model_server.publisher else []
        for port in network.container_ports(roles[server.labels[labels.ROLE_LABEL]].manifests[-1]):
            if port in events:  # precise routing: the KV-event port, for the router's pickers alone
                assert stack.admits(stack.router, server, port) and not stack.admits(PROMETHEUS, server, port)
                assert not stack.admits(verify, server, port) and not stack.admits(OUTSIDE, server, port)
                continue
            assert stack.admits(PROMETHEUS, server, port), port  # metrics, on the ports the pod declares
    assert stack.admits(OUTSIDE, stack.router, labels.ENVOY_LISTENER_PORT)  # clients come from anywhere
    assert stack.admits(PROMETHEUS, stack.router, labels.EPP_METRICS_PORT)
    assert not stack.admits(OUTSIDE, stack.router, labels.EPP_METRICS_PORT)
    assert not stack.admits(stack.router, verify, 8000)  # the Job accepts nothing


def test_no_peer_traffic_between_model_servers_that_need_none() -> None:
    stack = _stack("gpu-vllm-native-cpu")
    server = stack.pod("model-server")
    assert not stack.admits(server, server, 5600)
    assert not stack.admits(stack.router, server, 5600)  # the router gets the serving port only


def test_pd_roles_reach_each_other_for_the_prompt_and_nixl() -> None:
    stack = _stack("gpu-vllm-lmcache-server-pd")
    prefill, decode = stack.pod("model-server-prefill"), stack.pods("model-server-gpu")[0]
    assert (prefill.labels[labels.ROLE_LABEL], decode.labels[labels.ROLE_LABEL]) == ("prefill", "decode")
    assert stack.admits(decode, prefill, labels.MODEL_SERVER_PORT)  # the sidecar sends the prompt
    assert stack.admits(decode, prefill, NIXL_PORT) and stack.admits(prefill, decode, NIXL_PORT)
    assert stack.admits(decode, prefill, 41234)  # UCX picks its data ports at run time
    assert not stack.admits(stack.router, prefill, NIXL_PORT)


def test_lmcache_server_only_from_model_servers() -> None:
    stack = _stack("gpu-vllm-lmcache-server-pd", "verification.enabled=true")
    server = stack.pod("lmcache")
    for client in (stack.pod("model-server-prefill"), stack.pods("model-server-gpu")[0]):
        assert stack.admits(client, server, lmcache.SERVER_PORT)
    for stranger in (stack.router, stack.pod("verification"), Pod(server.namespace, {"app": "x"}), OUTSIDE):
        assert not stack.admits(stranger, server, lmcache.SERVER_PORT)
    assert stack.admits(PROMETHEUS, server, lmcache.METRICS_PORT)
    assert not stack.admits(PROMETHEUS, server, lmcache.SERVER_PORT)


@pytest.mark.parametrize("name", ["gpu-vllm-mooncake-store-cpu", "gpu-vllm-mooncake-store-fs"])
def test_mooncake_master_only_from_its_clients(name: str) -> None:
    stack = _stack(name)
    master, server = stack.pod("mooncake-master"), stack.pod("model-server")
    assert master.namespace == mooncake.NAMESPACE != server.namespace
    for port in (mooncake.RPC_PORT, mooncake.METADATA_PORT):
        assert stack.admits(server, master, port)
        assert not stack.admits(OUTSIDE, master, port)
        assert not stack.admits(stack.router, master, port)
        assert not stack.admits(Pod(server.namespace, {"app": "x"}), master, port)
    assert stack.admits(PROMETHEUS, master, mooncake.METRICS_PORT)
    assert stack.admits(server, server, 15000)  # the transfer engine between the pool's members
    clients = stack.pods("mooncake-client")
    for client in clients:  # fs: the Mooncake Client pool
        assert stack.admits(client, master, mooncake.RPC_PORT)
        assert stack.admits(server, client, 15000) and stack.admits(client, server, 15000)
        assert not stack.admits(OUTSIDE, client, mooncake.CLIENT_PORT)
    assert bool(clients) == name.endswith("-fs")


def test_a_multi_host_group_reaches_its_leader() -> None:
    stack = _stack("tpu-v7-vllm-native-cpu-multi-host")
    group = stack.pods("model-server")
    leader = next(p for p in group if p.labels.get(labels.LWS_ROLE_LABEL) == labels.LWS_LEADER)
    worker = next(p for p in group if p is not leader)
    assert stack.admits(worker, leader, RAY_GCS_PORT) and stack.admits(leader, worker, 20000)
    assert not stack.admits(stack.router, worker, RAY_GCS_PORT)


def test_the_scraper_follows_the_monitoring_provider_or_the_config() -> None:
    gmp = _stack("gpu-vllm-native-cpu-gke", "monitoring.provider=gke-managed-prometheus")
    server = gmp.pod("model-server")
    collector = Pod("gmp-system", {"app.kubernetes.io/name": "collector", "app": "managed-prometheus-collector"})
    assert gmp.admits(collector, server, labels.MODEL_SERVER_PORT)
    assert not gmp.admits(PROMETHEUS, server, labels.MODEL_SERVER_PORT)
    custom = _stack(
        "gpu-vllm-native-cpu",
        "network_policies.scraper.namespace_labels.team=observability",
        "network_policies.scraper.pod_labels.app=vmagent",
    )
    vmagent = Pod("obs", {"app": "vmagent"})
    server = custom.pod("model-server")
    assert not custom.admits(vmagent, server, labels.MODEL_SERVER_PORT)  # its namespace lacks the label
    policy = next(p for p in custom.policies if p["metadata"]["name"] == "gpu-vllm-decode-ingress")
    scrape = policy["spec"]["ingress"][1]["from"][0]
    assert scrape == {
        "namespaceSelector": {"matchLabels": {"team": "observability"}},
        "podSelector": {"matchLabels": {"app": "vmagent"}},
    }


def test_policies_can_be_switched_off() -> None:
    stack = _stack("gpu-vllm-native-cpu", "network_policies.enabled=false")
    assert stack.policies == []
    assert stack.admits(OUTSIDE, stack.pod("model-server"), 5600)


def test_the_router_policy_selects_the_labels_the_chart_gives_its_pods() -> None:
    """routerlib `llm-d-router.selectorLabels`: the mode key, the release lower-cased, cut to 40, `-epp`."""
    pool = {"router": {"inferencePool": {"failureMode": "FailOpen"}}}
    assert router_pod_labels("tiered-prefix-cache", pool) == {"llm-d-router-gateway": "tiered-prefix-cache-epp"}
    assert router_pod_labels("llm-d", {"router": {"inferencePool": {"create": False}}}) == {
        "llm-d-router-standalone": "llm-d-epp"
    }
    assert router_pod_labels("a" * 50, pool) == {"llm-d-router-gateway": "a" * 40 + "-epp"}


def _chart_pods(name: str) -> list[Pod]:
    """Every pod template the real chart renders for this stack's values, labelled as Helm labels it."""
    inputs = helm.chart_inputs(name)
    return [
        Pod(inputs.namespace, obj["spec"]["template"]["metadata"].get("labels") or {})
        for obj in helm.template(inputs).objects
        if obj.get("kind") in ("Deployment", "StatefulSet", "DaemonSet")
    ]


@pytest.mark.parametrize("name", ALL)
def test_the_pods_helm_renders_for_the_router_reach_the_model_servers(name: str) -> None:
    """The router's pods as the real chart labels them (not as the program thinks it does): the model servers
    admit them on every target port, and the router's own policy governs them, so clients reach Envoy."""
    stack = _stack(name, helm.V0)
    chart_pods = _chart_pods(name)
    assert chart_pods, "the chart renders the EPP"
    targets = [int(p["number"]) for p in stack.plan.router_values["router"]["modelServers"]["targetPorts"]]
    for router in chart_pods:
        assert any(selector_matches(p["spec"]["podSelector"], router.labels) for p in stack.policies), (
            f"no NetworkPolicy governs the chart's pod {router.labels}"
        )
        assert stack.admits(OUTSIDE, router, labels.ENVOY_LISTENER_PORT)
        for server in stack.pods("model-server"):
            for port in targets:
                assert stack.admits(router, server, port), (router.labels, server.labels, port)
