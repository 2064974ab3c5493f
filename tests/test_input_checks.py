"""Hostile input (issue 11 §1): every bad value ends in one line naming it; valid input is accepted and renders."""

from __future__ import annotations

from pathlib import Path

import pytest

from stacks.__main__ import main
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from tests.helpers import by_kind, manifests, rendered, validate

_POOL = ["node_pools.accelerators.machine_type=a3-highgpu-8g"]
REJECTED = [
    # A node too small for the kubelet's reservation (was a negative size and a traceback).
    (
        "existing-mi300",
        ["node_pools.mi300.host_memory=133Mi"],
        "node_pools.mi300.host_memory = '133Mi': must be between",
    ),
    ("existing-mi300", ["node_pools.mi300.host_memory=1"], "node_pools.mi300.host_memory = 1: must be between 1 GiB"),
    # Names the platform rejects.
    ("dev", ["router.release=" + "a" * 54], "at most 53 characters"),
    ("dev", ["router.release=1router"], "router.release = '1router': must start with a letter"),
    (
        "gke-h100-lustre",
        ["cluster.name=" + "a" * 41],
        "cluster.name = '" + "a" * 41 + "': a GKE cluster name has at most 40",
    ),
    ("gke-h100-lustre", ["cluster.name=9llmd"], "cluster.name = '9llmd': must start with a letter"),
    ("gke-h100-lustre", ["cluster.name=" + "a" * 34], "its system pool name " + "a" * 34 + "-system exceeds 40"),
    ("gke-h100-lustre", ["cluster.name=" + "a" * 30, *_POOL], "node_pools.accelerators = 'accelerators': its gke"),
    (
        "eks-h100-efs",
        ["cluster.name=" + "a" * 55, "node_pools.accelerators.machine_type=p5.48xlarge"],
        "node_pools.accelerators = 'accelerators': its eks",
    ),
    (
        "gke-h100-lustre",
        ["node_pools={h_100: {machine_type: a3-highgpu-8g}}", "cache.node_pool=h_100"],
        "node_pools.h_100 = 'h_100': a pool key must be a DNS label",
    ),
    (
        "gke-h100-lustre",
        ["node_pools={system: {machine_type: a3-highgpu-8g}}", "cache.node_pool=system"],
        "node_pools.system = 'system': the name of the cluster's built-in system pool",
    ),
    (
        "eks-h100-efs",
        ["cluster.eks.availability_zones=[us-east-1a, us-east-1a]"],
        "cluster.eks.availability_zones = ['us-east-1a', 'us-east-1a']: must be different zones",
    ),
    ("gpu-vllm-native-fs", ["storage.storage_class=Fast_SSD"], "storage.storage_class = 'Fast_SSD': must be a DNS"),
    ("existing-mi300", ["node_pools.mi300.labels={'bad key!': v}"], "node_pools.mi300.labels = {'bad key!': 'v'}"),
    ("existing-mi300", ["node_pools.mi300.labels={ok: 'bad value'}"], "must be a Kubernetes label value"),
    ("existing-mi300", ["node_pools.mi300.taints=[{key: 'a b'}]"], "node_pools.mi300.taints[0].key = 'a b'"),
    ("existing-mi300", ["node_pools.mi300.taints=[{key: a, value: '-x'}]"], "node_pools.mi300.taints[0].value = '-x'"),
    # Values that cannot work.
    ("dev", ["cache.image=vllm openai"], "cache.image = 'vllm openai': must be an image reference"),
    ("dev", ["cache.image=Vllm/Vllm-Openai:v1"], "cache.image = 'Vllm/Vllm-Openai:v1': must be an image reference"),
    ("dev", ["cache.image=vllm/vllm-openai@sha256:abc"], "must be an image reference"),
    ("dev", ["cache.image="], "cache.image = '': must be an image reference"),
    ("dev", ["verification.image=python:3 slim"], "verification.image = 'python:3 slim'"),
    ("gpu-vllm-native-fs", ["storage.size=0"], "storage.size = 0: must be between 1 MiB"),
    ("gpu-vllm-native-fs", ["storage.size=100000000TiB"], "storage.size = '100000000TiB': must be between"),
    ("dev", ["cache.tier.cpu=64TiB"], "cache.tier.cpu = '64TiB': must be between 1 GiB and 32 TiB"),
    ("gpu-vllm-lmcache-connector-fs", ["cache.tier.disk=0"], "cache.tier.disk = 0: must be between"),
    ("dev", ["router.epp_resources.memory=0"], "router.epp_resources.memory = 0: must be between"),
    ("dev", ["router.epp_resources.memory=100TiB"], "router.epp_resources.memory = '100TiB'"),
    ("dev", ["router.proxy_resources.cpu=0"], "router.proxy_resources.cpu = 0: must be between 1m and 1024 cores"),
    ("dev", ["router.proxy_resources.cpu=5000"], "router.proxy_resources.cpu = 5000: must be between"),
    ("dev", ["monitoring.alerts.window=0m"], "monitoring.alerts.window = '0m'"),
    ("dev", ["monitoring.alerts.min_load_bandwidth=0"], "monitoring.alerts.min_load_bandwidth = 0"),
    ("dev", ["router.match_labels={}"], "router.match_labels = {}: value should have at least 1 item"),
    ("dev", ["router.chart="], "router.chart = '': must be a chart in an OCI registry"),
    ("dev", ["router.chart=oci://ghcr.io/llm-d/charts/x:v1"], "must be a chart in an OCI registry"),
    ("eks-h100-efs", ["cluster.eks.vpc_cidr=999.0.0.0/16"], "cluster.eks.vpc_cidr = '999.0.0.0/16': must be an IPv4"),
    ("eks-h100-efs", ["cluster.eks.vpc_cidr=10.0.0.0/24"], "must be a private IPv4 network of prefix length /16"),
    ("gke-h100-lustre", ["cluster.gke.master_ipv4_cidr=172.16.0.1/28"], "cluster.gke.master_ipv4_cidr"),
    ("eks-h100-efs", ["cluster.eks.region=us_east"], "cluster.eks.region = 'us_east': must be an AWS region"),
    (
        "eks-h100-efs",
        ["cluster.eks.availability_zones=[eu-west-1a, eu-west-1b]"],
        "must be zones of region us-east-1: us-east-1a to us-east-1f",
    ),
    ("gke-h100-lustre", ["cluster.gke.zone=europe-west4-a"], "cluster.gke.zone = 'europe-west4-a': must be a zone"),
    ("gke-h100-lustre", ["cluster.gke.region=central"], "cluster.gke.region = 'central': must be a GCP region"),
    ("gke-h100-lustre", ["cluster.gke.project=My Project"], "cluster.gke.project = 'My Project': must be a GCP"),
    ("gke-h100-lustre", ["cluster.gke.project=abc"], "cluster.gke.project = 'abc': must be a GCP project id"),
    # Silent changes: booleans are not numbers.
    ("dev", ["cache.replicas=true"], "cache.replicas = True: must be a number, not a boolean"),
    ("dev", ["verification.requests=false"], "verification.requests = False: must be a number"),
    ("gpu-vllm-lmcache-server", ["lmcache.eviction_ratio=true"], "lmcache.eviction_ratio = True: must be a number"),
]


