"""Every rule passes on the rendered presets and catches its failure case."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from components.units import GiB
from policies.checks.rule_types import Rule
from policies.checks.ruleset import RULES
from policies.pack import PACK_NAME, POLICIES
from policies.resources import Resource, pods
from stacks import loading, offline
from stacks.check import check
from stacks.plan import plan

RULE = {r.name: r for r in RULES}
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _resources(name: str = "gpu-vllm-native-cpu") -> list[Resource]:
    recording = offline.record(plan(loading.load_preset(name)), name)
    return [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]


def _violations(rule: Rule[Any], resources: list[Resource], **config: Any) -> list[str]:
    return [v.message for v in rule.check(resources, {**rule.config, **config})]


def _deployment(resources: list[Resource]) -> Resource:
    return next(r for r in resources if r.type == DEPLOYMENT)


def _container(resources: list[Resource]) -> dict[str, Any]:
    container: dict[str, Any] = _deployment(resources).props["spec"]["template"]["spec"]["containers"][0]
    return container


def _chart_values(resources: list[Resource]) -> dict[str, Any]:
    values: dict[str, Any] = next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart").props["values"]
    return values


def _pod(name: str, container: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> Resource:
    labels = labels or {"app": name}
    return Resource(
        DEPLOYMENT,
        name,
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container], **spec}},
            },
        },
    )


LMCACHE_CONNECTION = {
    "kv_connector": "LMCacheMPConnector",
    "kv_role": "kv_both",
    "kv_connector_extra_config": {"lmcache.mp.host": "tcp://lmcache-engine", "lmcache.mp.isolated_ipc": True},
}


def _lmcache(
    client_image: str = "lmcache/vllm-openai:v0.5.6", seed: bool = True, server_ipc: bool = True
) -> list[Resource]:
    server = {
        "name": "lmcache",
        "image": "lmcache/vllm-openai:v0.5.6",
        "command": ["/opt/venv/bin/lmcache", "server"],
        "args": ["--port=5555", *(["--isolated-ipc"] if server_ipc else [])],
        "resources": {"requests": {"cpu": "2", "memory": "25Gi"}},
    }
    client = {
        "name": "modelserver",
        "image": client_image,
        "command": ["vllm", "serve"],
        "args": ["Qwen/Qwen3-0.6B", "--kv-transfer-config", "$(LMCACHE_KV_CONFIG)"],
        "env": [
            *([{"name": "PYTHONHASHSEED", "value": "0"}] if seed else []),
            {"name": "LMCACHE_KV_CONFIG", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
        ],
        "resources": {"requests": {"cpu": "4", "memory": "16Gi"}},
    }
    config_map = Resource(
        "kubernetes:core/v1:ConfigMap", "conn", {"data": {"kv-transfer-config.json": json.dumps(LMCACHE_CONNECTION)}}
    )
    daemonset = _pod("lmcache-engine", server)
    return [
        Resource("kubernetes:apps/v1:DaemonSet", "lmcache-engine", daemonset.props),
        _pod("decode", client),
        config_map,
    ]


@pytest.mark.parametrize("name", loading.preset_names())
def test_every_preset_passes_every_rule(name: str) -> None:
    recording = offline.record(plan(loading.load_preset(name)), name)
    # tiers-beat-recompute is advisory by design on stacks whose tier cannot beat recompute (test_payoff)
    assert [f.line() for f in check(recording) if f.rule.name != "tiers-beat-recompute"] == []


def test_router_capacity_larger_than_the_tier_is_caught() -> None:
    resources = _resources()
    assert _violations(RULE["router-capacity-within-tier"], resources) == []
    plugins = _chart_values(resources)["router"]["epp"]["pluginsConfig"]["plugins"]
    next(p for p in plugins if p.get("name") == "cpu-prefix-cache-producer")["parameters"]["lruCapacityPerServer"] = (
        82000
    )
    [message] = _violations(RULE["router-capacity-within-tier"], resources)
    assert "82000" in message and "at most 19200" in message


@pytest.mark.parametrize(
    "name", ["gpu-vllm-lmcache-connector-cpu", "gpu-sglang-native-cpu", "tpu-v6-vllm-native-cpu", "amd-vllm-native-cpu"]
)
def test_router_capacity_is_checked_for_every_connector(name: str) -> None:
    resources = _resources(name)
    assert _violations(RULE["router-capacity-within-tier"], resources) == []
    plugins = _chart_values(resources)["router"]["epp"]["pluginsConfig"]["plugins"]
    producer = next(p for p in plugins if p.get("name") == "cpu-prefix-cache-producer")
    producer["parameters"]["lruCapacityPerServer"] += 1
    assert _violations(RULE["router-capacity-within-tier"], resources)


def test_memory_limit_below_the_tier_is_caught() -> None:
    resources = _resources()
    assert _violations(RULE["memory-limit-covers-tier"], resources) == []
    _container(resources)["resources"]["limits"]["memory"] = "200Gi"
    assert "below its CPU tier" in _violations(RULE["memory-limit-covers-tier"], resources)[0]


def test_memory_limit_below_the_memory_backed_volumes_is_caught() -> None:
    """/dev/shm pages are charged to the pod: a limit above the tier but below its tmpfs is still short."""
    resources = _resources()
    volumes = _deployment(resources).props["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "shm")["emptyDir"]["sizeLimit"] == "308Gi"  # tier 300 GiB + 8
    _container(resources)["resources"]["limits"]["memory"] = "304Gi"
    [message] = _violations(RULE["memory-limit-covers-tier"], resources)
    assert f"memory-backed volumes ({308 * GiB} bytes)" in message


def test_unbounded_dev_shm_beside_a_tier_is_caught() -> None:
    resources = _resources()
    volumes = _deployment(resources).props["spec"]["template"]["spec"]["volumes"]
    del next(v for v in volumes if v["name"] == "shm")["emptyDir"]["sizeLimit"]
    assert "no sizeLimit" in _violations(RULE["memory-limit-covers-tier"], resources)[0]


def test_filesystem_tier_without_rwx_claim_is_caught() -> None:
    config = {
        "kv_connector": "OffloadingConnector",
        "kv_connector_extra_config": {"cpu_bytes_to_use": 1, "secondary_tiers": [{"type": "fs", "root_dir": "/mnt"}]},
    }
    container = {"name": "m", "command": ["vllm", "serve"], "args": ["x", "--kv-transfer-config", json.dumps(config)]}
    pod = _pod("decode", container, volumes=[{"name": "fs", "persistentVolumeClaim": {"claimName": "kv"}}])

    def claim(mode: str) -> Resource:
        return Resource(
            "kubernetes:core/v1:PersistentVolumeClaim",
            "kv",
            {"metadata": {"name": "kv"}, "spec": {"accessModes": [mode]}},
        )

    assert _violations(RULE["filesystem-tier-rwx"], [pod, claim("ReadWriteMany")]) == []
    assert _violations(RULE["filesystem-tier-rwx"], [pod, claim("ReadWriteOnce")])


def test_mooncake_without_rdma_is_caught() -> None:
    config = json.dumps({"kv_connector": "MooncakeStoreConnector", "kv_role": "kv_both"})
    container = {
        "name": "m",
        "args": ["x", "--kv-transfer-config", config],
        "resources": {"requests": {"rdma/ib": "1"}},
    }
    assert _violations(RULE["mooncake-rdma"], [_pod("decode", container)]) == []
    container["resources"] = {"requests": {"cpu": "1"}}
    assert _violations(RULE["mooncake-rdma"], [_pod("decode", container)])


def test_lmcache_rules_pass_on_the_seed_setup() -> None:
    for name in ("lmcache-hash-seed", "lmcache-image-tags", "lmcache-isolated-ipc"):
        assert _violations(RULE[name], _lmcache()) == [], name


def test_lmcache_without_hash_seed_is_caught() -> None:
    assert "PYTHONHASHSEED" in _violations(RULE["lmcache-hash-seed"], _lmcache(seed=False))[0]


def test_lmcache_image_tag_mismatch_is_caught() -> None:
    assert _violations(RULE["lmcache-image-tags"], _lmcache(client_image="lmcache/vllm-openai:v0.5.5"))


def test_lmcache_isolated_ipc_disagreement_is_caught() -> None:
    assert "isolated_ipc" in _violations(RULE["lmcache-isolated-ipc"], _lmcache(server_ipc=False))[0]


def test_token_prefix_scoring_without_tokenizer_is_caught() -> None:
    resources = _resources()
    assert _violations(RULE["prefix-scoring-tokens"], resources) == []  # approximate producers need no tokens
    _chart_values(resources)["router"]["epp"]["pluginsConfig"]["plugins"].append({"type": "prefix-cache-scorer"})
    assert _violations(RULE["prefix-scoring-tokens"], resources)
    _chart_values(resources)["router"]["tokenizer"] = {"enabled": True}
    _chart_values(resources)["router"]["epp"]["pluginsConfig"]["plugins"].append({"type": "token-producer"})
    assert _violations(RULE["prefix-scoring-tokens"], resources) == []


def test_disabled_prefix_caching_outside_test_mode_is_caught() -> None:
    resources = _resources()
    _container(resources)["args"].append("--no-enable-prefix-caching")
    assert _violations(RULE["prefix-caching-on"], resources)
    assert _violations(RULE["prefix-caching-on"], resources, testMode=True) == []


def test_router_selecting_no_pod_is_caught() -> None:
    resources = _resources()
    assert _violations(RULE["router-selects-servers"], resources) == []
    _chart_values(resources)["router"]["modelServers"]["matchLabels"] = {"llm-d.ai/guide": "lmcache"}
    assert "selects no model-server pod" in _violations(RULE["router-selects-servers"], resources)[0]


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:latest",
        "vllm/vllm-openai:LATEST",
        "vllm/vllm-openai:Stable",
        "vllm/vllm-tpu:nightly",
        "vllm/vllm-openai",
        "ghcr.io/x/y:main",
        "vllm/vllm-openai@sha256:" + "a" * 63,
        "vllm/vllm-openai@sha256:" + "A" * 64,
        "vllm/vllm-openai@md5:" + "a" * 32,
        "vllm/vllm-openai:v0.26.0@sha256",
    ],
)
def test_mutable_images_are_caught(image: str) -> None:
    resources = _resources()
    _container(resources)["image"] = image
    assert _violations(RULE["images-pinned"], resources)
    assert _violations(RULE["images-pinned"], resources, allowMutableTags=True) == []


def test_digest_pinned_image_passes_and_unpinned_chart_is_caught() -> None:
    resources = _resources()
    _container(resources)["image"] = "vllm/vllm-openai@sha256:" + "a" * 64
    assert _violations(RULE["images-pinned"], resources) == []
    next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart").props["version"] = "v0"
    assert "chart version v0" in _violations(RULE["images-pinned"], resources)[0]


def test_container_without_requests_is_caught() -> None:
    resources = _resources()
    assert _violations(RULE["resource-requests"], resources) == []
    del _container(resources)["resources"]["requests"]["memory"]
    assert _violations(RULE["resource-requests"], resources)


def test_privileged_container_is_caught_unless_allowed() -> None:
    resources = _resources()
    _container(resources)["securityContext"] = {"privileged": True}
    assert _violations(RULE["privileged-containers"], resources)
    assert _violations(RULE["privileged-containers"], resources, allowedContainers=["modelserver"]) == []


SECURITY_RULES = ("privileged-containers", "root-containers", "hardened-containers", "host-namespaces", "host-paths")


@pytest.mark.parametrize("name", ["gpu-vllm-native-cpu", "gpu-vllm-mooncake-store-fs", "tpu-v7-vllm-native-cpu"])
def test_the_rendered_pods_pass_the_security_rules(name: str) -> None:
    resources = _resources(name)
    for rule in SECURITY_RULES:
        assert _violations(RULE[rule], resources) == [], rule


def test_root_without_an_exemption_is_caught() -> None:
    resources = _resources()
    context = _container(resources)["securityContext"]
    assert context["runAsNonRoot"] is True and _violations(RULE["root-containers"], resources) == []
    context["runAsUser"] = 0
    assert "runs as root without an exemption" in _violations(RULE["root-containers"], resources)[0]
    del context["runAsUser"], context["runAsNonRoot"]  # the image's user: root unless it says otherwise
    assert _violations(RULE["root-containers"], resources)
    _deployment(resources).props["spec"]["template"]["spec"]["securityContext"] = {"runAsNonRoot": True}
    assert _violations(RULE["root-containers"], resources) == []


def test_a_root_exemption_names_its_container() -> None:
    """The shared tier's writers run as root; the same container without the tier's mount may not."""
    resources = _resources("gpu-vllm-native-fs")
    assert _container(resources)["securityContext"]["runAsUser"] == 0
    assert _violations(RULE["root-containers"], resources) == []
    _container(resources)["volumeMounts"] = []
    assert _violations(RULE["root-containers"], resources)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("allowPrivilegeEscalation", True),
        ("capabilities", {"drop": ["NET_RAW"]}),
        ("capabilities", {"drop": ["ALL"], "add": ["SYS_ADMIN"]}),
        ("seccompProfile", {"type": "Unconfined"}),
    ],
)
def test_a_container_without_the_hardened_context_is_caught(field: str, value: Any) -> None:
    resources = _resources()
    assert _violations(RULE["hardened-containers"], resources) == []
    _container(resources)["securityContext"][field] = value
    assert _violations(RULE["hardened-containers"], resources)


def test_capabilities_are_added_back_only_where_an_exemption_grants_them() -> None:
    resources = _resources("gpu-vllm-mooncake-store-cpu")  # RDMA: IPC_LOCK
    server = next(r for r in resources if r.type == DEPLOYMENT and "model-server" in r.name)
    container = server.props["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert _violations(RULE["hardened-containers"], resources) == []
    del container["resources"]["requests"]["rdma/ib"]
    assert "beyond its exemptions" in _violations(RULE["hardened-containers"], resources)[0]


@pytest.mark.parametrize("key", ["hostNetwork", "hostPID", "hostIPC"])
def test_host_namespaces_are_caught(key: str) -> None:
    resources = _resources()
    spec = _deployment(resources).props["spec"]["template"]["spec"]
    spec[key] = False
    assert _violations(RULE["host-namespaces"], resources) == []
    spec[key] = True
    assert key in _violations(RULE["host-namespaces"], resources)[0]


def test_host_paths_outside_the_allow_list_are_caught() -> None:
    resources = _resources("gpu-vllm-mooncake-store-fs")  # the Mooncake client's offload directory
    assert any("hostPath" in v for p in pods(resources) for v in p.spec.get("volumes") or [])
    assert _violations(RULE["host-paths"], resources) == []
    volumes = _deployment(resources).props["spec"]["template"]["spec"]["volumes"]
    volumes.append({"name": "root", "hostPath": {"path": "/"}})
    assert "host path /" in _violations(RULE["host-paths"], resources)[0]
    assert _violations(RULE["host-paths"], resources, allowedHostPaths=["/", "/mnt/mooncake-offload"]) == []


def test_a_token_mounted_without_api_access_is_caught() -> None:
    resources = _resources("dev")  # the verification Job lists pods: its account is bound, its token mounted
    assert _violations(RULE["token-automount"], resources) == []
    spec = _deployment(resources).props["spec"]["template"]["spec"]
    spec["automountServiceAccountToken"] = True
    assert "granted nothing" in _violations(RULE["token-automount"], resources)[0]
    del spec["automountServiceAccountToken"]  # then the ServiceAccount's own setting decides
    assert _violations(RULE["token-automount"], resources) == []
    next(r for r in resources if r.type == "kubernetes:core/v1:ServiceAccount" and "verify" not in r.name).props[
        "automountServiceAccountToken"
    ] = True
    assert _violations(RULE["token-automount"], resources)
    binding = next(r for r in resources if r.type.endswith(":RoleBinding"))
    binding.props["subjects"] = []
    assert len(_violations(RULE["token-automount"], resources)) == 2  # the Job's account is bound no more


def test_charts_from_outside_the_allowed_registries_are_caught() -> None:
    resources = _resources("eks-h100-efs")  # the router chart (OCI) and the NVIDIA device plugin (Helm repo)
    assert _violations(RULE["chart-registries"], resources) == []
    router = next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart" and "router" in r.props["values"])
    router.props["chart"] = "oci://ghcr.io/someone-else/charts/llm-d-router-standalone"
    assert "someone-else" in _violations(RULE["chart-registries"], resources)[0]
    plugin = next(r for r in resources if "repositoryOpts" in r.props)
    plugin.props["repositoryOpts"]["repo"] = "https://example.com/charts"
    assert len(_violations(RULE["chart-registries"], resources)) == 2


def test_a_pod_without_a_network_policy_is_caught() -> None:
    resources = _resources("gpu-vllm-lmcache-server")
    assert _violations(RULE["network-policies"], resources) == []
    policies = [r for r in resources if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy"]
    lmcache = next(r for r in policies if r.props["metadata"]["name"] == "lmcache-engine-ingress")
    [message] = _violations(RULE["network-policies"], [r for r in resources if r is not lmcache])
    assert "'app.kubernetes.io/name': 'lmcache'" in message
    lmcache.props["metadata"]["namespace"] = "elsewhere"  # a policy only governs its own namespace
    assert _violations(RULE["network-policies"], resources)
    assert _violations(RULE["network-policies"], resources, requireNetworkPolicies=False) == []


def test_router_pods_without_a_network_policy_are_caught() -> None:
    resources = _resources()
    router = next(
        r.props
        for r in resources
        if r.type.endswith("NetworkPolicy") and r.props["metadata"]["name"].endswith("-epp-ingress")
    )
    router["spec"]["podSelector"]["matchLabels"] = {"app.kubernetes.io/name": "tiered-prefix-cache-epp"}
    [message] = _violations(RULE["network-policies"], resources)  # the chart's pods do not carry that label
    assert "router's pods {'llm-d-router-gateway': 'tiered-prefix-cache-epp'}" in message


def test_with_network_policies_off_the_rule_reports_every_pod() -> None:
    recording = offline.record(
        plan(loading.load_preset("gpu-vllm-native-cpu", ["network_policies.enabled=false"])), "x"
    )
    resources = [Resource(r.type, r.name, r.inputs) for r in recording.resources]
    assert len(_violations(RULE["network-policies"], resources)) == 2  # the model servers and the router


def test_literal_hf_token_is_caught() -> None:
    resources = _resources()
    assert _violations(RULE["hf-token-secret"], resources) == []
    _container(resources)["env"][0] = {"name": "HF_TOKEN", "value": "hf_literal"}
    assert _violations(RULE["hf-token-secret"], resources)


def test_two_router_releases_in_one_namespace_are_caught() -> None:
    resources = _resources()
    assert _violations(RULE["one-router-per-namespace"], resources) == []
    chart = next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart")
    second = Resource(chart.type, "second-router", copy.deepcopy(chart.props))
    assert "share namespace" in _violations(RULE["one-router-per-namespace"], [*resources, second])[0]
    second.props["namespace"] = "elsewhere"
    assert _violations(RULE["one-router-per-namespace"], [*resources, second]) == []


def test_cluster_hardening() -> None:
    good = Resource(
        "gcp:container/cluster:Cluster",
        "gke",
        {
            "privateClusterConfig": {"enablePrivateNodes": True},
            "workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"},
            "nodeConfig": {"shieldedInstanceConfig": {"enableSecureBoot": True}},
        },
    )
    assert _violations(RULE["cluster-hardening"], [good]) == []
    bad = Resource("gcp:container/cluster:Cluster", "gke", {"nodeConfig": {}})
    assert len(_violations(RULE["cluster-hardening"], [bad])) == 3
    eks = Resource("aws:eks/cluster:Cluster", "eks", {})
    assert _violations(RULE["cluster-hardening"], [eks])
    oidc = Resource("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "oidc", {})
    assert _violations(RULE["cluster-hardening"], [eks, oidc]) == []


def test_per_pod_weight_downloads_beside_shared_storage_are_caught() -> None:
    rule = RULE["weights-fetched-once"]
    assert _violations(rule, _resources("gpu-vllm-native-fs")) == []  # the model cache is on by default
    assert _violations(rule, _resources("gpu-vllm-native-cpu")) == []  # no shared storage to fetch onto
    recording = offline.record(plan(loading.load_named("gpu-vllm-native-fs", ["model_cache.mode=off"])), "x")
    off = [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]
    assert _violations(rule, off) == [
        "container modelserver downloads Qwen/Qwen3-32B from Hugging Face in every pod while the stack has the"
        " ReadWriteMany claim llm-d-kv-cache-storage: set model_cache to fetch the weights once onto it"
    ]


def test_an_unplaced_or_incomplete_image_prepull_is_caught() -> None:
    rule = RULE["image-prepull"]
    resources = _resources("existing-mi300")
    assert _violations(rule, resources) == []
    assert _violations(rule, _resources("gpu-vllm-native-cpu")) == []  # no pre-pull at all
    daemon_set = next(r for r in resources if r.type == "kubernetes:apps/v1:DaemonSet" and "prepull" in r.name)
    pod = daemon_set.props["spec"]["template"]["spec"]
    del pod["nodeSelector"]
    pod["initContainers"] = pod["initContainers"][:1]  # the tool only
    assert _violations(rule, resources) == [
        "pulls its images onto every node of the cluster: place it on the serving pool",
        "does not pull ghcr.io/llm-d/llm-d-rocm:v0.9.0, which the model servers run",
    ]


def test_every_rule_has_a_test_above() -> None:
    tested = {
        "router-capacity-within-tier", "memory-limit-covers-tier", "filesystem-tier-rwx", "mooncake-rdma",
        "lmcache-hash-seed", "lmcache-image-tags", "lmcache-isolated-ipc", "prefix-scoring-tokens",
        "prefix-caching-on", "router-selects-servers", "images-pinned", "resource-requests",
        "privileged-containers", "hf-token-secret", "cluster-hardening", "one-router-per-namespace",
        "root-containers", "hardened-containers", "host-namespaces", "host-paths", "token-automount",
        "chart-registries", "network-policies",
        "tiers-beat-recompute",  # tests/test_payoff.py
        "weights-fetched-once", "image-prepull",
    }  # fmt: skip
    assert tested == set(RULE)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def test_the_pack_reports_through_the_policy_analyzer_with_enforcement_levels() -> None:
    """What `pulumi preview --policy-pack policies` talks to, without the CLI."""
    resources = _resources()
    _container(resources)["image"] = "vllm/vllm-openai:latest"
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", POLICIES, EnforcementLevel.MANDATORY)
    request = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type, name=r.name, urn=f"urn:pulumi:s::llmd::{r.type}::{r.name}", properties=_struct(r.props)
            )
            for r in resources
        ]
    )
    diagnostics = servicer.AnalyzeStack(request, None).diagnostics  # type: ignore[no-untyped-call]
    found = {(d.policyName, analyzer_pb2.EnforcementLevel.Name(d.enforcementLevel)) for d in diagnostics}
    assert found == {("images-pinned", "MANDATORY")}
    assert diagnostics[0].urn.endswith("::llmd-model-server-gpu-vllm-decode")


def test_stack_rules_read_inputs_the_engine_showed_not_a_components_outputs() -> None:
    """Seen through the real engine (`./run e2e`): a stack policy gets each resource's outputs, and a
    helm.v4 Chart's outputs are only what it registers (no `chart`, no `values`). The pack records the
    inputs the engine shows per resource and judges those, as `./run check` does."""
    from policies import pack

    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", POLICIES, EnforcementLevel.MANDATORY)
    urn = "urn:pulumi:s::llmd::llmd:router:Router$kubernetes:helm.sh/v4:Chart::llmd-router-chart"
    inputs = {"chart": "oci://ghcr.io/llm-d/charts/llm-d-router-standalone", "version": "v1.0.0", "values": {}}
    chart_type = "kubernetes:helm.sh/v4:Chart"
    stack = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(type=chart_type, name="llmd-router-chart", urn=urn, properties=_struct({}))
        ]
    )
    pack._INPUTS.clear()
    before = {d.policyName for d in servicer.AnalyzeStack(stack, None).diagnostics}  # type: ignore[no-untyped-call]
    assert "chart-registries" in before  # outputs alone: the chart seems to come from nowhere
    servicer.Analyze(  # type: ignore[no-untyped-call]
        analyzer_pb2.AnalyzeRequest(type=chart_type, name="llmd-router-chart", urn=urn, properties=_struct(inputs)),
        None,
    )
    after = {d.policyName for d in servicer.AnalyzeStack(stack, None).diagnostics}  # type: ignore[no-untyped-call]
    assert "chart-registries" not in after
    pack._INPUTS.clear()


def test_a_local_chart_passes_only_where_allowed() -> None:
    chart = Resource("kubernetes:helm.sh/v4:Chart", "c", {"chart": "/charts/llm-d-router-standalone-v0.10.0.tgz"})
    rule = RULE["chart-registries"]
    assert rule.enforcement == "mandatory"
    (violation,) = rule.check([chart], rule.config)
    assert "local file" in violation.message and "allowLocalCharts" in violation.message
    assert rule.check([chart], {**rule.config, "allowLocalCharts": True}) == []


def test_a_charts_inputs_come_from_its_routers_output_where_the_engine_analyzed_none() -> None:
    """The engine runs no per-resource analysis on a remote component (helm.v4 Chart): the Router repeats
    the chart's inputs as an output (`labels.ROUTER_CHART_OUTPUT`), which the stack policies read."""
    from components.catalog import labels
    from policies import pack

    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", POLICIES, EnforcementLevel.MANDATORY)
    router_urn = "urn:pulumi:s::llmd::llmd:router:Router::llmd-router"
    chart_urn = "urn:pulumi:s::llmd::llmd:router:Router$kubernetes:helm.sh/v4:Chart::llmd-router-chart"

    def stack(chart: str) -> Any:
        inputs = {"chart": chart, "version": "v1.0.0", "values": {}}
        return analyzer_pb2.AnalyzeStackRequest(
            resources=[
                analyzer_pb2.AnalyzerResource(
                    type="llmd:router:Router",
                    name="llmd-router",
                    urn=router_urn,
                    properties=_struct({labels.ROUTER_CHART_OUTPUT: inputs}),
                ),
                analyzer_pb2.AnalyzerResource(
                    type="kubernetes:helm.sh/v4:Chart",
                    name="llmd-router-chart",
                    urn=chart_urn,
                    properties=_struct({}),
                    parent=router_urn,
                ),
            ]
        )

    pack._INPUTS.clear()
    allowed = stack("oci://ghcr.io/llm-d/charts/llm-d-router-standalone")
    assert "chart-registries" not in {d.policyName for d in servicer.AnalyzeStack(allowed, None).diagnostics}  # type: ignore[no-untyped-call]
    foreign = stack("oci://registry.example/charts/router")
    diagnostics = servicer.AnalyzeStack(foreign, None).diagnostics  # type: ignore[no-untyped-call]
    messages = [d.message for d in diagnostics if d.policyName == "chart-registries"]
    assert messages and "registry.example" in messages[0]


def test_a_local_charts_version_is_read_from_its_file_name() -> None:
    rule = RULE["images-pinned"]
    values: dict[str, Any] = {"router": {}}
    pinned = Resource(
        "kubernetes:helm.sh/v4:Chart", "c", {"chart": "/charts/llm-d-router-standalone-v0.10.0.tgz", "values": values}
    )
    assert rule.check([pinned], rule.config) == []
    floating = Resource(
        "kubernetes:helm.sh/v4:Chart", "c", {"chart": "/charts/llm-d-router-standalone.tgz", "values": values}
    )
    assert [v.message for v in rule.check([floating], rule.config)] == ["chart version (none) is not a pinned release"]
