"""The mocked program: every preset renders, validates, and keeps its secrets and dependencies."""

import json

import pytest
import yaml

from stacks import loading
from stacks.offline import OFFLINE_HF_TOKEN
from stacks.plan import plan
from stacks.render import render
from tests.helpers import by_kind, manifests, rendered, resources, validate

PRESETS = loading.preset_names()
MONITORING = ("monitoring.enabled=true",)
GKE_MONITORING = ("monitoring.enabled=true", "monitoring.provider=gke-managed-prometheus")


@pytest.mark.parametrize("name", [*PRESETS, "dev"])
@pytest.mark.parametrize("overrides", [(), MONITORING, GKE_MONITORING])
def test_every_object_validates_against_its_schema(name: str, overrides: tuple[str, ...]) -> None:
    objects = manifests(rendered(name, overrides))
    assert objects
    for obj in objects:
        validate(obj)


@pytest.mark.parametrize("name", PRESETS)
def test_the_pool_the_chart_creates_validates_against_the_crd(name: str) -> None:
    pool = plan(loading.load_preset(name)).inference_pool
    validate(pool)


def test_schema_validation_catches_a_broken_object() -> None:
    deployment = by_kind(manifests(rendered("gpu-vllm-native-cpu")), "Deployment")[0]
    deployment["spec"]["replica"] = 2
    with pytest.raises(Exception, match="replica"):
        validate(deployment)
    pool = plan(loading.load_preset("gpu-vllm-native-cpu")).inference_pool
    pool["spec"]["endpointPickerRef"]["failureMode"] = "FailClosed"
    with pytest.raises(Exception, match="FailClosed"):
        validate(pool)


def test_renders_are_byte_identical() -> None:
    config = loading.load_preset("gpu-vllm-native-cpu")
    first, second = render(plan(config), "x"), render(plan(config), "x")
    assert first == second


@pytest.mark.parametrize("name", [*PRESETS, "dev"])
def test_hf_token_never_appears_and_is_recorded_secret(name: str) -> None:
    result = rendered(name)
    for text in (result.manifests, result.resources, result.summary):
        assert OFFLINE_HF_TOKEN not in text
    secret = next(r for r in resources(result) if r["type"] == "kubernetes:core/v1:Secret")
    assert secret["secretPaths"] == ["stringData"]
    assert secret["inputs"]["stringData"] == {"HF_TOKEN": "[secret]"}
    # Nothing else carries a secret: the pods read the token from the Secret, by reference.
    assert [r["name"] for r in resources(result) if r["secretPaths"]] == [secret["name"]]


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


def _gib(quantity: str) -> int:
    assert quantity.endswith("Gi"), quantity
    return int(quantity[:-2])


@pytest.mark.parametrize("name", PRESETS)
def test_pod_memory_covers_the_tier_in_dev_shm(name: str) -> None:
    result = rendered(name)
    deployment = by_kind(manifests(result), "Deployment")[0]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    tier = json.loads(args[args.index("--kv-transfer-config") + 1])["kv_connector_extra_config"]["cpu_bytes_to_use"]
    shm = next(v for v in pod["volumes"] if v["name"] == "shm")["emptyDir"]
    assert shm["medium"] == "Memory"
    assert _gib(shm["sizeLimit"]) * 2**30 >= tier
    memory = container["resources"]
    assert memory["requests"]["memory"] == memory["limits"]["memory"]
    assert _gib(memory["limits"]["memory"]) > _gib(shm["sizeLimit"])
    assert {"name": "shm", "mountPath": "/dev/shm"} in container["volumeMounts"]


def test_router_chart_values_carry_the_derived_capacity() -> None:
    chart = next(r for r in resources(rendered("gpu-vllm-native-cpu")) if r["type"] == "kubernetes:helm.sh/v4:Chart")
    inputs = chart["inputs"]
    assert inputs["chart"] == "oci://ghcr.io/llm-d/charts/llm-d-router-standalone"
    assert inputs["version"] == "v1.0.0"
    assert inputs["name"] == "tiered-prefix-cache"
    router = inputs["values"]["router"]
    plugins = {p.get("name", p["type"]): p for p in router["epp"]["pluginsConfig"]["plugins"]}
    assert plugins["cpu-prefix-cache-producer"]["parameters"] == {"autoTune": False, "lruCapacityPerServer": 19200}
    assert "parameters" not in plugins["gpu-prefix-cache-producer"]


@pytest.mark.parametrize("name", PRESETS)
def test_router_selects_exactly_the_model_server_pods(name: str) -> None:
    result = rendered(name)
    chart = next(r for r in resources(result) if r["type"] == "kubernetes:helm.sh/v4:Chart")
    selector = chart["inputs"]["values"]["router"]["modelServers"]["matchLabels"]
    pod_labels = by_kind(manifests(result), "Deployment")[0]["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()
    ports = by_kind(manifests(result), "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert chart["inputs"]["values"]["router"]["modelServers"]["targetPorts"] == [
        {"number": p["containerPort"]} for p in ports
    ]


def test_dependencies_crds_before_router_secret_before_pods() -> None:
    rows = {r["name"]: r for r in resources(rendered("gpu-vllm-native-cpu"))}
    chart = rows["llmd-router-chart"]
    assert "llmd-gaie-crds-manifests" in chart["dependsOn"]
    assert "llmd-namespace" in chart["dependsOn"]
    deployment = rows["llmd-gpu-vllm-decode-deployment"]
    assert {"llmd-hf-token", "llmd-namespace", "llmd-gpu-vllm-decode-sa"} <= set(deployment["dependsOn"])
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
    chart = next(r for r in resources(result) if r["type"] == "kubernetes:helm.sh/v4:Chart")
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
