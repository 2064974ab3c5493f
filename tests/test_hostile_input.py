"""Hostile input, second round (issue 20): values that passed every check and broke at `pulumi up`.

One test per class of defect; each example ends in one `invalid stack config:` line, or in a render that
works (the router's names through the real chart: tests/test_router_helm.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.catalog import labels
from components.specs import verification
from stacks.__main__ import main
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from tests.helpers import by_kind, manifests, rendered

ROOT = Path(__file__).resolve().parents[1]


def _one_line(preset: str, overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_preset(preset, overrides))
    text = str(caught.value)
    assert text.startswith("invalid stack config: ")
    assert text.isprintable(), text
    return text


# ---- names the chart shortens ----


@pytest.mark.parametrize("length", [40, 41, 47, 53])
def test_names_the_chart_shortens_reach_the_service_the_chart_creates(length: int) -> None:
    release = "r" * length
    stack = plan(loading.load_preset("dev", [f"router.release={release}"]))
    service = labels.router_name(release)
    assert service == "r" * min(length, labels.ROUTER_NAME_BASE) + "-epp"
    assert stack.inference_pool is not None
    assert stack.inference_pool["spec"]["endpointPickerRef"]["name"] == service
    [job] = by_kind(stack.manifests(verification.WORKLOAD), "Job")
    env = {e["name"]: e.get("value") for c in job["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    assert env["ROUTER_URL"].startswith(f"http://{service}.")
    [policy] = stack.router_policies
    assert policy["spec"]["podSelector"]["matchLabels"] == labels.router_pod_labels(release, True)
    summary = rendered("dev", (f"router.release={release}",)).summary
    assert f"http://{service}." in summary


def test_names_the_chart_cannot_render_are_one_line() -> None:
    text = _one_line("dev", ["router.release=" + "c" * 53, "namespace=" + "n" * 40])
    assert "router.release = '" + "c" * 53 + "': the router chart's ClusterRole name" in text


# ---- units and ranges ----


@pytest.mark.parametrize("value", ["1", "2", "1023", "1KiB"])
def test_units_and_ranges_a_bandwidth_without_its_unit_is_one_line(value: str) -> None:
    text = _one_line("gpu-vllm-native-fs", [f"storage.read_bandwidth={value}"])
    assert "storage.read_bandwidth = " in text
    assert "must be between 1 MiB and" in text


def test_units_and_ranges_a_slow_filesystem_is_one_line_not_centuries_of_waiting() -> None:
    text = _one_line("gpu-vllm-native-fs", ["storage.read_bandwidth=1MiB", "cache.replicas=64"])
    assert "storage.read_bandwidth = '1 MiB': " in text
    assert "beyond the 7 days `pulumi up` waits" in text


def test_units_and_ranges_every_probe_and_timeout_fits_its_field() -> None:
    stack = plan(loading.load_preset("gpu-vllm-native-fs", ["storage.read_bandwidth=50MiB"]))
    for manifest in [m for role in stack.roles for m in role.manifests]:
        timeout = (manifest["metadata"].get("annotations") or {}).get("pulumi.com/timeoutSeconds")
        if timeout is not None:
            assert 0 < int(timeout) <= 2**63 // 10**9
        for container in manifest.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            probe = container.get("startupProbe")
            if probe:
                assert 0 < probe["failureThreshold"] <= 2**31 - 1


def test_units_and_ranges_a_default_tier_split_into_fractions_of_a_gib_is_one_line() -> None:
    """Mooncake segments are whole GiB per rank: the combination's default tier split over TP=64 is not (it
    was a ValueError traceback from the sizing)."""
    text = _one_line("gpu-vllm-mooncake-store-cpu", ["cache.tensor_parallelism=64"])
    assert "cache.tensor_parallelism = 64: splits the default" in text


def test_units_and_ranges_a_byte_count_is_exact() -> None:
    from components.units import ByteSize

    assert ByteSize.parse("123456789123456789").bytes == 123456789123456789
    assert ByteSize.parse("1.5 KiB").bytes == 1536


# ---- cloud fields never checked ----

CLOUD = [
    ("gke-h100-lustre", "cluster.gke.network=Bad_Net", "cluster.gke.network = 'Bad_Net': must be a VPC network"),
    ("gke-h100-lustre", "cluster.gke.subnetwork=a b", "cluster.gke.subnetwork = 'a b': must be a subnetwork"),
    (
        "gke-h100-lustre",
        "cluster.gke.subnetwork=projects/my-project/regions/europe-west4/subnetworks/nodes",
        "must be a subnetwork of region us-central1",
    ),
    ("gke-h100-lustre", "cluster.gke.region=us-central123", "cluster.gke.region = 'us-central123'"),
    (
        "gke-h100-lustre",
        "cluster.gke.system_machine_type=banana",
        "cluster.gke.system_machine_type = 'banana': allowed",
    ),
    ("eks-h100-efs", "cluster.eks.system_instance_type=banana", "cluster.eks.system_instance_type = 'banana': allowed"),
    ("eks-h100-efs", "cluster.eks.system_instance_type=e2-standard-8", "another machine type is added to"),
    ("eks-h100-efs", "cluster.eks.version='1.99'", "cluster.eks.version = '1.99': allowed: 1.30"),
    ("eks-h100-efs", "cluster.eks.availability_zones=[us-east-1a, us-east-1-bos]", "must be zones of region"),
    (
        "gke-h100-lustre",
        "node_pools.h100.reservation=My_Block",
        "node_pools.h100.reservation = 'My_Block': must be a GKE",
    ),
    ("eks-h100-efs", "node_pools.h100.reservation=my-reservation", "must be an EC2 capacity reservation id"),
]


@pytest.mark.parametrize(("preset", "override", "message"), CLOUD)
def test_cloud_fields_never_checked_are_one_line(preset: str, override: str, message: str) -> None:
    assert message in _one_line(preset, [override])


@pytest.mark.parametrize(
    ("preset", "override"),
    [
        ("gke-h100-lustre", "cluster.gke.network=projects/my-project/global/networks/shared-vpc"),
        ("gke-h100-lustre", "cluster.gke.subnetwork=projects/my-project/regions/us-central1/subnetworks/nodes"),
        ("gke-h100-lustre", "node_pools.h100.reservation=projects/my-project/reservations/h100-block"),
        ("eks-h100-efs", "node_pools.h100.reservation=cr-0123456789abcdef0"),
        ("eks-h100-efs", "cluster.eks.version='1.32'"),
        ("eks-h100-efs", "cluster.eks.system_instance_type=m7i.4xlarge"),
    ],
)
def test_cloud_fields_in_the_providers_grammar_are_accepted(preset: str, override: str) -> None:
    plan(loading.load_preset(preset, [override]))


# ---- sizes nothing can honour ----

SIZES = [
    ("dev", ["cache.tier.cpu=32TiB"], "cache.tier.cpu = '32 TiB': 1 pods x"),
    ("gpu-vllm-native-cpu", ["cache.tensor_parallelism=64"], "cache.tensor_parallelism = 64: a pod needs 64 devices"),
    ("dev", ["model_cache.mode=dedicated", "model_cache.size=1GiB"], "model_cache.size = '1 GiB': smaller than the"),
    (
        "gpu-vllm-native-fs",
        ["storage.size=1GiB", "cache.model=Qwen/Qwen3-32B"],
        "storage.size = '1 GiB': smaller than the",
    ),
    (
        "dev",
        ["monitoring.enabled=true", "monitoring.alerts.min_load_bandwidth=1TiB"],
        "monitoring.alerts.min_load_bandwidth = '1 TiB': faster than the 55 GB/s",
    ),
]


@pytest.mark.parametrize(("preset", "overrides", "message"), SIZES)
def test_sizes_nothing_can_honour_are_one_line(preset: str, overrides: list[str], message: str) -> None:
    assert message in _one_line(preset, overrides)


# ---- stack files ----

STACK_FILES = {
    "tab": ("config:\n\tllmd:preset: dev\n", "Pulumi.x.yaml:2:1 = (not shown): malformed YAML"),
    "unclosed": ("config:\n  llmd:cache: {replicas: [1\n", "Pulumi.x.yaml:3:1 = (not shown): malformed YAML"),
    "duplicate": (
        "config:\n  llmd:preset: dev\n  llmd:preset: gpu-vllm-native-cpu\n",
        "Pulumi.x.yaml:3:3 = (not shown): malformed YAML: mapping key 'llmd:preset' already defined at line 2",
    ),
    "aliases": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
            for p, c in zip("abcdefg", "bcdefgh", strict=True)
        )
        + "config:\n  llmd:preset: dev\n  llmd:description: *h\n",
        "Pulumi.x.yaml = (not shown): its aliases expand to more than 100000 values",
    ),
    "not a mapping": ("- config\n", "Pulumi.x.yaml = (not shown): must be a mapping"),
    "not utf-8": ("config: {llmd:description: \udcff}\n", "Pulumi.x.yaml = (not shown): not UTF-8 text"),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    return tmp_path


@pytest.mark.parametrize("case", STACK_FILES)
def test_stack_files_that_are_malformed_are_one_line_with_file_line_and_column(case: str, project: Path) -> None:
    text, message = STACK_FILES[case]
    (project / "Pulumi.x.yaml").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError) as caught:
        loading.load_named("x")
    assert str(caught.value).startswith(f"invalid stack config: {message}")
    assert str(caught.value).isprintable()


def test_stack_files_check_reports_a_bad_file_and_checks_the_others(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "Pulumi.bad.yaml").write_text("config:\n\tllmd:preset: dev\n")
    (project / "Pulumi.good.yaml").write_text("config:\n  llmd:preset: dev\n")
    monkeypatch.setattr(loading, "preset_names", lambda: ["dev"])
    code = main(["check"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err == "error: bad: invalid stack config: Pulumi.bad.yaml:2:1 = (not shown): malformed YAML: " + (
        "while scanning for the next token found character '\\t' that cannot start any token\n"
    )
    assert "dev: " in out and "good: " in out


def test_stack_files_an_alias_bomb_in_a_set_value_is_one_line() -> None:
    bomb = (
        "["
        + ", ".join(
            ["&a [x, x, x, x, x, x, x, x, x, x]"]
            + [f"&{c} [" + ", ".join([f"*{p}"] * 10) + "]" for p, c in zip("abcdefg", "bcdefgh", strict=True)]
        )
        + "]"
    )
    with pytest.raises(ConfigError, match=r"^invalid stack config: --set = .*: its aliases expand to more than"):
        loading.load_preset("dev", [f"description={bomb}"])


# ---- formats that accept more than they say ----

FORMATS = [
    ("dev", "router.epp_resources.cpu=\uff14", "router.epp_resources.cpu = '\uff14': must be a CPU quantity"),
    ("dev", 'router.epp_resources.cpu="4\\n"', "router.epp_resources.cpu = '4\\n': must be a CPU quantity"),
    ("dev", 'cache.image="docker.io/vllm/vllm-openai:v1\\n"', "must be an image reference"),
    ("dev", "cache.image=docker.io/vllm/vllm-openai:v\uff11", "must be an image reference"),
    ("dev", "router.version=v1.0.\uff10", "router.version = 'v1.0.\uff10'"),
    ("dev", "monitoring.alerts.window=1\uff15m", "monitoring.alerts.window = '1\uff15m'"),
    ("dev", "cache.tier.cpu=\uff14GiB", "cache.tier.cpu = '\uff14GiB'"),
    ("dev", 'namespace="llmd\\n"', "namespace = 'llmd\\n': must be a DNS label"),
    ("eks-h100-efs", "cluster.eks.account_id=" + "\uff11" * 12, "cluster.eks.account_id = "),
    ("gke-tpu-v7-multi-host", "node_pools.tpu.tpu_topology=2x2x\uff12", "tpu_topology = '2x2x\uff12'"),
    ("gke-h100-lustre", 'cluster.gke.region="us-central1\\n"', "must be a GCP region"),
]


@pytest.mark.parametrize(("preset", "override", "message"), FORMATS)
def test_formats_that_accept_more_than_they_say_are_one_line(preset: str, override: str, message: str) -> None:
    assert message in _one_line(preset, [override])


# Kubernetes' own cases for IsDNS1123Subdomain (k8s.io/apimachinery/pkg/util/validation, validation_test.go):
# a part may run past 63 characters, the whole stops at 253. A stricter check here failed the router's
# 67-character ClusterRole (release of 37 + "-llm-d-tiered-prefix-cache-epp"), which the API server takes.
SUBDOMAINS_ACCEPTED = ["a", "0", "a--1--2--b", "a.a", "1.2.3.4", "a" * 67, "a" * 64 + "." + "b" * 64, "a" * 253]
SUBDOMAINS_REJECTED = ["", "A", "a-", "-a", "a_b", "a..b", ".a", "a.", "a b", "aB.a", "a@b", "a" * 254, "a\n"]


@pytest.mark.parametrize("value", SUBDOMAINS_ACCEPTED)
def test_a_subdomain_is_what_kubernetes_takes(value: str) -> None:
    from stacks.config import formats

    assert formats.dns_subdomain(value) == value


@pytest.mark.parametrize("value", SUBDOMAINS_REJECTED)
def test_a_subdomain_kubernetes_refuses_is_refused(value: str) -> None:
    from stacks.config import formats

    with pytest.raises(ValueError, match="must be a DNS subdomain"):
        formats.dns_subdomain(value)


# ---- the tool itself ----


def test_the_tool_itself_never_hands_a_revision_to_git_as_an_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    target = tmp_path / "written"
    code = main(["diff", f"--base=--output={target}"])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"error: invalid stack config: --base = '--output={target}': not a")
    assert not target.exists()


@pytest.mark.parametrize("preset", ["../../Pulumi", "/etc/hostname", "dev.yaml", "presets/dev"])
def test_the_tool_itself_loads_only_presets_by_name(preset: str) -> None:
    with pytest.raises(ConfigError, match=rf"^invalid stack config: preset = '{preset}': allowed: "):
        loading.build(preset)


def test_the_tool_itself_renders_non_ascii_under_a_c_locale(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0")
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "stacks", "render", "dev", "--set", "description=Qwen3 · dév ✓", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert "Qwen3 · dév ✓" in (out / "summary.md").read_text(encoding="utf-8")
    listing = subprocess.run(
        [sys.executable, "-m", "stacks", "list"], cwd=ROOT, env=env, capture_output=True, check=False
    )
    assert listing.returncode == 0, listing.stderr.decode(errors="replace")


@pytest.mark.parametrize("out", ["", " "])
def test_the_tool_itself_never_renders_into_the_current_directory_by_an_empty_out(
    out: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["render", "dev", "--out", out]) == 2
    assert capsys.readouterr().err.startswith(f"error: invalid stack config: --out = '{out}': must name a directory")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "default", "gmp-system", "gke-managed-system"])
def test_the_tool_itself_never_takes_a_namespace_the_cluster_owns(namespace: str) -> None:
    assert f"namespace = '{namespace}': a namespace the cluster or its platform owns" in _one_line(
        "dev", [f"namespace={namespace}"]
    )


IDLE = [
    ("gke-h100-lustre", ["cluster.context=prod"], "cluster.context = (not shown): applies only with cluster.provider"),
    ("dev", ["cluster.name=mine"], "cluster.name = 'mine': names a created cluster"),
    ("existing-mi300", ["node_pools.mi300.spot=true"], "node_pools.mi300.spot = True: applies only to pools created"),
    ("gke-h100-lustre", ["node_pools.h100.host_memory=1TiB"], "node_pools.h100.host_memory = '1 TiB': describes an"),
    ("gke-h100-lustre", ["storage.read_bandwidth=10GiB"], "storage.read_bandwidth = '10 GiB': applies only with"),
    ("gpu-vllm-native-fs", ["storage.lustre.filesystem=abc"], "storage.lustre = '(set)': applies only with"),
    ("dev", ["model_cache.size=100GiB"], "model_cache.size = '100 GiB': applies only with model_cache.mode dedicated"),
]


@pytest.mark.parametrize(("preset", "overrides", "message"), IDLE)
def test_the_tool_itself_rejects_settings_that_do_nothing_on_the_platform(
    preset: str, overrides: list[str], message: str
) -> None:
    assert message in _one_line(preset, overrides)


def test_the_tool_itself_writes_a_render_whole(tmp_path: Path) -> None:
    result = rendered("dev")
    result.write(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifests.yaml", "resources.json", "summary.md"]
    assert manifests(result)


# ==== Hostile input, third round (issue 29) ====

# ---- the cluster contract is input too ----

CLUSTER_STACK = "gke-cluster"
OUTPUTS = "recorded/outputs.json"


@pytest.fixture
def layered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the repo's stack files, with the cluster stack's outputs recorded as its render writes them."""
    import shutil

    from stacks.config.cluster_outputs import describe

    for path in ROOT.glob("Pulumi*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    (tmp_path / "recorded").mkdir()
    outputs = describe(loading.load_named(CLUSTER_STACK), CLUSTER_STACK).exported()
    (tmp_path / OUTPUTS).write_text(json.dumps(outputs))
    return tmp_path


def _recorded(project: Path, path: str, value: object) -> None:
    data = json.loads((project / OUTPUTS).read_text())
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = value
    (project / OUTPUTS).write_text(json.dumps(data))


def _serving_line(overrides: list[str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_named("qwen3-8b", [f"cluster.outputs_file={OUTPUTS}", *(overrides or [])]))
    text = str(caught.value)
    assert text.startswith("invalid stack config: ") and text.isprintable(), text
    return text


SOURCE = f"cluster.outputs_file = '{OUTPUTS}': its llmdCluster."
CONTRACT = [
    ("gateway.proxy_subnet_cidr", "0.0.0.0/0", "gateway.proxy_subnet_cidr = '0.0.0.0/0': must be a private IPv4"),
    ("gateway.proxy_subnet_cidr", "banana", "gateway.proxy_subnet_cidr = 'banana': must be an IPv4 network"),
    ("gateway.proxy_subnet_cidr", "8.8.8.0/23", "gateway.proxy_subnet_cidr = '8.8.8.0/23': must be a private"),
    ("gateway.namespace", "../../Evil NS", "gateway.namespace = '../../Evil NS': must be a DNS label"),
    ("gateway.namespace", "kube-system", "gateway.namespace = 'kube-system': a namespace the cluster or its platform"),
    ("gateway.name", "Bad Name", "gateway.name = 'Bad Name': must be a DNS label"),
    ("gateway.class_name", "nope", "gateway.class_name = 'nope': input should be"),
    ("gateway.class_name", "istio", "gateway.class_name = 'istio': on GKE the gateway class is one of"),
    ("mirror.region", "us central1", "mirror.region = 'us central1': must be a GCP region"),
    ("mirror.project", "My Project!", "mirror.project = 'My Project!': must be a GCP project id"),
    ("mirror.registries", ["docker.io/../x"], "mirror.registries[0] = 'docker.io/../x': must be a registry host"),
    ("mirror.registries", ["evil.example.com"], "mirror.registries = ['evil.example.com']: evil.example.com: allowed"),
    ("node_pools.h100.node_count", -5, "node_pools.h100.node_count = -5: input should be greater than or equal to 0"),
    ("node_pools.h100.accelerator", "H100", "node_pools.h100.accelerator = 'H100': allowed: a100, amd, gpu, h200"),
    ("node_pools.h100.labels", {"bad key!": "x"}, "node_pools.h100.labels = {'bad key!': 'x'}: must be a Kubernetes"),
    ("node_pools.h100.machine_type", "banana", "node_pools.h100.machine_type = 'banana': not a machine type"),
    ("node_pools", {"BAD POOL": {}}, "node_pools = 'BAD POOL': a pool key must be a DNS label"),
    ("name", "../x", "name = '../x': must start with a letter"),
    ("stack", "../../x", "stack = '../../x': string should match"),
    ("storage.size", "-1", "storage.size = '-1': must be a Kubernetes quantity"),
    ("storage.claim_namespace", "kube-public", "storage.claim_namespace = 'kube-public': a namespace the cluster"),
    ("storage.storage_class", "Bad Class", "storage.storage_class = 'Bad Class': input should be"),
    ("platform", "gke ", "platform = 'gke ': input should be 'base', 'gke' or 'amd-ci'"),
    ("keda", "sure", "keda = 'sure': input should be a valid boolean"),
    ("schema_version", 2, "schema_version = 2: input should be 1"),
    ("mirror.credentials", {"docker.io": "not-an-arn"}, "mirror.credentials.docker.io: must be a Secrets Manager"),
]


@pytest.mark.parametrize(("path", "value", "message"), CONTRACT)
def test_the_cluster_contract_a_value_no_cluster_stack_exports_is_one_line_naming_the_file(
    path: str, value: object, message: str, layered: Path
) -> None:
    """Before: 0.0.0.0/0 opened every serving pod's NetworkPolicy to the world, `banana` reached an ipBlock,
    `../../Evil NS` a parentRef, a class the platform lacks was a ValueError traceback, and a pool's error named
    a field the serving stack never set, with no word of the file."""
    _recorded(layered, path, value)
    assert _serving_line().startswith(f"invalid stack config: {SOURCE}{message}")


def test_the_cluster_contract_live_outputs_name_the_stack() -> None:
    from stacks.config.cluster_outputs import describe, read_outputs

    data = describe(loading.load_named(CLUSTER_STACK), CLUSTER_STACK).exported()
    data["gateway"]["proxy_subnet_cidr"] = "0.0.0.0/0"
    with pytest.raises(ConfigError) as caught:
        read_outputs(data, "organization/llmd/gke-cluster")
    assert str(caught.value) == (
        "invalid stack config: cluster.stack = 'organization/llmd/gke-cluster': its"
        " llmdCluster.gateway.proxy_subnet_cidr = '0.0.0.0/0': must be a private IPv4 network of prefix length /23,"
        " e.g. 10.0.0.0/23"
    )


@pytest.mark.parametrize("data", [[], "x", None, 7, {"stack": "x" * 1_000_000}])
def test_the_cluster_contract_outputs_of_another_shape_are_one_short_line(data: object) -> None:
    from stacks.config.cluster_outputs import read_outputs

    with pytest.raises(ConfigError) as caught:
        read_outputs(data, "o.json", "cluster.outputs_file")
    assert str(caught.value).startswith("invalid stack config: cluster.outputs_file = 'o.json': its llmdCluster")
    assert len(str(caught.value)) < 400


def test_the_cluster_contract_an_error_in_the_repo_cluster_stack_names_its_file(layered: Path) -> None:
    text = (layered / f"Pulumi.{CLUSTER_STACK}.yaml").read_text()
    (layered / f"Pulumi.{CLUSTER_STACK}.yaml").write_text(text.replace("node_count: 2", "node_count: -5"))
    with pytest.raises(ConfigError) as caught:
        loading.load_named("qwen3-8b")
    assert str(caught.value).startswith(
        f"invalid stack config: Pulumi.{CLUSTER_STACK}.yaml: node_pools.h100.node_count = -5: input should be"
    )


def test_the_cluster_contract_a_gateway_class_the_platform_lacks_is_one_line_in_the_cluster_stack(
    layered: Path,
) -> None:
    """Before: a ValueError traceback from describe(), in the cluster stack's render and its serving stacks'."""
    (layered / "Pulumi.gc.yaml").write_text(
        "config:\n  llmd:layer: cluster\n  llmd:node_pools:\n    h100: {accelerator: gpu}\n"
        "  llmd:gateway: {enabled: true, class_name: gke-l7-rilb}\n"
    )
    with pytest.raises(ConfigError) as caught:
        loading.load_named("gc")
    assert str(caught.value) == (
        "invalid stack config: gateway.class_name = 'gke-l7-rilb': on platform 'base' the gateway class is one of"
        " kgateway, istio, not 'gke-l7-rilb'"
    )


def test_the_cluster_contract_what_the_cluster_stack_writes_it_reads_back(layered: Path) -> None:
    from stacks.config.cluster_facts import ClusterOutputs

    for name in loading.stack_names(layered):
        config = loading.load_named(name)
        if config.effective_layer == "cluster":
            from stacks.config.cluster_outputs import describe

            written = describe(config, name).exported()
            assert ClusterOutputs.model_validate(written).exported() == written


# ---- files that are not files ----


def _kinds(project: Path, name: str, outside: Path) -> dict[str, Path]:
    """`name` in `project` as each kind of thing that is not a regular file inside it."""
    made = {}
    for kind in ("fifo", "zero", "outside", "directory", "loop", "dangling"):
        path = project / f"{kind}-{name}"
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "zero":
            os.symlink("/dev/zero", path)
        elif kind == "outside":
            os.symlink(outside, path)
        elif kind == "directory":
            path.mkdir()
        elif kind == "loop":
            os.symlink(path, path)
        else:
            os.symlink(project / "nowhere", path)
        made[kind] = path
    return made


FILE_KINDS = {
    "fifo": "a FIFO, not a regular file",
    "zero": "it leads outside the project (through a link)",
    "outside": "it leads outside the project (through a link)",
    "directory": "a directory, not a regular file",
    "loop": "cannot read",
    "dangling": "No such file or directory",
}


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A read that blocks (a FIFO) fails the test after 30 s instead of hanging the suite."""
    import signal

    def expired(*_: object) -> None:
        raise TimeoutError("hung for 30 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.usefixtures("no_hang")
@pytest.mark.parametrize("kind", FILE_KINDS)
def test_files_that_are_not_files_an_outputs_file_is_one_line_not_a_hang(
    kind: str, layered: Path, tmp_path: Path
) -> None:
    """Before: a FIFO hung `render` (and `check` over the repo), /dev/zero read until memory ran out, and a link
    inside the project to a file outside it was read (the rule checked the path's text)."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text((layered / OUTPUTS).read_text())
    _kinds(layered, "o.json", outside)
    text = _serving_line([f"cluster.outputs_file={kind}-o.json"])
    assert text.startswith(f"invalid stack config: cluster.outputs_file = '{kind}-o.json': cannot read the recorded")
    assert FILE_KINDS[kind] in text


@pytest.mark.usefixtures("no_hang")
@pytest.mark.parametrize("kind", FILE_KINDS)
def test_files_that_are_not_files_a_stack_file_is_one_line_naming_it(kind: str, layered: Path, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-Pulumi.x.yaml"
    outside.write_text("config:\n  llmd:preset: dev\n")
    for made in _kinds(layered, "x.yaml", outside).values():
        made.rename(layered / f"Pulumi.{made.name.replace('-x.yaml', '')}.yaml")
    with pytest.raises(ConfigError) as caught:
        loading.load_named(kind)
    assert str(caught.value).startswith(f"invalid stack config: Pulumi.{kind}.yaml = (not shown): cannot read the file")
    assert FILE_KINDS[kind] in str(caught.value)


NESTED = {
    "a JSON array": "[" * 100_000 + "]" * 100_000,
    "a JSON object": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "just past the bound": '{"a":' * 33 + "1" + "}" * 33,
}


@pytest.mark.parametrize("case", NESTED)
def test_files_that_are_not_files_json_nested_deep_is_one_line_not_a_recursion_error(case: str, layered: Path) -> None:
    (layered / "deep.json").write_text(NESTED[case])
    assert _serving_line(["cluster.outputs_file=deep.json"]) == (
        "invalid stack config: cluster.outputs_file = 'deep.json': cannot read the recorded outputs: nested deeper"
        " than 32 levels"
    )


def test_files_that_are_not_files_an_outputs_file_is_bounded_in_size(layered: Path) -> None:
    (layered / "big.json").write_text(" " * (1024 * 1024) + (layered / OUTPUTS).read_text())
    assert _serving_line(["cluster.outputs_file=big.json"]).endswith(
        "cannot read the recorded outputs: larger than 1024 KiB"
    )


@pytest.mark.parametrize(
    "text",
    [
        "config:\n  llmd:description: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "config:\n  llmd:description:\n" + "".join(" " * (i + 4) + "-\n" for i in range(1200)),
    ],
    ids=["flow", "block"],
)
def test_files_that_are_not_files_yaml_nested_deep_is_one_line(text: str, project: Path) -> None:
    (project / "Pulumi.x.yaml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        loading.load_named("x")
    assert str(caught.value) == "invalid stack config: Pulumi.x.yaml = (not shown): nested deeper than 32 levels"


def test_files_that_are_not_files_a_set_value_nested_deep_is_one_short_line() -> None:
    with pytest.raises(ConfigError) as caught:
        loading.load_preset("dev", ["description=" + "[" * 5000 + "]" * 5000])
    assert str(caught.value).endswith("...': nested deeper than 32 levels")
    assert len(str(caught.value)) < 200


# ---- the tools check before they act ----

E2E_REFUSED = [
    (["no-such-preset"], "PRESET = 'no-such-preset': allowed: "),
    (["../../etc"], "PRESET = '../../etc': allowed: "),
    (["qwen3-8b"], "PRESET = 'qwen3-8b': a stack of the repo: --layers deploys the layer stacks"),
    (["gke-h100-lustre"], "PRESET = 'gke-h100-lustre': creates a cloud cluster; allowed: "),
    (["--stop", "../../x"], "--stop = '../../x': allowed: "),
    (["--workdir", "/etc/hostname"], "--workdir = '/etc/hostname': not a directory"),
    (["--workdir", "/"], "--workdir = '/': each run removes its directory in it"),
    (["--layers", "--set", "cache.replicas=3"], "--set = 'cache.replicas=3': the layered run deploys the repo's"),
    (["--set", "cache.replicas=3"], "--set = 'cache.replicas=3': the layered run deploys the repo's"),
    (["dev", "--set", "cache.replicas=banana"], "dev: invalid stack config: cache.replicas = 'banana': input should"),
    (["dev", "--set", "nope"], "dev: invalid stack config: --set = 'nope': expected path=value"),
]


@pytest.mark.parametrize(("argv", "message"), E2E_REFUSED)
def test_the_tools_check_before_they_act_e2e_refuses_in_one_line_before_any_build(
    argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: each went straight to the 40-minute Go build (and, with the tools cached, on to deploy); --layers
    dropped --set silently; a bad --set was a ConfigError traceback."""
    import e2e.__main__ as e2e_main
    from e2e import tools

    def no_build(*_: object, **__: object) -> None:
        raise AssertionError("the build started before the arguments were checked")

    monkeypatch.setattr(tools, "ensure_all", no_build)
    assert e2e_main.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}"), err
    assert err.count("\n") == 1


def _git(repo: Path, *argv: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *argv],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize(
    ("link", "target", "why"),
    [
        ("abs", "/etc/passwd", "a link to an absolute path"),
        ("d/esc", "../../../etc/passwd", "a link that leads outside"),
    ],
)
def test_the_tools_check_before_they_act_diff_refuses_a_tree_with_a_link_out_in_one_line(
    link: str,
    target: str,
    why: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: a tarfile traceback (a fork's pull request could break the preview job that way)."""
    _git(tmp_path, "init", "-q")
    (tmp_path / link).parent.mkdir(exist_ok=True)
    os.symlink(target, tmp_path / link)
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "link")
    revision = _git(tmp_path, "rev-parse", "HEAD")
    monkeypatch.chdir(tmp_path)
    assert main(["diff", "--base", revision, "--head", revision]) == 2
    assert capsys.readouterr().err == (
        f"error: invalid stack config: --base = '{revision}': its tree holds '{link}', {why}"
        + (" the tree" if "outside" in why else "")
        + "; diff extracts no such tree\n"
    )


def test_the_tools_check_before_they_act_diff_of_an_empty_tree_renders_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a FileNotFoundError (an empty tree archives no member, and no directory was made)."""
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "empty")
    revision = _git(tmp_path, "rev-parse", "HEAD")
    monkeypatch.chdir(tmp_path)
    assert main(["diff", "--base", revision, "--head", revision]) == 0
    assert capsys.readouterr().out.endswith("No rendered changes.\n")


# ---- names the cluster owns, and values that do nothing ----

OWNED_AND_IDLE = [
    ("gke-h100-lustre", ["gateway.enabled=true", "gateway.namespace=kube-system"], "gateway.namespace = 'kube-system'"),
    ("gpu-vllm-native-fs", ["storage.claim_namespace=default"], "storage.claim_namespace = 'default': a namespace"),
    ("dev", ["model_cache.revision=a/../../../etc"], "model_cache.revision = 'a/../../../etc': must be a branch"),
    ("dev", ["model_cache.revision=main/"], "model_cache.revision = 'main/': must be a branch"),
    ("dev", ["cluster.context=''"], "cluster.context = '': string should have at least 1 character"),
    ("dev", ["cluster.kubeconfig=''"], "cluster.kubeconfig = '': string should have at least 1 character"),
    (
        "gke-h100-lustre",
        ["node_pools.h100.labels={cloud.google.com/gke-nodepool: x}"],
        "node_pools.h100.labels = 'cloud.google.com/gke-nodepool': a label prefix gke and Kubernetes reserve",
    ),
    (
        "eks-h100-efs",
        ["node_pools.h100.labels={node-role.kubernetes.io/gpu: ''}"],
        "node_pools.h100.labels = 'node-role.kubernetes.io/gpu': a label prefix eks",
    ),
    ("dev", ["autoscaling.trigger=saturation"], "autoscaling.trigger = 'saturation': applies only with autoscaling"),
    (
        "gpu-vllm-native-fs-autoscale",
        ["autoscaling.queue_threshold=1e-300"],
        "autoscaling.queue_threshold = '1e-300': input should be greater than or equal to 0.001",
    ),
    (
        "gpu-vllm-native-fs-autoscale",
        ["autoscaling.prometheus_url=http://"],
        "autoscaling.prometheus_url = 'http://': must be an http:// or https:// URL with a host",
    ),
    (
        "gpu-vllm-native-fs-autoscale",
        ["autoscaling.prometheus_url=http://p:99999"],
        "autoscaling.prometheus_url = 'http://p:99999': must be an http:// or https:// URL with a port",
    ),
    ("dev", ["cache.replicas=1:30"], "cache.replicas = '1:30': input should be a valid integer"),
]


@pytest.mark.parametrize(("preset", "overrides", "message"), OWNED_AND_IDLE)
def test_names_the_cluster_owns_and_values_that_do_nothing_are_one_line(
    preset: str, overrides: list[str], message: str
) -> None:
    """Before: each was accepted (the cluster stack would declare Namespace kube-system; `1:30` was YAML 1.1's
    base-60 90 where Pulumi reads the string)."""
    assert message in _one_line(preset, overrides)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        *[("1:30", "1:30"), ("1:30.5", "1:30.5"), ("90", 90), ("-2", -2), ("0x10", 16), ("1_000", 1000)],
        *[(".5", 0.5), ("1.0e+3", 1000.0), ("true", True), ("~", None), ("[1, 2:3]", [1, "2:3"])],
    ],
)
def test_names_the_cluster_owns_a_set_value_reads_as_pulumi_reads_it(text: str, value: object) -> None:
    from stacks.config import yamlfile

    assert yamlfile.parse_value(text) == value


@pytest.mark.parametrize("revision", ["main", "v1.0", "refs/pr/12", "0123456789abcdef0123456789abcdef01234567"])
def test_names_the_cluster_owns_a_revision_of_git_is_accepted(revision: str) -> None:
    assert loading.load_preset("dev", [f"model_cache.revision={revision}"]).model_cache.revision == revision
