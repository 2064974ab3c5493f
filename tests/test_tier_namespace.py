"""The shared tier's namespace (components/specs/tier_namespace.py): every field moves it, nothing harmless
does, every connector's persistent path is under it, and the change plan says when the tier goes cold.

The expected digest is computed here from a JSON text written out by hand, not read from the module."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest

from components.specs.tier_namespace import FIELD_NAMES, SET_BY, TierIdentity, tier_namespace
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review.changeplan import plan_changes, tier_goes_cold
from tests.helpers import manifests, rendered
from tests.policy_cases import RULE, recorded, violations_of

IDENTITY = TierIdentity(
    model="Qwen/Qwen3-32B",
    revision="main",
    dtype="bfloat16",
    kv_cache_dtype="bfloat16",
    tensor_parallelism=2,
    block_tokens=256,
    kv_layout="gpu",
    engine="vllm",
    image="docker.io/vllm/vllm-openai:v0.26.0",
    connector="native",
    max_model_len=40960,
)
# Another value of each field, of its type.
OTHER: dict[str, Any] = {
    "model": "Qwen/Qwen3-8B",
    "revision": "9c2a1f0e",
    "dtype": "float16",
    "kv_cache_dtype": "fp8",
    "tensor_parallelism": 4,
    "block_tokens": 16,
    "kv_layout": "amd",
    "engine": "sglang",
    "image": "docker.io/vllm/vllm-openai:v0.27.0",
    "connector": "lmcache-connector",
    "max_model_len": 32768,
}


def test_the_namespace_is_the_model_and_the_fields_sha256() -> None:
    text = (
        '{"block_tokens":256,"connector":"native","dtype":"bfloat16","engine":"vllm",'
        '"image":"docker.io/vllm/vllm-openai:v0.26.0","kv_cache_dtype":"bfloat16","kv_layout":"gpu",'
        '"max_model_len":40960,"model":"Qwen/Qwen3-32B","revision":"main","tensor_parallelism":2}'
    )
    assert tier_namespace(IDENTITY) == f"Qwen3-32B-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    assert tier_namespace(dataclasses.replace(IDENTITY)) == tier_namespace(IDENTITY)  # stable


def test_every_field_is_listed_and_says_what_sets_it() -> None:
    assert set(OTHER) == set(FIELD_NAMES) == set(SET_BY)


@pytest.mark.parametrize("field", FIELD_NAMES)
def test_each_field_moves_the_namespaces_digest(field: str) -> None:
    """The digest itself, not only the readable model part: two organisations' models of one name differ."""
    moved = dataclasses.replace(IDENTITY, **{field: OTHER[field]})
    assert tier_namespace(moved).rsplit("-", 1)[1] != tier_namespace(IDENTITY).rsplit("-", 1)[1]
    if field == "model":
        fork = tier_namespace(dataclasses.replace(IDENTITY, model="someone/Qwen3-32B"))
        assert fork.startswith("Qwen3-32B-") and fork != tier_namespace(IDENTITY)


def test_a_model_name_becomes_one_safe_directory() -> None:
    odd = dataclasses.replace(IDENTITY, model="org/a model:v2/../x")
    namespace = tier_namespace(odd)
    assert "/" not in namespace and ".." not in namespace and " " not in namespace
    assert namespace.startswith("a-model-v2-x-")


def _identity(*overrides: str) -> TierIdentity:
    identity = plan(loading.load_preset("gpu-vllm-native-fs", list(overrides))).model_server.tier_identity
    assert identity is not None
    return identity


def _moved(*overrides: str) -> set[str]:
    before, after = dataclasses.asdict(_identity()), dataclasses.asdict(_identity(*overrides))
    return {k for k in before if before[k] != after[k]}


@pytest.mark.parametrize(
    ("overrides", "fields"),
    [
        (("model_cache.revision=9c2a1f0e",), {"revision"}),
        (("cache.tensor_parallelism=4",), {"tensor_parallelism"}),
        (("cache.model=Qwen/Qwen3-8B",), {"model"}),
        (("cache.image=docker.io/vllm/vllm-openai:v0.27.0",), {"image"}),
        (("cache.max_model_len=32768",), {"max_model_len"}),
        (("cache.connector=lmcache-connector",), {"connector"}),  # LMCache's chunk is 256 tokens too
        (("cache.server=sglang",), {"engine", "image", "connector", "block_tokens"}),
        (("cache.accelerator=xpu",), {"kv_layout", "image", "tensor_parallelism", "max_model_len"}),
    ],
)
def test_a_config_change_that_changes_the_kv_moves_the_namespace(overrides: tuple[str, ...], fields: set[str]) -> None:
    assert _moved(*overrides) == fields


@pytest.mark.parametrize(
    "overrides",
    [
        ("cache.replicas=3",),
        ("cache.tier.cpu=50GiB",),
        ("cache.memory_fraction=0.85",),
        ("storage.size=12000Gi",),
        ("router.release=other-router",),
        ("monitoring.enabled=true",),
        # Without the model cache the servers load the Hub's default branch: the revision is not theirs.
        ("model_cache.mode=off", "model_cache.revision=9c2a1f0e"),
    ],
)
def test_a_harmless_change_keeps_the_namespace(overrides: tuple[str, ...]) -> None:
    assert _moved(*overrides) == set()


