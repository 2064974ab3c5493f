"""`cache.disaggregation`: P/D over NIXL with the CPU tier on the prefill pods (llm-d's P/D Multi Tier path). The
render's shapes against hand arithmetic, and every refusal one line."""

from __future__ import annotations

from typing import Any

import pytest

from components.units import GiB
from policies.resources import kv_transfer_config
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import StackPlan, plan

PRESET = "gpu-vllm-native-pd"  # prefill 2 pods x 2 engines of TP 2, decode 1 pod of TP 4, 100 GiB per engine


def _plan(*overrides: str, preset: str = PRESET) -> StackPlan:
    return plan(loading.load_preset(preset, list(overrides)))


def _deployment(p: StackPlan, role: str) -> dict[str, Any]:
    role_plan = next(r for r in p.roles if r.spec.role == role)
    deployment: dict[str, Any] = role_plan.manifests[-1]
    return deployment


def _container(p: StackPlan, role: str) -> dict[str, Any]:
    container: dict[str, Any] = _deployment(p, role)["spec"]["template"]["spec"]["containers"][0]
    return container


def _kv(container: dict[str, Any]) -> dict[str, Any]:
    config = kv_transfer_config(container)
    assert config is not None
    return config


def test_prefill_runs_nixl_and_the_cpu_tier_decode_nixl_alone() -> None:
    p = _plan()
    prefill, decode = _kv(_container(p, "prefill")), _kv(_container(p, "decode"))
    assert prefill["kv_connector"] == "MultiConnector"
    inner = prefill["kv_connector_extra_config"]["connectors"]
    assert [c["kv_connector"] for c in inner] == ["NixlConnector", "OffloadingConnector"]
    assert inner[1]["kv_connector_extra_config"] == {"cpu_bytes_to_use": 100 * GiB}  # per engine, as configured
    assert decode == {"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_load_failure_policy": "recompute"}


def test_sidecar_only_on_decode_and_vllm_behind_it() -> None:
    p = _plan()
    decode_pod = _deployment(p, "decode")["spec"]["template"]["spec"]
    prefill_pod = _deployment(p, "prefill")["spec"]["template"]["spec"]
    [sidecar] = decode_pod["initContainers"]
    assert sidecar["args"][:3] == ["--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2"]
    assert "initContainers" not in prefill_pod
    assert "--port=8200" in _container(p, "decode")["args"] and "--port=8000" in _container(p, "prefill")["args"]
    assert _container(p, "decode")["readinessProbe"]["httpGet"]["port"] == "vllm"