@pytest.mark.parametrize(("preset", "overrides", "message"), REJECTED)
def test_bad_value_is_one_line(preset: str, overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_preset(preset, overrides))
    text = str(caught.value)
    assert text.startswith("invalid stack config: ")
    assert "\n" not in text
    assert message in text


ACCEPTED = [
    # One field of a default is overridable on its own.
    ("gpu-vllm-native-cpu", ("router.epp_resources.cpu=500m",)),
    # What `pulumi config set --path` stores: numbers for strings that look like numbers.
    ("dev", ("namespace=123",)),
    ("dev", ("router.epp_resources.cpu=2", "router.proxy_resources.cpu=0.5")),
    ("gke-h100-lustre", ("cluster.name=" + "a" * 28,)),
    ("existing-mi300", ("node_pools.mi300.labels={'example.com/pool': mi300-a}",)),
    ("dev", ("cache.image=registry.example:5000/team/vllm-openai:v0.26.0-cu12",)),
    ("dev", ("cache.image=docker.io/vllm/vllm-openai@sha256:" + "a" * 64,)),
]


@pytest.mark.parametrize(("preset", "overrides"), ACCEPTED)
def test_valid_input_is_accepted_and_renders_valid_objects(preset: str, overrides: tuple[str, ...]) -> None:
    objects = manifests(rendered(preset, overrides))
    assert objects
    for obj in objects:
        validate(obj)


def test_one_router_field_overrides_and_the_other_keeps_its_default() -> None:
    config = loading.load_preset("gpu-vllm-native-cpu", ["router.epp_resources.cpu=500m"])
    assert config.router.epp_resources.cpu == "500m"
    assert config.router.epp_resources.memory == loading.build().router.epp_resources.memory


def test_numbers_given_for_strings_are_kept_as_their_text() -> None:
    config = loading.load_preset("dev", ["namespace=123", "router.epp_resources.cpu=2"])
    assert (config.namespace, config.router.epp_resources.cpu) == ("123", "2")


@pytest.mark.parametrize(("value", "flag"), [("0.001", "0.001"), ("0.8", "0.80"), ("0.125", "0.125")])
def test_lmcache_watermark_keeps_its_precision(value: str, flag: str) -> None:
    result = rendered("gpu-vllm-lmcache-server", (f"lmcache.eviction_trigger_watermark={value}",))
    server = next(d for d in by_kind(manifests(result), "DaemonSet") if "lmcache" in d["metadata"]["name"])
    args = server["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--eviction-trigger-watermark={flag}" in args


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("where", ["file", "under-file", "unwritable"])
def test_out_that_cannot_be_a_directory_is_one_line(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("keep me")
    out = {"file": a_file, "under-file": a_file / "out", "unwritable": Path("/proc/no-such-dir/out")}[where]
    code, err = _cli(capsys, "render", "dev", "--out", str(out))
    assert code == 2
    assert err.startswith(f"error: invalid stack config: --out = '{out}': ")
    assert err.count("\n") == 1
    assert a_file.read_text() == "keep me"


def test_diff_of_an_unknown_revision_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _cli(capsys, "diff", "--base", "no-such-revision")
    assert (code, err) == (
        2,
        "error: invalid stack config: --base = 'no-such-revision': not a revision of this git repository\n",
    )


def test_diff_of_an_unknown_stack_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _cli(capsys, "diff", "--base", "HEAD", "no-such-stack")
    assert code == 2
    assert err.startswith("error: invalid stack config: NAME = 'no-such-stack': a preset or stack at either revision")
    assert err.count("\n") == 1
