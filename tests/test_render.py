"""The mocked program: every preset renders, validates, and keeps its secrets and dependencies."""

import json
import os
from typing import Any

import pytest
import yaml

from components.catalog.labels import CPU_TIER_BYTES_ANNOTATION
from components.units import ByteSize
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review.offline import OFFLINE_HF_TOKEN
from stacks.review.render import Render, render
from tests.helpers import (
    by_kind,
    manifests,
    rendered,
    rendered_stack,
    resources,
    router_chart,
    validate,
    with_gmp_project,
)

PRESETS = loading.preset_names()
# Every preset, and the stack files beside them (Pulumi.dev.yaml sets its own config over the dev preset).
STACKS = ["dev"]
TARGETS = [pytest.param(name, False, id=name) for name in PRESETS] + [
    pytest.param(name, True, id=f"Pulumi.{name}.yaml") for name in STACKS
]


def _render(name: str, stack: bool, overrides: tuple[str, ...] = ()) -> Render:
    overrides = with_gmp_project(name, overrides, stack)
    return rendered_stack(name, overrides) if stack else rendered(name, overrides)


MONITORING = ("monitoring.enabled=true",)
# An autoscaled preset on an existing cluster names the project whose Managed Prometheus KEDA reads.
GKE_MONITORING = (
    "monitoring.enabled=true",
    "monitoring.provider=gke-managed-prometheus",
)


@pytest.mark.parametrize(("name", "stack"), TARGETS)
@pytest.mark.parametrize("overrides", [(), MONITORING, GKE_MONITORING])
def test_every_object_validates_against_its_schema(name: str, stack: bool, overrides: tuple[str, ...]) -> None:
    objects = manifests(_render(name, stack, overrides))
    assert objects
    for obj in objects:
        validate(obj)


@pytest.mark.parametrize("name", PRESETS)
def test_the_pool_the_chart_creates_validates_against_the_crd(name: str) -> None:
    pool = plan(loading.load_preset(name)).inference_pool
    if pool is None:  # P/D: inferencePool.create is false and the EPP selects pods by label
        assert name.endswith("-pd")
        return
    validate(pool)


def test_schema_validation_catches_a_broken_object() -> None:
    deployment = by_kind(manifests(rendered("gpu-vllm-native-cpu")), "Deployment")[0]
    deployment["spec"]["replica"] = 2
    with pytest.raises(Exception, match="replica"):
        validate(deployment)
    pool = plan(loading.load_preset("gpu-vllm-native-cpu")).inference_pool
    assert pool is not None
    pool["spec"]["endpointPickerRef"]["failureMode"] = "FailClosed"
    with pytest.raises(Exception, match="FailClosed"):
        validate(pool)


def test_renders_are_byte_identical() -> None:
    config = loading.load_preset("gpu-vllm-native-cpu")
    first, second = render(plan(config), "x"), render(plan(config), "x")
    assert first == second


@pytest.mark.parametrize(("name", "stack"), TARGETS)
def test_hf_token_never_appears_and_is_recorded_secret(name: str, stack: bool) -> None:
    result = _render(name, stack)
    for text in (result.manifests, result.resources, result.summary):
        assert OFFLINE_HF_TOKEN not in text
    secret = next(r for r in resources(result) if r["type"] == "kubernetes:core/v1:Secret")
    assert secret["secretPaths"] == ["stringData"]
    assert secret["inputs"]["stringData"] == {"HF_TOKEN": "[secret]"}
    # Nothing else carries a secret but a created cluster's kubeconfig: the pods read the token by reference.
    carriers = {r["name"]: r["secretPaths"] for r in resources(result) if r["secretPaths"]}
    provider = next(r for r in resources(result) if r["type"] == "pulumi:providers:kubernetes")
    expected = {secret["name"]: ["stringData"]}
    if provider["inputs"].get("kubeconfig"):
        expected[provider["name"]] = ["kubeconfig"]
    assert carriers == expected


