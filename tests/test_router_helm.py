"""Every preset's router values through a real Helm on the real chart (v0.x layout, router.version=v0.10.0).

What `pulumi up` hands the provider's Helm is what these tests render: the chart must accept it, read
every key of it, wire the EPP to its config, route to exactly the serving pods, expose the endpoint the
stack exports, point its monitors at its own objects, and produce objects the API server accepts.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pulumi
import pytest
import yaml

from components.catalog.labels import router_name
from components.k8s_objects import force_field_ownership
from components.router import harden_chart_pods
from components.specs import verification
from components.specs.router_values import router_endpoint
from policies.checks.ruleset import RULES
from policies.resources import Resource
from scripts import install_helm
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from tests.helm import CHART_VERSION, V0, ChartInputs, chart_inputs, helm, template
from tests.helpers import SEEDS, by_kind, manifests, pods, rendered, resources, validate, with_gmp_project

PRESETS = loading.preset_names()
PROMETHEUS = ("monitoring.enabled=true", "monitoring.provider=prometheus-operator")
# An autoscaled preset on an existing cluster names the project whose Managed Prometheus KEDA reads.
GMP = ("monitoring.enabled=true", "monitoring.provider=gke-managed-prometheus")
MONITORING = {"off": (), "prometheus-operator": PROMETHEUS, "gke-managed-prometheus": GMP}

Obj = dict[str, Any]


def _epp(objects: list[Obj], release: str) -> tuple[Obj, Obj]:
    """The chart's EPP Deployment and its `epp` container."""
    [deployment] = [d for d in by_kind(objects, "Deployment") if d["metadata"]["name"] == router_name(release)]
    [container] = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "epp"]
    return deployment, container


def _arg(container: Obj, flag: str) -> str | None:
    args: list[str] = container["args"]
    return args[args.index(flag) + 1] if flag in args else None


@pytest.mark.parametrize("monitoring", MONITORING)
@pytest.mark.parametrize("name", PRESETS)
def test_the_chart_renders_the_values_into_objects_the_api_server_accepts(name: str, monitoring: str) -> None:
    objects = template(chart_inputs(name, with_gmp_project(name, MONITORING[monitoring]))).objects
    assert by_kind(objects, "Deployment")
    for obj in objects:
        validate(obj)


@pytest.mark.parametrize("name", PRESETS)
def test_the_chart_at_main_renders_the_values_too(name: str) -> None:
    """`v0` (llm-d-router main, 2026-08-22): the next release's chart takes the same values."""
    for obj in template(chart_inputs(name), chart="v0").objects:
        validate(obj)


def test_without_helm_the_chart_tests_fail_rather_than_skip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(install_helm, "HELM", tmp_path / "helm")
    with pytest.raises(pytest.fail.Exception, match=r"`\./run test` installs it"):
        helm()


# ---- every key the program sets is read by the chart ----


