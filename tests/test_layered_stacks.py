"""The layers, offline: the example cluster stack (gke-cluster) and its serving stacks (qwen3-32b, qwen3-8b)
render; a misconfigured layer is one line naming the field; a serving stack's change leaves the cluster
stack's render alone, and a cluster stack's pool change reaches its serving stacks' plans."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.__main__ import main
from stacks.config import loading
from stacks.config.cluster_facts import ClusterOutputs
from stacks.config.cluster_outputs import GATEWAY_ROUTES_LABEL, OUTPUTS_FILE, describe
from stacks.config.errors import ConfigError
from stacks.planning.plan import StackPlan, plan
from stacks.review.diff import _render_all
from stacks.review.render import render

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = "gke-cluster"
SERVING = ("qwen3-32b", "qwen3-8b")
CRDS = "llmd:inference_pool:InferencePoolCrds"


def _render(name: str, out: Path) -> Path:
    assert main(["render", name, "--out", str(out)]) == 0
    return out


def _rows(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((out / "resources.json").read_text())
    return rows


def _objects(out: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((out / "manifests.yaml").read_text()) if d]


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("layers")
    return {name: _render(name, root / name) for name in (CLUSTER, *SERVING)}


def test_the_cluster_stack_writes_what_it_exports(renders: dict[str, Path]) -> None:
    written = json.loads((renders[CLUSTER] / OUTPUTS_FILE).read_text())
    assert written == describe(loading.load_named(CLUSTER), CLUSTER).exported()
    assert ClusterOutputs.model_validate(written).node_pools["h100"].node_count == 2


def test_the_cluster_stack_applies_the_inference_pool_crds_and_the_serving_stacks_do_not(
    renders: dict[str, Path],
) -> None:
    [crds] = [r for r in _rows(renders[CLUSTER]) if r["type"] == CRDS]
    assert [r for r in _rows(renders[CLUSTER]) if r["parent"] == crds["name"]], "the CRDs' ConfigFile"
    for name in SERVING:
        rows = _rows(renders[name])
        assert not [r for r in rows if r["type"] == CRDS]
        files = [r for r in rows if r["type"].startswith("kubernetes:yaml/")]
        assert not [r for r in files if "inference-extension" in json.dumps(r["inputs"])], files


@pytest.mark.parametrize("name", SERVING)
def test_a_serving_stack_routes_from_the_cluster_gateway_to_its_inference_pool(
    name: str, renders: dict[str, Path]
) -> None:
    config = loading.load_named(name)
    gateway = describe(loading.load_named(CLUSTER), CLUSTER).gateway
    assert gateway is not None
    objects = _objects(renders[name])
    [route] = [o for o in objects if o["kind"] == "HTTPRoute"]
    assert route["metadata"]["namespace"] == config.namespace
    assert route["spec"]["parentRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway.name, "namespace": gateway.namespace}
    ]
    [rule] = route["spec"]["rules"]
    assert rule["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": config.router.release}
    ]
    [namespace] = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == config.namespace]
    assert namespace["metadata"]["labels"][GATEWAY_ROUTES_LABEL] == gateway.name


@pytest.mark.parametrize("name", SERVING)
def test_a_serving_stack_reaches_its_cluster_through_a_secret_kubeconfig(name: str, renders: dict[str, Path]) -> None:
    [provider] = [r for r in _rows(renders[name]) if r["type"] == "pulumi:providers:kubernetes"]
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert provider["secretPaths"] == ["kubeconfig"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the repo's stack files, where a test may edit them."""
    for path in ROOT.glob("Pulumi*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    return tmp_path


def _edit(project: Path, name: str, old: str, new: str) -> None:
    path = project / f"Pulumi.{name}.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


ERRORS = {
    "a serving stack's pools": ("qwen3-32b", ["node_pools.h100.node_count=3"], "node_pools = "),
    "no cluster.stack": ("qwen3-32b", ["cluster.stack=null"], "cluster.stack = None: required"),
    "a malformed cluster.stack": ("qwen3-32b", ["cluster.stack=gke-cluster"], "cluster.stack = 'gke-cluster': must"),
    "a cluster stack serving a model": (CLUSTER, ["cache.model=Qwen/Qwen3-8B"], "cache = '(set)': a cluster stack"),
    "a serving stack's gateway": ("qwen3-32b", ["gateway.enabled=true"], "gateway = '(set)': belongs to the cluster"),
    "a gateway of no class": (
        CLUSTER,
        ["cluster.provider=existing", "cluster.gke=null"],
        "gateway.class_name = None: required off GKE",
    ),
    "a cluster stack's autoscaling trigger": (
        CLUSTER,
        ["autoscaling.enabled=true", "autoscaling.trigger=saturation"],
        "autoscaling.trigger = '(set)': a serving stack's own",
    ),
    "a serving stack's CRD file": (
        "qwen3-8b",
        ["router.gaie_crds_file=crds.yaml"],
        "router.gaie_crds_file = 'crds.yaml': the cluster stack organization/llmd/gke-cluster applies the CRDs",
    ),
    "autoscaling without KEDA": ("qwen3-8b", ["autoscaling.enabled=true"], "autoscaling.enabled = True: the cluster"),
    "the Lustre claim's namespace": (
        "qwen3-32b",
        ["namespace=other"],
        "namespace = 'other': the cluster stack organization/llmd/gke-cluster's Lustre volume is reserved for a"
        " claim in qwen3-32b (its storage.claim_namespace)",
    ),
    "a missing outputs_file": (
        "qwen3-32b",
        ["cluster.outputs_file=recorded/missing.json"],
        "cluster.outputs_file = 'recorded/missing.json': cannot read the recorded outputs: No such file",
    ),
    "an outputs_file of no cluster": (
        "qwen3-32b",
        ["cluster.outputs_file=other.json"],
        "cluster.outputs_file = 'other.json': its llmdCluster.provider = (missing): field required",
    ),
    # A serving stack naming itself (or any serving stack) as its cluster: one line, not a recursion.
    "a serving stack as its own cluster": (
        "qwen3-32b",
        ["cluster.stack=organization/llmd/qwen3-32b"],
        "cluster.stack = 'organization/llmd/qwen3-32b': Pulumi.qwen3-32b.yaml is not a cluster stack",
    ),
    "a cluster stack of another project": (
        "qwen3-32b",
        ["cluster.stack=organization/other/gke-cluster"],
        "cluster.stack = 'organization/other/gke-cluster': no Pulumi.gke-cluster.yaml of project llmd here",
    ),
    "an outputs_file outside the project": (
        "qwen3-32b",
        ["cluster.outputs_file=../outside.json"],
        "cluster.outputs_file = '../outside.json': must be a relative path to a .json file inside the project",
    ),
    "an outputs_file of no JSON": (
        "qwen3-32b",
        ["cluster.outputs_file=broken.json"],
        "cluster.outputs_file = 'broken.json': cannot read the recorded outputs: not JSON",
    ),
}


@pytest.mark.parametrize("case", ERRORS)
def test_a_misconfigured_layer_is_one_line_naming_the_field(case: str, project: Path) -> None:
    name, overrides, message = ERRORS[case]
    (project / "other.json").write_text(json.dumps({"stack": "x", "node_pools": {}}))
    (project / "broken.json").write_text("{not json")
    with pytest.raises(ConfigError) as caught:
        loading.load_named(name, overrides)
    text = str(caught.value)
    assert text.startswith(f"invalid stack config: {message}")
    assert "\n" not in text


def test_a_recorded_outputs_file_plans_as_the_repo_cluster_stack_does(project: Path) -> None:
    _render(CLUSTER, project / "out")
    recorded = plan(loading.load_named("qwen3-8b", [f"cluster.outputs_file=out/{OUTPUTS_FILE}"]))
    assert recorded.fit == plan(loading.load_named("qwen3-8b")).fit


def test_a_model_change_in_a_serving_stack_changes_nothing_the_cluster_stack_applies(project: Path) -> None:
    before = _render(CLUSTER, project / "before")
    _edit(project, "qwen3-8b", "model: Qwen/Qwen3-8B", "model: Qwen/Qwen3-0.6B")
    after = _render(CLUSTER, project / "after")
    for file in ("manifests.yaml", "resources.json", OUTPUTS_FILE):
        assert (before / file).read_text() == (after / file).read_text(), file
    # only the summary's table of routes names the model the serving stack now serves
    old, new = ((d / "summary.md").read_text().splitlines() for d in (before, after))
    assert [(a, b) for a, b in zip(old, new, strict=True) if a != b] == [
        ("| Qwen/Qwen3-8B | qwen3-8b | qwen3-8b |", "| Qwen/Qwen3-0.6B | qwen3-8b | qwen3-8b |")
    ]


def test_a_pool_change_in_the_cluster_stack_reaches_the_serving_stacks_plans(project: Path) -> None:
    """A created pool's host memory comes from its machine type (node_pools.*.host_memory describes an
    existing cluster's pool): its node count is what a cluster stack changes."""
    before = {name: plan(loading.load_named(name)) for name in SERVING}
    assert plan(loading.load_named("qwen3-32b", ["cache.replicas=5"])).fit is not None  # 5 pods on 2 nodes
    _edit(project, CLUSTER, "      node_count: 2\n", "      node_count: 1\n")
    for name in SERVING:
        after = plan(loading.load_named(name))
        assert after.config.node_pools["h100"].node_count == 1
        assert before[name].config.node_pools["h100"].node_count == 2
        assert after.rollout != before[name].rollout  # the room a rollout surges into
        assert render(after, name).summary != render(before[name], name).summary
    with pytest.raises(ConfigError, match=r"^invalid stack config: cache.replicas = 5: 5 pods need 2 nodes"):
        plan(loading.load_named("qwen3-32b", ["cache.replicas=5"]))


def test_diff_renders_a_cluster_stack_as_a_cluster(tmp_path: Path) -> None:
    """`diff` renders each stack in one process; a cluster stack is planned as `render` plans it (before the
    fix it was planned as a stack serving the default model: a model server and a router, no Gateway)."""
    [resources] = _render_all(ROOT, [CLUSTER], tmp_path).values()
    assert resources is not None
    types = {r["type"] for r in json.loads(resources)}
    assert "kubernetes:gateway.networking.k8s.io/v1:Gateway" in types and CRDS in types
    assert "llmd:model_server:ModelServer" not in types


def test_the_project_a_repo_cluster_stack_belongs_to_is_pulumi_yamls() -> None:
    text = (Path(__file__).resolve().parents[1] / "Pulumi.yaml").read_text()
    assert text.splitlines()[0] == f"name: {loading.PROJECT_NAME}"


def test_a_stack_file_naming_itself_as_its_cluster_is_one_line_not_a_recursion(project: Path) -> None:
    _edit(project, "qwen3-8b", "stack: organization/llmd/gke-cluster", "stack: organization/llmd/qwen3-8b")
    with pytest.raises(ConfigError) as caught:
        loading.load_named("qwen3-8b")
    assert str(caught.value) == (
        "invalid stack config: cluster.stack = 'organization/llmd/qwen3-8b': Pulumi.qwen3-8b.yaml is not a cluster"
        " stack (it sets no llmd:layer cluster)"
    )


def test_a_serving_stack_with_the_mirror_off_pulls_past_its_clusters_caches() -> None:
    mirrored = plan(loading.load_named("qwen3-8b"))
    direct = plan(loading.load_named("qwen3-8b", ["images.mirror=off"]))
    assert mirrored.mirror is not None and mirrored.mirror.project == "my-gcp-project"
    assert all(i.startswith("us-central1-docker.pkg.dev/my-gcp-project/") for i in _images(mirrored))
    assert direct.mirror is None and "docker.io/vllm/vllm-openai:v0.26.0" in _images(direct)


def _images(stack_plan: StackPlan) -> set[str]:
    from components.specs import images

    return set(images.images(stack_plan.model_server_manifests))


_AMBIENT_CLUSTER = """config:
  llmd:layer: cluster
  llmd:node_pools:
    h100: {accelerator: gpu, accelerators_per_node: 8, host_memory: 2TiB, labels: {pool: h100}}
"""


@pytest.mark.parametrize(("kubeconfig", "through_reference"), [(None, False), ("/etc/kube/config", True)])
def test_a_serving_stack_uses_the_kubeconfig_its_cluster_stack_exports_or_else_the_ambient_one(
    kubeconfig: str | None, through_reference: bool, project: Path
) -> None:
    """An existing cluster stack reached through the ambient kubeconfig exports none, and its serving stacks
    use theirs (a required StackReference output it never exported would fail `pulumi up`)."""
    from stacks.review import offline

    text = _AMBIENT_CLUSTER + (
        f"  llmd:cluster: {{provider: existing, kubeconfig: {kubeconfig}}}\n" if kubeconfig else ""
    )
    (project / "Pulumi.ambient.yaml").write_text(text)
    _edit(project, "qwen3-8b", "stack: organization/llmd/gke-cluster", "stack: organization/llmd/ambient")
    config = loading.load_named("qwen3-8b")
    assert config.cluster.outputs is not None and config.cluster.outputs.kubeconfig_exported is through_reference
    [provider] = [
        r for r in offline.record(plan(config), "qwen3-8b").resources if r.type == "pulumi:providers:kubernetes"
    ]
    assert ("kubeconfig" in provider.inputs) is through_reference
    assert any("StackReference" in d for d in provider.depends_on) is through_reference


def _loop(project: Path, names: list[str]) -> None:
    """Cluster stacks each naming the next as its cluster, the last the first."""
    for name, then in zip(names, [*names[1:], names[0]], strict=True):
        (project / f"Pulumi.{name}.yaml").write_text(
            "config:\n  llmd:layer: cluster\n  llmd:cluster:\n    provider: stack\n"
            f"    stack: organization/llmd/{then}\n"
        )


@pytest.mark.parametrize(
    ("names", "start", "closes", "loop"),
    [
        (["a"], "a", "a", "a -> a"),
        (["a", "b"], "a", "b", "a -> b -> a"),
        (["a", "b", "c"], "a", "c", "a -> b -> c -> a"),
        (["a", "b", "c"], "b", "a", "b -> c -> a -> b"),
    ],
)
def test_a_cycle_of_stacks_of_any_length_is_one_line_naming_them_in_order(
    names: list[str], start: str, closes: str, loop: str, project: Path
) -> None:
    _loop(project, names)
    with pytest.raises(ConfigError) as caught:
        loading.load_named(start)
    assert str(caught.value) == (
        f"invalid stack config: Pulumi.{closes}.yaml: cluster.stack = 'organization/llmd/{start}': the stacks'"
        f" cluster.stack form a cycle ({loop}); a cluster stack names no cluster stack"
    )
    assert loading._LOADING == []  # nothing left over for the next stack loaded in this process


def test_a_stack_entering_a_cycle_it_is_not_part_of_names_the_cycle_alone(project: Path) -> None:
    _loop(project, ["b", "c"])
    _edit(project, CLUSTER, "    provider: gke\n", "    provider: stack\n    stack: organization/llmd/b\n")
    with pytest.raises(ConfigError, match=r"cluster.stack = 'organization/llmd/b': .* cycle \(b -> c -> b\);"):
        loading.load_named(CLUSTER)


def test_check_over_the_repo_reports_each_stack_of_a_cycle_and_checks_the_others(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _loop(project, ["a", "b", "c"])
    monkeypatch.setattr(loading, "preset_names", lambda: ["dev"])  # one preset, then the repo's stack files
    assert main(["check"]) == 2
    captured = capsys.readouterr()
    errors = captured.err.splitlines()
    assert [line.split(":")[1].strip() for line in errors] == ["a", "b", "c"]
    assert all("form a cycle" in line for line in errors)
    checked = [line.split(":")[0] for line in captured.out.splitlines() if " rules, " in line]
    assert checked == ["dev", "dev", CLUSTER, "qwen3-32b", "qwen3-8b"]
    # the cluster stack's render lists its serving stacks, the looping files aside
    assert main(["render", CLUSTER, "--out", str(project / "out")]) == 0


def test_what_the_program_fills_in_at_load_is_not_a_config_key() -> None:
    """A serving stack's cluster outputs come from its cluster stack: read at load, never set, not a key."""
    from stacks.config.keys import config_keys

    assert not [k.path for k in config_keys() if k.path.startswith("cluster.outputs.") or k.path == "cluster.outputs"]
    assert loading.load_named("qwen3-8b").cluster.outputs is not None
    with pytest.raises(ConfigError, match=r"cluster\.outputs"):
        loading.load_named("qwen3-8b", ["cluster.outputs.platform=gke"])
