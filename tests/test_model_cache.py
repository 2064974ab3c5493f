"""The model cache in the render: weights from the shared volume, filled by one Job the servers depend on;
the served name the router and clients see; compile caches keyed per accelerator, image and model."""

from __future__ import annotations

from typing import Any

import pytest

from components.specs import model_cache
from policies.resources import model_source, served_model
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from tests.helpers import by_kind, manifests, rendered, resources

TIER_CLAIM = "llm-d-kv-cache-storage"
# Presets with the filesystem tier's claim: the model cache is on by default, on that claim.
SHARED = [
    "gke-h100-lustre",
    "eks-h100-efs",
    *(n for n in loading.preset_names() if n.endswith(("-fs", "-fs-gke")) and "mooncake" not in n),
]


def _objects(name: str, *overrides: str) -> list[dict[str, Any]]:
    return manifests(rendered(name, tuple(overrides)))


def _workload(name: str, *overrides: str) -> dict[str, Any]:
    return next(
        o
        for o in _objects(name, *overrides)
        if o["kind"] in ("Deployment", "LeaderWorkerSet")
        and o["metadata"]["namespace"] != "mooncake"
        and "llm-d.ai/role" in o["metadata"].get("labels", {})  # a model server, not the tier's evictor
    )


def _pod_specs(workload: dict[str, Any]) -> list[dict[str, Any]]:
    if workload["kind"] == "LeaderWorkerSet":
        template = workload["spec"]["leaderWorkerTemplate"]
        return [template["leaderTemplate"]["spec"], template["workerTemplate"]["spec"]]
    return [workload["spec"]["template"]["spec"]]


