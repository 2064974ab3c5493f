"""Every rule passes on the rendered presets and catches its failure case: here the router, cache-tier,
connector and shared-storage rules and the pack itself; the platform rules in tests/test_policy_platform.py."""

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
from policies.pack import PACK_NAME, POLICIES
from policies.resources import Resource
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review import offline
from stacks.review.check import check
from tests.policy_cases import (
    RULE,
    chart_values_of,
    container_of,
    deployment_of,
    pod_resource,
    recorded,
    violations_of,
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
    daemonset = pod_resource("lmcache-engine", server)
    return [
        Resource("kubernetes:apps/v1:DaemonSet", "lmcache-engine", daemonset.props),
        pod_resource("decode", client),
        config_map,
    ]


@pytest.mark.parametrize("name", loading.preset_names())
def test_every_preset_passes_every_rule(name: str) -> None:
    recording = offline.record(plan(loading.load_preset(name)), name)
    # tiers-beat-recompute is advisory by design on stacks whose tier cannot beat recompute (test_payoff)
    assert [f.line() for f in check(recording) if f.rule.name != "tiers-beat-recompute"] == []


def test_router_capacity_larger_than_the_tier_is_caught() -> None:
    resources = recorded()
    assert violations_of(RULE["router-capacity-within-tier"], resources) == []
    plugins = chart_values_of(resources)["router"]["epp"]["pluginsConfig"]["plugins"]
    next(p for p in plugins if p.get("name") == "cpu-prefix-cache-producer")["parameters"]["lruCapacityPerServer"] = (
        82000
    )
    [message] = violations_of(RULE["router-capacity-within-tier"], resources)
    assert "82000" in message and "at most 19200" in message


@pytest.mark.parametrize(
    "name", ["gpu-vllm-lmcache-connector-cpu", "gpu-sglang-native-cpu", "tpu-v6-vllm-native-cpu", "amd-vllm-native-cpu"]
)
def test_router_capacity_is_checked_for_every_connector(name: str) -> None:
    resources = recorded(name)
    assert violations_of(RULE["router-capacity-within-tier"], resources) == []
    plugins = chart_values_of(resources)["router"]["epp"]["pluginsConfig"]["plugins"]
    producer = next(p for p in plugins if p.get("name") == "cpu-prefix-cache-producer")
    producer["parameters"]["lruCapacityPerServer"] += 1
    assert violations_of(RULE["router-capacity-within-tier"], resources)


def test_memory_limit_below_the_tier_is_caught() -> None:
    resources = recorded()
    assert violations_of(RULE["memory-limit-covers-tier"], resources) == []
    container_of(resources)["resources"]["limits"]["memory"] = "200Gi"
    assert "below its CPU tier" in violations_of(RULE["memory-limit-covers-tier"], resources)[0]


def test_memory_limit_below_the_memory_backed_volumes_is_caught() -> None:
    """/dev/shm pages are charged to the pod: a limit above the tier but below its tmpfs is still short."""
    resources = recorded()
    volumes = deployment_of(resources).props["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "shm")["emptyDir"]["sizeLimit"] == "308Gi"  # tier 300 GiB + 8
    container_of(resources)["resources"]["limits"]["memory"] = "304Gi"
    [message] = violations_of(RULE["memory-limit-covers-tier"], resources)
    assert f"memory-backed volumes ({308 * GiB} bytes)" in message


def test_unbounded_dev_shm_beside_a_tier_is_caught() -> None:
    resources = recorded()
    volumes = deployment_of(resources).props["spec"]["template"]["spec"]["volumes"]
    del next(v for v in volumes if v["name"] == "shm")["emptyDir"]["sizeLimit"]
    assert "no sizeLimit" in violations_of(RULE["memory-limit-covers-tier"], resources)[0]


def test_filesystem_tier_without_rwx_claim_is_caught() -> None:
    config = {
        "kv_connector": "OffloadingConnector",
        "kv_connector_extra_config": {"cpu_bytes_to_use": 1, "secondary_tiers": [{"type": "fs", "root_dir": "/mnt"}]},
    }
    container = {"name": "m", "command": ["vllm", "serve"], "args": ["x", "--kv-transfer-config", json.dumps(config)]}
    pod = pod_resource("decode", container, volumes=[{"name": "fs", "persistentVolumeClaim": {"claimName": "kv"}}])

    def claim(mode: str) -> Resource:
        return Resource(
            "kubernetes:core/v1:PersistentVolumeClaim",
            "kv",
            {"metadata": {"name": "kv"}, "spec": {"accessModes": [mode]}},
        )

    assert violations_of(RULE["filesystem-tier-rwx"], [pod, claim("ReadWriteMany")]) == []
    assert violations_of(RULE["filesystem-tier-rwx"], [pod, claim("ReadWriteOnce")])


def test_filesystem_tier_without_capacity_management_is_caught() -> None:
    """On a rendered filesystem preset: the evictor passes; without it the claim must say `off`."""
    rule = RULE["filesystem-tier-capacity"]
    resources = recorded("gpu-vllm-native-fs")
    assert violations_of(rule, resources) == []
    without = [r for r in resources if "tier-evictor" not in r.name]
    assert len(without) < len(resources)
    assert violations_of(rule, without) == [
        "writes the filesystem tier on claim llm-d-kv-cache-storage, which nothing evicts (no tier-evictor pod that"
        " can work mounts it, and it is not labeled llm-d.ai/capacity-management: off): it fills, then every store"
        " fails"
    ]
    claim = next(r for r in without if r.type == "kubernetes:core/v1:PersistentVolumeClaim")
    claim.props["metadata"]["labels"]["llm-d.ai/capacity-management"] = "off"
    assert violations_of(rule, without) == []
    # The label alone does not do: `tier-evictor` needs the evictor's pod.
    claim.props["metadata"]["labels"]["llm-d.ai/capacity-management"] = "tier-evictor"
    assert len(violations_of(rule, without)) == 1


def test_evictor_off_renders_a_claim_the_rule_accepts() -> None:
    config = loading.load_preset("gke-h100-lustre", ["storage.evictor.mode=off"])
    recording = offline.record(plan(config), "gke-h100-lustre")
    resources = [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]
    assert not [r for r in resources if "tier-evictor" in r.name]
    assert violations_of(RULE["filesystem-tier-capacity"], resources) == []


def test_mooncake_without_rdma_is_caught() -> None:
    config = json.dumps({"kv_connector": "MooncakeStoreConnector", "kv_role": "kv_both"})
    container = {
        "name": "m",
        "args": ["x", "--kv-transfer-config", config],
        "resources": {"requests": {"rdma/ib": "1"}},
    }
    assert violations_of(RULE["mooncake-rdma"], [pod_resource("decode", container)]) == []
    container["resources"] = {"requests": {"cpu": "1"}}
    assert violations_of(RULE["mooncake-rdma"], [pod_resource("decode", container)])


def test_lmcache_rules_pass_on_the_seed_setup() -> None:
    for name in ("lmcache-hash-seed", "lmcache-image-tags", "lmcache-isolated-ipc"):
        assert violations_of(RULE[name], _lmcache()) == [], name


def test_lmcache_without_hash_seed_is_caught() -> None:
    assert "PYTHONHASHSEED" in violations_of(RULE["lmcache-hash-seed"], _lmcache(seed=False))[0]


def test_lmcache_image_tag_mismatch_is_caught() -> None:
    assert violations_of(RULE["lmcache-image-tags"], _lmcache(client_image="lmcache/vllm-openai:v0.5.5"))


def test_lmcache_isolated_ipc_disagreement_is_caught() -> None:
    assert "isolated_ipc" in violations_of(RULE["lmcache-isolated-ipc"], _lmcache(server_ipc=False))[0]


def test_token_prefix_scoring_without_tokenizer_is_caught() -> None:
    resources = recorded()
    assert violations_of(RULE["prefix-scoring-tokens"], resources) == []  # approximate producers need no tokens
    chart_values_of(resources)["router"]["epp"]["pluginsConfig"]["plugins"].append({"type": "prefix-cache-scorer"})
    assert violations_of(RULE["prefix-scoring-tokens"], resources)
    chart_values_of(resources)["router"]["tokenizer"] = {"enabled": True}
    chart_values_of(resources)["router"]["epp"]["pluginsConfig"]["plugins"].append({"type": "token-producer"})
    assert violations_of(RULE["prefix-scoring-tokens"], resources) == []


def test_disabled_prefix_caching_outside_test_mode_is_caught() -> None:
    resources = recorded()
    container_of(resources)["args"].append("--no-enable-prefix-caching")
    assert violations_of(RULE["prefix-caching-on"], resources)
    assert violations_of(RULE["prefix-caching-on"], resources, testMode=True) == []


def test_router_selecting_no_pod_is_caught() -> None:
    resources = recorded()
    assert violations_of(RULE["router-selects-servers"], resources) == []
    chart_values_of(resources)["router"]["modelServers"]["matchLabels"] = {"llm-d.ai/guide": "lmcache"}
    assert "selects no model-server pod" in violations_of(RULE["router-selects-servers"], resources)[0]


def test_two_router_releases_in_one_namespace_are_caught() -> None:
    resources = recorded()
    assert violations_of(RULE["one-router-per-namespace"], resources) == []
    chart = next(r for r in resources if r.type == "kubernetes:helm.sh/v4:Chart")
    second = Resource(chart.type, "second-router", copy.deepcopy(chart.props))
    assert "share namespace" in violations_of(RULE["one-router-per-namespace"], [*resources, second])[0]
    second.props["namespace"] = "elsewhere"
    assert violations_of(RULE["one-router-per-namespace"], [*resources, second]) == []


def test_per_pod_weight_downloads_beside_shared_storage_are_caught() -> None:
    rule = RULE["weights-fetched-once"]
    assert violations_of(rule, recorded("gpu-vllm-native-fs")) == []  # the model cache is on by default
    assert violations_of(rule, recorded("gpu-vllm-native-cpu")) == []  # no shared storage to fetch onto
    recording = offline.record(plan(loading.load_named("gpu-vllm-native-fs", ["model_cache.mode=off"])), "x")
    off = [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]
    assert violations_of(rule, off) == [
        "container modelserver downloads Qwen/Qwen3-32B from Hugging Face in every pod while the stack has the"
        " ReadWriteMany claim llm-d-kv-cache-storage: set model_cache to fetch the weights once onto it"
    ]


def test_an_unplaced_or_incomplete_image_prepull_is_caught() -> None:
    rule = RULE["image-prepull"]
    resources = recorded("existing-mi300")
    assert violations_of(rule, resources) == []
    assert violations_of(rule, recorded("gpu-vllm-native-cpu")) == []  # no pre-pull at all
    daemon_set = next(r for r in resources if r.type == "kubernetes:apps/v1:DaemonSet" and "prepull" in r.name)
    pod = daemon_set.props["spec"]["template"]["spec"]
    del pod["nodeSelector"]
    pod["initContainers"] = pod["initContainers"][:1]  # the tool only
    assert violations_of(rule, resources) == [
        "pulls its images onto every node of the cluster: place it on the serving pool",
        "does not pull ghcr.io/llm-d/llm-d-rocm:v0.9.0, which the model servers run",
    ]


def test_every_rule_has_a_test_above() -> None:
    tested = {
        "router-capacity-within-tier", "memory-limit-covers-tier", "filesystem-tier-rwx", "mooncake-rdma",
        "filesystem-tier-capacity",
        "lmcache-hash-seed", "lmcache-image-tags", "lmcache-isolated-ipc", "prefix-scoring-tokens",
        "prefix-caching-on", "router-selects-servers", "one-router-per-namespace",
        "weights-fetched-once", "image-prepull",
        # tests/test_policy_platform.py
        "images-pinned", "resource-requests", "privileged-containers", "hf-token-secret", "cluster-hardening",
        "root-containers", "hardened-containers", "host-namespaces", "host-paths", "token-automount",
        "chart-registries", "network-policies",
        "tiers-beat-recompute",  # tests/test_payoff.py
        "identity-labels",  # tests/test_identity.py
        "pd-block-size", "pd-hash-seed", "pd-rank-ports", "pd-handoff-both-sides",  # tests/test_disaggregation_rules.py
        "monthly-budget", "monthly-budget-default",  # tests/test_budget.py
        "filesystem-tier-within-limits",  # tests/test_tier_throughput.py
        "annotator-least-privilege",  # tests/test_scale_in.py
        # tests/test_precise_routing.py
        "kv-events-block-size", "kv-events-hash-seed", "kv-events-port-per-rank", "precise-scorer-publishers",
        "prefill-rate-agrees",
    }  # fmt: skip
    assert tested == set(RULE)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def test_the_pack_reports_through_the_policy_analyzer_with_enforcement_levels() -> None:
    """What `pulumi preview --policy-pack policies` talks to, without the CLI."""
    resources = recorded()
    container_of(resources)["image"] = "vllm/vllm-openai:latest"
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