def test_only_a_persistent_tier_has_a_namespace() -> None:
    assert plan(loading.load_preset("gpu-vllm-native-cpu", [])).model_server.tier_identity is None
    workload = next(o for o in manifests(rendered("gpu-vllm-native-cpu")) if o["kind"] == "Deployment")
    assert "llm-d.ai/kv-tier-namespace" not in workload["metadata"]["annotations"]


def _by_name(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container["env"]}


@pytest.mark.parametrize(
    "preset",
    ["gpu-vllm-native-fs", "gpu-vllm-lmcache-connector-fs", "gpu-sglang-native-fs", "gpu-vllm-mooncake-store-fs"],
)
def test_every_connector_persists_under_its_namespace_and_the_workload_says_which(preset: str) -> None:
    objects = manifests(rendered(preset))
    namespace = plan(loading.load_preset(preset, [])).model_server.tier_namespace
    server = next(o for o in objects if o["kind"] == "Deployment" and "llm-d.ai/kv-transfer-block-tokens" in str(o))
    annotations = server["metadata"]["annotations"]
    assert annotations["llm-d.ai/kv-tier-namespace"] == namespace
    assert json.loads(annotations["llm-d.ai/kv-tier-identity"])["model"] == "Qwen/Qwen3-32B"
    container = server["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    if preset == "gpu-vllm-native-fs":
        path = json.loads(args[args.index("--kv-transfer-config") + 1])["kv_connector_extra_config"]["secondary_tiers"][
            0
        ]["root_dir"]
    elif preset == "gpu-vllm-lmcache-connector-fs":
        path = _env(container)["LMCACHE_LOCAL_DISK"]
    elif preset == "gpu-sglang-native-fs":
        path = _env(container)["SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR"]
    else:
        client = _by_name(objects, "DaemonSet", "mooncake-client")["spec"]["template"]["spec"]
        path = next(v["hostPath"]["path"] for v in client["volumes"] if "hostPath" in v)
    root = {"gpu-vllm-mooncake-store-fs": "/mnt/mooncake-offload"}.get(preset, "/mnt/files-storage")
    assert path.removeprefix("file://").rstrip("/") == f"{root}/{namespace}"
    if preset != "gpu-vllm-mooncake-store-fs":  # the shared claim's evictor reclaims every other namespace first
        evictor = _by_name(objects, "Deployment", "tier-evictor")["spec"]["template"]["spec"]["containers"][0]
        assert _env(evictor)["LIVE_NAMESPACES"] == namespace


def _rows(preset: str, *overrides: str) -> str:
    return rendered(preset, overrides).resources


def test_the_change_plan_says_the_tier_goes_cold_and_names_the_field() -> None:
    from stacks.review.diff import change_plan

    base = _rows("gpu-vllm-native-fs")
    moved = change_plan(base, _rows("gpu-vllm-native-fs", "model_cache.revision=9c2a1f0e"))
    [server] = [c for c in moved if c.name.endswith("gpu-vllm-decode")]
    assert server.kind == "rolling"
    assert "**the shared tier goes cold**" in server.why
    assert "`revision` main → 9c2a1f0e (set by model_cache.revision)" in server.why
    tp = change_plan(base, _rows("gpu-vllm-native-fs", "cache.tensor_parallelism=4"))
    assert "`tensor_parallelism` 2 → 4 (set by cache.tensor_parallelism)" in next(
        c.why for c in tp if c.name.endswith("gpu-vllm-decode")
    )
    harmless = change_plan(base, _rows("gpu-vllm-native-fs", "cache.replicas=3"))
    assert harmless and not any("goes cold" in c.why for c in harmless)


def _row(annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "kubernetes:apps/v1:Deployment",
        "name": "gpu-vllm-decode",
        "inputs": {"metadata": {"annotations": annotations}, "spec": {"template": {"spec": {}}}},
    }


def test_a_base_without_namespaces_goes_cold_and_a_kept_namespace_does_not() -> None:
    stamped = {"llm-d.ai/kv-tier-namespace": "Qwen3-32B-aaaaaaaaaaaa", "llm-d.ai/kv-tier-identity": "{}"}
    assert "outside any namespace" in tier_goes_cold(_row({}), _row(stamped))
    assert tier_goes_cold(_row(stamped), _row(stamped)) == ""
    assert tier_goes_cold(_row(stamped), _row({})) == ""  # the tier removed: the plan's other lines say it
    key = ("kubernetes:apps/v1:Deployment", "gpu-vllm-decode")
    [change] = plan_changes({key: _row({})}, {key: _row(stamped)}, {key: ["metadata.annotations"]})
    assert change.kind == "update" and "goes cold" in change.why


def test_the_mooncake_clients_namespace_passes_the_host_path_rule_and_climbing_out_does_not() -> None:
    recording = recorded("gpu-vllm-mooncake-store-fs")
    assert violations_of(RULE["host-paths"], recording) == []
    client = next(r for r in recording if r.type == "kubernetes:apps/v1:DaemonSet" and r.name.endswith("client"))
    volume = next(v for v in client.props["spec"]["template"]["spec"]["volumes"] if "hostPath" in v)
    assert volume["hostPath"]["path"].startswith("/mnt/mooncake-offload/Qwen3-32B-")
    for path in ("/mnt/mooncake-offload/../etc", "/mnt/mooncake-offloaded", "/mnt"):
        volume["hostPath"]["path"] = path
        assert violations_of(RULE["host-paths"], recording) == [f"volume offload mounts host path {path}"]