def test_default_preset_is_the_seed_default_deployment() -> None:
    result = rendered("gpu-vllm-native-cpu")
    deployment = by_kind(manifests(result), "Deployment")[0]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"]["llm-d.ai/guide"] == "tiered-prefix-cache"
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert container["resources"]["requests"]["nvidia.com/gpu"] == 2
    args = container["args"]
    assert "--tensor-parallel-size=2" in args
    kv = json.loads(args[args.index("--kv-transfer-config") + 1])
    assert kv == {
        "kv_connector": "OffloadingConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"cpu_bytes_to_use": 322122547200},
    }
    assert container["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "llm-d-hf-token", "key": "HF_TOKEN"}


def _bytes(quantity: str) -> int:
    return ByteSize.parse(quantity).bytes


def _server(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The model servers' workload: the decode Deployment, or the LeaderWorkerSet."""
    for obj in objects:
        if obj["kind"] == "Deployment" and obj["metadata"]["labels"].get("llm-d.ai/role") == "decode":
            return obj
        if obj["kind"] == "LeaderWorkerSet":
            return obj
    raise AssertionError("no model-server workload")


def _workload(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod spec, serving container) of the model servers: a Deployment's pod, or the LeaderWorkerSet's leader."""
    spec = _server(objects)["spec"]
    template = spec["leaderWorkerTemplate"]["leaderTemplate"] if "leaderWorkerTemplate" in spec else spec["template"]
    return template["spec"], template["spec"]["containers"][0]


def _stamped_tier(objects: list[dict[str, Any]]) -> int:
    """The host memory each model-server pod's CPU tier takes, as its workload is stamped (what every rule reads;
    the stamp is the connector's own figure, tests/test_cpu_tier_stamp.py, and the settings it writes are pinned
    per connector in tests/test_servers.py)."""
    return int(_server(objects)["metadata"]["annotations"][CPU_TIER_BYTES_ANNOTATION])


@pytest.mark.parametrize("name", PRESETS)
def test_pod_memory_holds_the_cpu_tier(name: str) -> None:
    objects = manifests(rendered(name))
    servers = [d for d in by_kind(objects, "DaemonSet") if d["metadata"]["name"] == "lmcache-engine"]
    if servers:  # the tier is the LMCache server's L1 on each node, not the vLLM pods'
        server = servers[0]["spec"]["template"]["spec"]["containers"][0]
        l1 = next(a for a in server["args"] if a.startswith("--l1-size-gb="))
        assert _bytes(server["resources"]["requests"]["memory"]) > float(l1.split("=")[1]) * 2**30
        return
    pod, container = _workload(objects)
    memory = container["resources"]
    assert memory["requests"]["memory"] == memory["limits"]["memory"]
    limit, tier = _bytes(memory["limits"]["memory"]), _stamped_tier(objects)
    assert limit > tier
    if "OffloadingConnector" in " ".join(container.get("args", [])):  # the native tier lives in /dev/shm
        shm = next(v for v in pod["volumes"] if v["name"] == "shm")["emptyDir"]
        assert shm["medium"] == "Memory"
        assert tier <= _bytes(shm["sizeLimit"]) < limit
        assert {"name": "shm", "mountPath": "/dev/shm"} in container["volumeMounts"]


def test_router_chart_values_carry_the_derived_capacity() -> None:
    chart = router_chart(resources(rendered("gpu-vllm-native-cpu")))
    inputs = chart["inputs"]
    assert inputs["chart"] == "oci://ghcr.io/llm-d/charts/llm-d-router-standalone"
    assert inputs["version"] == "v1.0.0"
    assert inputs["name"] == "tiered-prefix-cache"
    router = inputs["values"]["router"]
    plugins = {p.get("name", p["type"]): p for p in router["epp"]["pluginsConfig"]["plugins"]}
    assert plugins["cpu-prefix-cache-producer"]["parameters"] == {"autoTune": False, "lruCapacityPerServer": 19200}
    assert "parameters" not in plugins["gpu-prefix-cache-producer"]


@pytest.mark.parametrize("name", PRESETS)
def test_router_selects_exactly_the_serving_pods(name: str) -> None:
    result = rendered(name)
    chart = router_chart(resources(result))
    selector = chart["inputs"]["values"]["router"]["modelServers"]["matchLabels"]
    objects = manifests(result)
    lws = by_kind(objects, "LeaderWorkerSet")
    if lws:  # only leaders serve; the LWS controller adds the set's name to every pod it creates
        templates = lws[0]["spec"]["leaderWorkerTemplate"]
        controller = {"leaderworkerset.sigs.k8s.io/name": lws[0]["metadata"]["name"]}
        assert selector.items() <= (templates["leaderTemplate"]["metadata"]["labels"] | controller).items()
        assert not selector.items() <= (templates["workerTemplate"]["metadata"]["labels"] | controller).items()
    else:
        servers = [d for d in by_kind(objects, "Deployment") if "llm-d.ai/role" in d["metadata"].get("labels", {})]
        assert servers
        for deployment in servers:  # P/D: both the prefill and the decode pods
            assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    pod, container = _workload(objects)
    # Where a routing sidecar fronts vLLM (P/D decode), the router targets the sidecar's port.
    front = next((c for c in pod.get("initContainers", []) if c["name"] == "routing-proxy"), container)
    assert chart["inputs"]["values"]["router"]["modelServers"]["targetPorts"] == [
        {"number": front["ports"][0]["containerPort"]}
    ]


def test_dependencies_crds_before_router_secret_before_pods() -> None:
    rows = {r["name"]: r for r in resources(rendered("gpu-vllm-native-cpu"))}
    chart = rows["llmd-router-chart"]
    assert "kubernetes:yaml/v2:ConfigFile::llmd-gaie-crds-manifests" in chart["dependsOn"]
    assert "kubernetes:core/v1:Namespace::llmd-namespace" in chart["dependsOn"]
    deployment = rows["llmd-model-server-gpu-vllm-decode"]
    assert {
        "kubernetes:core/v1:Secret::llmd-hf-token",
        "kubernetes:core/v1:Namespace::llmd-namespace",
        "kubernetes:core/v1:ServiceAccount::llmd-model-server-gpu-vllm-sa",
    } <= set(deployment["dependsOn"])
    crds = rows["llmd-gaie-crds-manifests"]
    assert crds["inputs"]["file"].endswith("/releases/download/v1.6.2/v1-manifests.yaml")


def test_every_kubernetes_resource_uses_the_stack_provider() -> None:
    rows = resources(rendered("gpu-vllm-native-cpu"))
    kube = [r for r in rows if r["type"].startswith("kubernetes:")]
    assert kube
    assert {r["provider"] for r in kube} == {"k8s"}
    assert all(r["parent"] is not None for r in kube)


def test_monitoring_renders_the_router_values_and_a_pod_monitor() -> None:
    result = rendered("gpu-vllm-native-cpu", MONITORING)
    monitor = by_kind(manifests(result), "PodMonitor")[0]
    assert monitor["spec"]["selector"]["matchLabels"] == {"llm-d.ai/guide": "tiered-prefix-cache"}
    chart = router_chart(resources(result))
    assert chart["inputs"]["values"]["router"]["monitoring"]["prometheus"]["enabled"] is True
    gke = rendered("gpu-vllm-native-cpu", GKE_MONITORING)
    assert by_kind(manifests(gke), "PodMonitoring")
    assert not by_kind(manifests(rendered("gpu-vllm-native-cpu")), "PodMonitor")


def test_summary_shows_the_sizing_with_its_formulas() -> None:
    text = rendered("gpu-vllm-native-cpu").summary
    assert "| router `lruCapacityPerServer` | 19200 | floor(322122547200 / 16777216) |" in text
    assert "not a cloud preview" in text


def test_manifests_are_sorted_by_kind_namespace_name() -> None:
    objects = [doc for doc in yaml.safe_load_all(rendered("gpu-vllm-native-cpu").manifests) if doc]
    keys = [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects]
    assert keys == sorted(keys)


def test_a_render_does_not_read_the_callers_kubernetes_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider defaults its kubeconfig and flags from the environment; a render stays the same."""
    config = loading.load_preset("dev")
    clean = render(plan(config), "dev")
    monkeypatch.setenv("KUBECONFIG", "/home/alice/.kube/config")
    monkeypatch.setenv("PULUMI_K8S_ENABLE_PATCH_FORCE", "true")
    assert render(plan(config), "dev") == clean
    assert "/home/alice" not in clean.resources
    assert os.environ["KUBECONFIG"] == "/home/alice/.kube/config"  # restored for the caller