def _leaves(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Paths to every scalar and list the values set (lists are set whole, as Helm replaces them)."""
    if isinstance(values, dict) and values:
        for key, value in values.items():
            yield from _leaves(value, (*path, key))
    else:
        yield path


def _mutated(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return f"{value}-changed"
    if isinstance(value, list):
        return value[:-1] if value else [{"name": "CHANGED", "value": "1"}]
    raise AssertionError(f"no mutation for {value!r}")


def _with(values: Obj, path: tuple[str, ...], value: Any) -> Obj:
    out = copy.deepcopy(values)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


Keys = tuple[str, ...]


def _first_setter() -> dict[Keys, tuple[str, str]]:
    """Each values path any preset sets (in any monitoring mode), with the first preset that sets it."""
    out: dict[Keys, tuple[str, str]] = {}
    for name in PRESETS:
        for monitoring, overrides in MONITORING.items():
            for path in _leaves(chart_inputs(name, with_gmp_project(name, overrides)).values):
                out.setdefault(path, (name, monitoring))
    return out


SETTERS = _first_setter()


@pytest.mark.parametrize("path", sorted(SETTERS), ids=".".join)
def test_every_key_the_stack_sets_is_read_by_the_chart(path: Keys) -> None:
    """Changing the value changes the chart's output (or makes the chart refuse it): no key is ignored."""
    name, monitoring = SETTERS[path]
    inputs = chart_inputs(name, with_gmp_project(name, MONITORING[monitoring]))
    node: Any = inputs.values
    for key in path:
        node = node[key]
    changed = ChartInputs(inputs.release, inputs.namespace, _with(inputs.values, path, _mutated(node)))
    before, after = template(inputs), template(changed)
    assert before.returncode == 0, before.stderr
    assert after.returncode != 0 or after.stdout != before.stdout, f"{path} (set by {name}) has no effect on chart"


# ---- the EPP, its config and what it routes to ----


@pytest.mark.parametrize("name", PRESETS)
def test_the_epp_config_file_is_a_key_of_the_configmap_mounted_there(name: str) -> None:
    inputs = chart_inputs(name)
    objects = template(inputs).objects
    deployment, epp = _epp(objects, inputs.release)
    config_file = _arg(epp, "--config-file")
    assert config_file is not None
    directory, _, key = config_file.rpartition("/")
    [mount] = [m for m in epp["volumeMounts"] if m["mountPath"] == directory]
    [volume] = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    [config_map] = [c for c in by_kind(objects, "ConfigMap") if c["metadata"]["name"] == volume["configMap"]["name"]]
    assert key in config_map["data"]
    config = yaml.safe_load(config_map["data"][key])
    assert config["kind"] == "EndpointPickerConfig"
    assert config["apiVersion"] == "llm-d.ai/v1alpha1"  # the only config version a v0.x EPP registers


def _serves(pod: Obj, port: int) -> bool:
    """A container (or native sidecar) of the pod listens on the port the router sends requests to."""
    sidecars = [c for c in pod.get("initContainers", []) if c.get("restartPolicy") == "Always"]
    return any(p["containerPort"] == port for c in [*pod["containers"], *sidecars] for p in c.get("ports", []))


def _selector_and_ports(objects: list[Obj], release: str) -> tuple[dict[str, str], list[int]]:
    """What the EPP routes to: the InferencePool's selector, or (pool off) its --endpoint-selector flag."""
    pools = by_kind(objects, "InferencePool")
    if pools:
        [pool] = pools
        return pool["spec"]["selector"]["matchLabels"], [p["number"] for p in pool["spec"]["targetPorts"]]
    _, epp = _epp(objects, release)
    selector, ports = _arg(epp, "--endpoint-selector"), _arg(epp, "--endpoint-target-ports")
    assert selector and ports
    return dict(kv.split("=", 1) for kv in selector.split(",")), [int(p) for p in ports.split(",")]


@pytest.mark.parametrize("name", PRESETS)
def test_the_router_selects_exactly_the_pods_that_serve(name: str) -> None:
    """Model servers (under P/D both roles; on multi-host the leaders), never a Job, DaemonSet or helper."""
    inputs = chart_inputs(name)
    chart = template(inputs).objects
    program = manifests(rendered(name, ("verification.enabled=true",)))  # the pods do not depend on the chart
    selector, [port] = _selector_and_ports(chart, inputs.release)
    candidates = list(pods(program)) + list(pods(chart))
    assert any(where.startswith("Job/") for where, _, _ in candidates)  # the verification Job is among them
    selected = {where for where, labels, _ in candidates if selector.items() <= labels.items()}
    serving = {where for where, _, pod in pods(program) if _serves(pod, port)}
    assert serving
    assert selected == serving


def test_the_tokenizer_sidecar_reads_the_stacks_hf_token() -> None:
    """A gated model can only be tokenized with the token: the sidecar gets it from the stack's Secret."""
    name = "gpu-vllm-lmcache-server-routing"
    inputs = chart_inputs(name)
    deployment, _ = _epp(template(inputs).objects, inputs.release)
    [sidecar] = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm-render"]
    [ref] = [e["valueFrom"]["secretKeyRef"] for e in sidecar.get("env", []) if e["name"] == "HF_TOKEN"]
    [secret] = by_kind(manifests(rendered(name)), "Secret")
    assert ref["name"] == secret["metadata"]["name"]
    assert ref["key"] in secret.get("stringData", secret.get("data", {}))
    assert ref["optional"] is True


# ---- the endpoint and the monitors ----


@pytest.mark.parametrize("name", PRESETS)
def test_the_router_service_is_the_endpoint_the_stack_exports(name: str) -> None:
    inputs = chart_inputs(name)
    objects = template(inputs).objects
    url = urlsplit(router_endpoint(inputs.release, inputs.namespace))
    service_name, namespace = (url.hostname or "").split(".")[:2]
    [service] = [s for s in by_kind(objects, "Service") if s["metadata"]["name"] == service_name]
    assert service["metadata"]["namespace"] == namespace == inputs.namespace
    [port] = [p for p in service["spec"]["ports"] if p["port"] == url.port]
    # ... and that port reaches the Envoy listener of the pods the Service selects.
    deployment, _ = _epp(objects, inputs.release)
    pod = deployment["spec"]["template"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    listeners = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    assert port["targetPort"] in listeners


@pytest.mark.parametrize("name", PRESETS)
def test_the_charts_monitors_select_its_own_objects(name: str) -> None:
    inputs = chart_inputs(name, PROMETHEUS)
    objects = template(inputs).objects
    [monitor] = by_kind(objects, "ServiceMonitor")
    [service] = [s for s in by_kind(objects, "Service") if s["metadata"]["name"] == router_name(inputs.release)]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert inputs.namespace in monitor["spec"]["namespaceSelector"]["matchNames"]
    names = {p["name"] for p in service["spec"]["ports"]}
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= names

    inputs = chart_inputs(name, with_gmp_project(name, GMP))
    objects = template(inputs).objects
    [monitoring] = by_kind(objects, "PodMonitoring")
    deployment, _ = _epp(objects, inputs.release)
    pod = deployment["spec"]["template"]
    assert monitoring["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    ports = {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    assert {e["port"] for e in monitoring["spec"]["endpoints"]} <= ports
    # The bearer token it scrapes with is the chart's own Secret.
    secrets = {s["metadata"]["name"] for s in by_kind(objects, "Secret")}
    for endpoint in monitoring["spec"]["endpoints"]:
        credentials = endpoint.get("authorization", {}).get("credentials")
        assert credentials is None or credentials["secret"]["name"] in secrets


def test_the_tests_render_the_chart_version_they_pin() -> None:
    assert chart_inputs("dev").values["router"]["epp"]["image"]["tag"] == CHART_VERSION


# ---- the v1.0.0 layout, which no Helm here can render, equals the seed's values ----


def _seed_router_values() -> list[Obj]:
    """The seed's three router values files (LMCache's llm-d integration page), in the page's order:
    prefix reuse (router_values.yaml), P/D (pd_router_values.yaml), the tokenizer added for routing."""
    text = (SEEDS / "004_35e4f5a268f85566.txt").read_text()
    blocks = [yaml.safe_load(m.group(0))["router"] for m in re.finditer(r"^router:\n(?:(?: .*)?\n)+", text, re.M)]
    assert len(blocks) == 3
    return blocks


def _merged(base: Obj, top: Obj) -> Obj:
    """Helm's merge of two values files: maps merge, anything else is replaced."""
    out = dict(base)
    for key, value in top.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _unequal(seed: Any, ours: Any, path: str = "") -> Iterator[str]:
    """Where the seed sets a value the stack does not set the same way (the stack may set more keys)."""
    if isinstance(seed, dict) and isinstance(ours, dict):
        for key, value in seed.items():
            yield from _unequal(value, ours.get(key), f"{path}.{key}")
    elif seed != ours:
        yield f"{path}: seed {seed!r}, stack {ours!r}"


SEED_LAYERS = {
    "gpu-vllm-lmcache-server": (0,),
    "gpu-vllm-lmcache-server-pd": (1,),
    "gpu-vllm-lmcache-server-routing": (0, 2),
}


@pytest.mark.parametrize("name", SEED_LAYERS)
def test_the_v1_layout_sets_every_value_the_seed_sets(name: str) -> None:
    """Chart v1.0.0's layout (pluginsConfig map, llm-d.ai/v1, tokenizer.flavor), against the seed's own text."""
    blocks = _seed_router_values()
    seed: Obj = {}
    for index in SEED_LAYERS[name]:
        seed = _merged(seed, blocks[index])
    stack = plan(loading.load_named(name))
    assert stack.config.router.version == "v1.0.0"
    router = copy.deepcopy(stack.router_values["router"])
    if "tokenizer" in seed:
        # Departure (docs/upstream-differences.md): the seed leaves `env: []` ("put HF_TOKEN here for a
        # gated model"); the stack passes HF_TOKEN from its Secret, optional.
        assert seed["tokenizer"]["env"] == []
        [hf_token] = router["tokenizer"]["env"]
        assert hf_token["name"] == "HF_TOKEN" and hf_token["valueFrom"]["secretKeyRef"]["optional"] is True
        router["tokenizer"]["env"] = []
    assert list(_unequal(seed, router)) == []


def _transformed(objects: list[Obj]) -> list[Obj]:
    """The chart's objects as the engine registers them: through the Router's transform, as `pulumi up` runs it."""
    out = []
    for obj in objects:
        group_version = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
        args = pulumi.ResourceTransformArgs(
            True, f"kubernetes:{group_version}:{obj['kind']}", obj["metadata"]["name"], obj, pulumi.ResourceOptions()
        )
        result = harden_chart_pods(args)
        out.append(dict(result.props) if result is not None else obj)
    return out


def _chart_resources(objects: list[Obj]) -> list[Resource]:
    return [Resource(f"kubernetes:{o['apiVersion']}:{o['kind']}", o["metadata"]["name"], o) for o in objects]


RULE = {r.name: r for r in RULES}
HARDENING_RULES = ("hardened-containers", "root-containers", "privileged-containers", "token-automount")


@pytest.mark.parametrize("chart", [CHART_VERSION, "v0"])
@pytest.mark.parametrize(
    "name", ["gpu-vllm-native-cpu", "gpu-vllm-lmcache-server-routing", "gpu-vllm-lmcache-server-pd"]
)
def test_the_charts_pods_are_hardened_by_the_routers_transform(name: str, chart: str) -> None:
    """EPP, Envoy and the tokenizer sidecar, rendered by the real chart, as the least-privilege rules
    judge the program's own pods; the API server still accepts them."""
    objects = template(chart_inputs(name), chart).objects
    before = [
        v.message for rule in HARDENING_RULES for v in RULE[rule].check(_chart_resources(objects), RULE[rule].config)
    ]
    assert any("epp" in m for m in before)  # the chart alone leaves them open: the transform is what hardens
    hardened = _transformed(objects)
    for obj in hardened:
        validate(obj)
    resources = _chart_resources(hardened)
    assert [v.message for rule in HARDENING_RULES for v in RULE[rule].check(resources, RULE[rule].config)] == []
    (epp,) = [o for o in hardened if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-epp")]
    assert epp["spec"]["template"]["spec"]["automountServiceAccountToken"] is True  # it watches the API


def test_the_router_chart_is_declared_with_the_hardening_transform() -> None:
    (chart,) = [r for r in resources(rendered("gpu-vllm-native-cpu")) if r["type"] == "kubernetes:helm.sh/v4:Chart"]
    assert chart["options"]["transforms"] == [
        harden_chart_pods.__name__,
        "roll_epp_on_values_change",
        force_field_ownership.__name__,
    ]


def test_a_values_change_rolls_the_epp_through_its_pod_templates_digest() -> None:
    """Seen under the real engine: a tier change replaced the EPP's ConfigMap and left the EPP running on the
    old capacity (it reads its config at start). The digest of the values on the EPP's pod template rolls it."""
    from components.router import roll_on_values_change
    from components.specs.router_values import VALUES_CHECKSUM_ANNOTATION, values_checksum

    values = plan(loading.load_preset("dev")).router_values
    bigger = plan(loading.load_preset("dev", ["cache.tier.cpu=6GiB"])).router_values
    assert values_checksum(values) != values_checksum(bigger)
    assert values_checksum(values) == values_checksum(copy.deepcopy(values))
    deployment = {"kind": "Deployment", "metadata": {"name": "r-epp"}, "spec": {"template": {"metadata": {}}}}
    transform = roll_on_values_change(values_checksum(values))
    args = pulumi.ResourceTransformArgs(
        True, "kubernetes:apps/v1:Deployment", "r-epp", deployment, pulumi.ResourceOptions()
    )
    result = transform(args)
    assert result is not None
    props: dict[str, Any] = dict(result.props)
    assert props["spec"]["template"]["metadata"]["annotations"] == {VALUES_CHECKSUM_ANNOTATION: values_checksum(values)}
    config_map = pulumi.ResourceTransformArgs(
        True, "kubernetes:core/v1:ConfigMap", "r-epp", {}, pulumi.ResourceOptions()
    )
    assert transform(config_map) is None


# ---- names the chart shortens (issue 20) ----

CHART_LIMIT_NAMES = [
    ("a" * 40, "llm-d-tiered-prefix-cache"),
    ("b" * 41, "llm-d-tiered-prefix-cache"),
    ("r" + "-x" * 26, "llm-d-tiered-prefix-cache"),  # 53 characters, cut at a '-'
    ("c" * 53, "n" * 37),  # the longest namespace whose ClusterRole name the chart keeps whole
    ("d" * 37, "n" * 63),
]


@pytest.mark.parametrize(("release", "namespace"), CHART_LIMIT_NAMES)
def test_names_the_chart_shortens_are_the_names_the_stack_uses(release: str, namespace: str) -> None:
    """The endpoint, the pool's picker, the verification Job and the router's NetworkPolicy name the
    objects the chart renders for a release at or past its 40-character cut."""
    stack = plan(loading.load_named("dev", [V0, f"router.release={release}", f"namespace={namespace}", *PROMETHEUS]))
    objects = template(ChartInputs(release, namespace, stack.router_values)).objects
    assert by_kind(objects, "ClusterRole")  # the name the chart cuts at 84 characters, quotes included
    for obj in objects:
        validate(obj)
    services = {s["metadata"]["name"]: s for s in by_kind(objects, "Service")}
    host = urlsplit(router_endpoint(release, namespace)).hostname or ""
    assert host.split(".")[0] in services
    [job] = by_kind(stack.manifests(verification.WORKLOAD), "Job")
    [env] = [
        e for c in job["spec"]["template"]["spec"]["containers"] for e in c.get("env", []) if e["name"] == "ROUTER_URL"
    ]
    assert urlsplit(env["value"]).hostname == host
    assert stack.inference_pool is not None
    assert stack.inference_pool["spec"]["endpointPickerRef"]["name"] in services
    deployment, _ = _epp(objects, release)
    [policy] = stack.router_policies
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize(("release", "namespace"), [("c" * 53, "n" * 38), ("d" * 38, "n" * 63)])
def test_names_the_chart_cannot_render_are_one_line(release: str, namespace: str) -> None:
    """Past the cut of the chart's ClusterRole name (rendered with monitoring), the chart renders no YAML;
    the config says so first, whether monitoring is on yet or not."""
    for monitoring in PROMETHEUS, GMP:
        stack = plan(loading.load_named("dev", [V0, "router.release=a", f"namespace={namespace}", *monitoring]))
        failed = template(ChartInputs(release, namespace, stack.router_values))
        assert failed.returncode != 0
        assert "YAML parse error" in failed.stderr
    with pytest.raises(ConfigError, match=r"^invalid stack config: router.release = '[cd]+': the router chart's"):
        loading.load_named("dev", [f"router.release={release}", f"namespace={namespace}"])