def _server_container(pod: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod["containers"][0]
    return container


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def _fetch_job(name: str, *overrides: str) -> dict[str, Any]:
    [job] = [j for j in by_kind(_objects(name, *overrides), "Job") if j["metadata"]["name"].startswith("model-fetch-")]
    return job


def _claim_volume(pod: dict[str, Any], mount_path: str) -> tuple[str, str]:
    """(claim, subPath) behind a mount of the pod's first container."""
    mount = next(m for m in _server_container(pod)["volumeMounts"] if m["mountPath"] == mount_path)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    return volume["persistentVolumeClaim"]["claimName"], mount.get("subPath", "")


@pytest.mark.parametrize("name", SHARED)
def test_shared_storage_stacks_load_weights_from_the_tier_claim(name: str) -> None:
    workload = _workload(name)
    model = plan(loading.load_preset(name)).model_server.model.name
    for pod in _pod_specs(workload):
        container = _server_container(pod)
        assert model_source(container) == f"/mnt/model-cache/{model}"
        assert served_model(container) == model
        assert _claim_volume(pod, "/mnt/model-cache") == (TIER_CLAIM, "models")
        assert next(m for m in container["volumeMounts"] if m["mountPath"] == "/mnt/model-cache")["readOnly"]
        # The tier sees only its own directory: a tier cleanup cannot reach the weights.
        assert _claim_volume(pod, "/mnt/files-storage") == (TIER_CLAIM, "kv-cache")
        assert _env(container)["HF_HUB_OFFLINE"] == "1"
    job = _fetch_job(name)
    env = _env(_server_container(job["spec"]["template"]["spec"]))
    assert env["TARGET"] == f"/mnt/cache-volume/models/{model}"
    assert "/mnt/cache-volume/kv-cache" in env["WRITABLE_DIRS"].split(":")
    volumes = job["spec"]["template"]["spec"]["volumes"]
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": TIER_CLAIM}} in volumes


@pytest.mark.parametrize("name", ["gke-h100-lustre", "eks-h100-efs", "gpu-sglang-native-fs"])
def test_model_servers_depend_on_the_fetch_job_which_waits_for_the_claim(name: str) -> None:
    rows = resources(rendered(name))
    jobs = [r for r in rows if r["type"] == "kubernetes:batch/v1:Job" and "model-fetch" in r["name"]]
    job_urn = f"{jobs[0]['type']}::{jobs[0]['name']}"
    workloads = [r for r in rows if r["type"] == "kubernetes:apps/v1:Deployment" and "model-server" in r["name"]]
    assert workloads and all(job_urn in w["dependsOn"] for w in workloads)
    job = next(r for r in rows if f"{r['type']}::{r['name']}" == job_urn)
    assert any(d.endswith(f"::llmd-storage-{TIER_CLAIM}") for d in job["dependsOn"])


def test_the_job_budget_covers_the_download_and_is_the_engines_await_timeout() -> None:
    job = _fetch_job("gke-h100-lustre")
    timeout = int(job["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    qwen3_32b_bytes, hugging_face_per_pod = 65.6e9, 100e6
    assert timeout > qwen3_32b_bytes / hugging_face_per_pod > 600  # pulumi-kubernetes waits 10 minutes by default


def test_the_served_name_is_the_hub_id_the_router_and_verification_use() -> None:
    objects = _objects("dev", "model_cache.mode=dedicated")
    container = _server_container(_pod_specs(_workload("dev", "model_cache.mode=dedicated"))[0])
    assert model_source(container) == "/mnt/model-cache/Qwen/Qwen3-0.6B"
    assert served_model(container) == "Qwen/Qwen3-0.6B"
    verify = next(j for j in by_kind(objects, "Job") if j["metadata"]["name"] == "verify-offload")
    assert _env(_server_container(verify["spec"]["template"]["spec"]))["MODEL"] == "Qwen/Qwen3-0.6B"
    # The router's tokenizer asks the Hub for the model the clients name: the served name, not the path.
    routing = ("gpu-vllm-lmcache-server-routing", "model_cache.mode=dedicated")
    router = plan(loading.load_named(routing[0], [routing[1]])).router_values["router"]
    served = served_model(_server_container(_pod_specs(_workload(*routing))[0]))
    assert router["tokenizer"]["modelName"] == served == "Qwen/Qwen3-0.6B"


@pytest.mark.parametrize(
    ("name", "accelerator", "env"),
    [
        ("gpu-vllm-native-fs", "gpu", {"VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"}),
        ("amd-vllm-native-fs", "amd", {"VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"}),
        ("xpu-vllm-native-fs", "xpu", {"VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"}),
        (
            "gpu-sglang-native-fs",
            "gpu",
            {"SGLANG_CACHE_DIR", "SGLANG_DG_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"},
        ),
        ("tpu-v6-vllm-native-cpu", "tpu-v6", {"VLLM_CACHE_ROOT", "VLLM_XLA_CACHE_PATH"}),
        ("gke-tpu-v7-multi-host", "tpu-v7", {"VLLM_CACHE_ROOT", "VLLM_XLA_CACHE_PATH"}),
    ],
)
def test_compile_caches_sit_on_the_volume_keyed_by_accelerator_image_and_model(
    name: str, accelerator: str, env: set[str]
) -> None:
    overrides = () if name in SHARED else ("model_cache.mode=dedicated",)
    server = plan(loading.load_named(name, list(overrides))).model_server
    key = f"compile-cache/{model_cache.compile_key(accelerator, server.image, server.model.name)}"
    assert key.startswith(f"compile-cache/{accelerator}/")
    for pod in _pod_specs(_workload(name, *overrides)):
        container = _server_container(pod)
        claim, sub_path = _claim_volume(pod, "/mnt/compile-cache")
        assert sub_path == key
        assert claim == (TIER_CLAIM if name in SHARED else model_cache.MODEL_CACHE_CLAIM)
        cache_env = {k: v for k, v in _env(container).items() if k in env}
        assert set(cache_env) == env
        assert all(v.startswith("/mnt/compile-cache/") for v in cache_env.values())
    writable = _env(_server_container(_fetch_job(name, *overrides)["spec"]["template"]["spec"]))["WRITABLE_DIRS"]
    assert f"/mnt/cache-volume/{key}" in writable.split(":")


def test_a_new_image_or_model_gets_its_own_compile_cache() -> None:
    base = model_cache.compile_key("gpu", "docker.io/vllm/vllm-openai:v0.26.0", "Qwen/Qwen3-32B")
    assert base == "gpu/docker.io-vllm-vllm-openai-v0.26.0/Qwen-Qwen3-32B"
    assert model_cache.compile_key("gpu", "docker.io/vllm/vllm-openai:v0.27.0", "Qwen/Qwen3-32B") != base
    assert model_cache.compile_key("gpu", "docker.io/vllm/vllm-openai:v0.26.0", "Qwen/Qwen3-8B") != base
    assert model_cache.compile_key("amd", "docker.io/vllm/vllm-openai:v0.26.0", "Qwen/Qwen3-32B") != base


@pytest.mark.parametrize(
    ("name", "streams"),
    [
        ("gpu-vllm-native-fs", True),  # vllm/vllm-openai ships the Run:ai streamer
        ("gpu-sglang-native-fs", False),
        ("amd-vllm-native-fs", False),
        ("gpu-vllm-lmcache-connector-fs", True),  # the guide's vllm/vllm-openai, as native
        ("gpu-vllm-lmcache-server", False),  # lmcache/vllm-openai: not known to ship it
    ],
)
def test_runai_streamer_only_where_the_image_ships_it(name: str, streams: bool) -> None:
    args = _server_container(_pod_specs(_workload(name))[0])
    argv = [*args.get("command", []), *args.get("args", [])]
    assert any("--load-format=runai_streamer" in a for a in argv) is streams


def test_tpu_multi_host_leader_and_workers_load_from_a_dedicated_claim() -> None:
    name, overrides = "gke-tpu-v7-multi-host", ("model_cache.mode=dedicated", "model_cache.storage_class=lustre-rwx")
    leader, worker = _pod_specs(_workload(name, *overrides))
    model = "Qwen/Qwen3-Coder-480B-A35B-Instruct"
    assert model_source(_server_container(leader)) == f"/mnt/model-cache/{model}"
    assert served_model(_server_container(leader)) == model
    for pod in (leader, worker):
        assert _claim_volume(pod, "/mnt/model-cache") == (model_cache.MODEL_CACHE_CLAIM, "models")
    [claim] = [c for c in by_kind(_objects(name, *overrides), "PersistentVolumeClaim")]
    assert claim["metadata"]["name"] == model_cache.MODEL_CACHE_CLAIM
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert claim["spec"]["storageClassName"] == "lustre-rwx"
    assert claim["spec"]["resources"]["requests"]["storage"] == "1789Gi"  # twice the 960 GB of weights


def test_off_leaves_the_servers_as_upstream_has_them() -> None:
    container = _server_container(_pod_specs(_workload("gpu-vllm-native-fs", "model_cache.mode=off"))[0])
    assert container["args"][0] == "Qwen/Qwen3-32B"
    assert {"name": "files-storage", "mountPath": "/mnt/files-storage"} in container["volumeMounts"]
    assert not [j for j in by_kind(_objects("gpu-vllm-native-fs", "model_cache.mode=off"), "Job")]


def test_shared_needs_the_tiers_claim() -> None:
    with pytest.raises(ConfigError) as caught:
        plan(loading.load_named("gpu-vllm-native-cpu", ["model_cache.mode=shared"]))
    assert str(caught.value) == (
        "invalid stack config: model_cache.mode = 'shared': needs the filesystem tier's claim"
        " (cache.tier.variant fs, not mooncake-store); allowed: dedicated, off"
    )


def test_the_job_is_named_by_what_it_runs() -> None:
    """A Job cannot be updated in place: a change of model, revision or image is a new Job; no change, the same."""
    base = _fetch_job("gpu-vllm-native-fs")["metadata"]["name"]
    assert _fetch_job("gpu-vllm-native-fs")["metadata"]["name"] == base
    assert _fetch_job("gpu-vllm-native-fs", "cache.tier.cpu=200GiB")["metadata"]["name"] == base
    for change in ("model_cache.revision=v1", "cache.model=Qwen/Qwen3-8B", "model_cache.image=python:3.13-slim"):
        assert _fetch_job("gpu-vllm-native-fs", change)["metadata"]["name"] != base, change


def test_a_restarted_pod_starts_at_least_3x_faster_with_the_cache_on_lustre() -> None:
    """The issue's goal: Qwen3-32B on H100 with Lustre; the table in the summary shows the same cases."""
    from stacks.review import cold_start_table

    stack_plan = plan(loading.load_preset("gke-h100-lustre"))
    on, off = cold_start_table.restart(stack_plan, True), cold_start_table.restart(stack_plan, False)
    assert off.weight_source == "huggingface" and on.weight_source == "model cache, gcp-lustre"
    assert off.modeled >= 3 * on.modeled
    summary = rendered("gke-h100-lustre").summary
    assert "| restart on its node | on the node | 65.6 GB from model cache, gcp-lustre" in summary
    assert "| restart, model cache off | on the node | 65.6 GB from huggingface" in summary