def test_pod_memory_shm_and_router_capacity_count_every_local_engine() -> None:
    """Prefill pod: 2 engines x 100 GiB = 200 GiB in /dev/shm (+ 8 GiB headroom = 208 GiB); runtime 16 GiB + 8 GiB
    per rank x (2 TP x 2 engines) = 48 GiB; limit 256 GiB. Router: 200 GiB / (128 tokens x 256 KiB per token of
    Qwen3-32B) = 6,400 blocks per prefill pod. Decode pod: no tier, 8 GiB /dev/shm + 16 + 8 x 4 = 56 GiB."""
    p = _plan()
    prefill = _container(p, "prefill")
    assert prefill["resources"]["limits"]["memory"] == "256Gi"
    volumes = _deployment(p, "prefill")["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "shm")["emptyDir"]["sizeLimit"] == "208Gi"
    assert _container(p, "decode")["resources"]["limits"]["memory"] == "56Gi"
    assert prefill["resources"]["limits"]["nvidia.com/gpu"] == 4 and "--data-parallel-size=2" in prefill["args"]
    plugins = p.router_values["router"]["epp"]["pluginsConfig"]["plugins"]
    cpu = next(x for x in plugins if x.get("name") == "cpu-prefix-cache-producer")["parameters"]
    assert cpu == {"blockSizeTokens": 128, "autoTune": False, "lruCapacityPerServer": 6400}
    annotations = _deployment(p, "prefill")["metadata"]["annotations"]
    assert annotations["llm-d.ai/cpu-tier-bytes"] == str(200 * GiB)


def test_four_engines_a_pod_reserve_four_tiers() -> None:
    """The guide's warning: DP=8 with 100 GiB each reserves 800 GiB; here 4 x 50 GiB = 200 GiB + 8 headroom."""
    p = _plan(
        "cache.tier.cpu=50GiB",
        "cache.disaggregation.prefill.tensor_parallelism=1",
        "cache.disaggregation.prefill.data_parallelism=4",
        "cache.model=Qwen/Qwen3-8B",
    )
    volumes = _deployment(p, "prefill")["spec"]["template"]["spec"]["volumes"]
    assert next(v for v in volumes if v["name"] == "shm")["emptyDir"]["sizeLimit"] == "208Gi"
    ports = [x["containerPort"] for x in _container(p, "prefill")["ports"]]
    assert ports == [8000, 5600, 5601, 5602, 5603]  # one NIXL handshake port per local engine


def test_one_block_size_and_one_hash_seed() -> None:
    p = _plan()
    for role in ("prefill", "decode"):
        container = _container(p, role)
        assert "--block-size=128" in container["args"]
        assert {"name": "PYTHONHASHSEED", "value": "0"} in container["env"]


def test_amd_preset_renders_nixl_on_rocm() -> None:
    p = _plan(preset="amd-vllm-native-pd")
    assert _kv(_container(p, "decode"))["kv_connector"] == "NixlConnector"
    assert "amd.com/gpu" in _container(p, "prefill")["resources"]["limits"]
    assert _container(p, "prefill")["command"] == ["/bin/bash", "-c"]  # the ROCm load-path patch, where it loads
    assert _container(p, "decode")["command"] == ["vllm", "serve"]  # no tier to load from


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (("cache.server=sglang",), "cache.disaggregation", "SGLang's decode-side radix cache"),
        (("cache.connector=lmcache-connector",), "cache.disaggregation", "cache.connector native only"),
        (("cache.disaggregation.decode.accelerator=tpu-v6",), "cache.disaggregation.decode.accelerator", "nixl runs"),
        (("cache.disaggregation.prefill.data_parallelism=8",), "cache.disaggregation.prefill.data_parallelism", "16"),
        (("cache.replicas=2",), "cache.replicas", "each pool counts its own"),
        (("autoscaling.enabled=true",), "autoscaling.enabled", "not with cache.disaggregation"),
        (("cache.node_pool=nope",), "cache.node_pool", "allowed: "),  # the pools default to it (was a KeyError)
    ],
)
def test_what_cannot_run_it_is_refused_in_one_line(overrides: tuple[str, ...], field: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _plan(*overrides)
    assert caught.value.field == field and says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_within_the_node_is_accepted() -> None:
    """The boundary beside the refusal above: 2 TP x 4 engines = 8 devices, a whole H100 node."""
    p = _plan("cache.disaggregation.prefill.data_parallelism=4", "cache.tier.cpu=20GiB")
    assert _container(p, "prefill")["resources"]["limits"]["nvidia.com/gpu"] == 8


def test_aggregated_stack_is_untouched() -> None:
    p = _plan(preset="gpu-vllm-native-cpu")
    assert [r.spec.role for r in p.roles] == ["decode"]
    assert _kv(_container(p, "decode"))["kv_connector"] == "OffloadingConnector"


def test_filesystem_tier_sits_under_the_prefill_cpu_tier() -> None:
    """`cache.tier.variant: fs`: the prefill pods' OffloadingConnector tiers to the shared claim (TieringOffloadingSpec,
    256-token offload blocks over the engines' 128), in a namespace named for the prefill pool's own shape."""
    p = _plan("cache.tier.variant=fs", "cache.disaggregation.prefill.tensor_parallelism=4")
    offload = _kv(_container(p, "prefill"))["kv_connector_extra_config"]["connectors"][1]
    assert offload["kv_connector_extra_config"]["spec_name"] == "TieringOffloadingSpec"
    assert offload["kv_connector_extra_config"]["block_size"] == 256
    prefill = next(r.spec for r in p.roles if r.spec.role == "prefill")
    assert prefill.tier_identity is not None and prefill.tier_identity.tensor_parallelism == 4
    assert _kv(_container(p, "decode"))["kv_connector"] == "NixlConnector"
