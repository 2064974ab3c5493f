"""The LMCache integration seed: server, prefix reuse, P/D disaggregation and prefix-aware routing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stacks.config import loading
from stacks.config.errors import ConfigError
from tests.helpers import by_kind, manifests, rendered, resources, router_chart

REUSE, PD, ROUTING = "gpu-vllm-lmcache-server", "gpu-vllm-lmcache-server-pd", "gpu-vllm-lmcache-server-routing"


def _objects(name: str, *overrides: str) -> list[dict[str, Any]]:
    return manifests(rendered(name, tuple(overrides)))


def _deployment(objects: list[dict[str, Any]], role: str) -> dict[str, Any]:
    return next(
        d
        for d in by_kind(objects, "Deployment")
        if d["spec"]["template"]["metadata"]["labels"].get("llm-d.ai/role") == role
    )


def _modelserver(objects: list[dict[str, Any]], role: str = "decode") -> dict[str, Any]:
    container: dict[str, Any] = _deployment(objects, role)["spec"]["template"]["spec"]["containers"][0]
    return container


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def _router(name: str, *overrides: str) -> dict[str, Any]:
    chart = router_chart(resources(rendered(name, tuple(overrides))))
    router: dict[str, Any] = chart["inputs"]["values"]["router"]
    return router


def _server(objects: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = by_kind(objects, "DaemonSet")[0]["spec"]["template"]["spec"]["containers"][0]
    return container


def _connection(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    config_map = next(o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "lmcache-engine-connection")
    return {key: json.loads(text) for key, text in config_map["data"].items()}


def test_server_daemonset_service_and_connection_configmap() -> None:
    objects = _objects(REUSE)
    server = _server(objects)
    assert server["image"] == "lmcache/vllm-openai:v0.5.6"
    assert server["command"] == ["/opt/venv/bin/lmcache", "server"]
    assert server["args"] == [
        "--host=0.0.0.0", "--port=5555", "--http-port=8080", "--l1-size-gb=20", "--chunk-size=256",
        "--max-workers=1", "--hash-algorithm=blake3", "--isolated-ipc", "--eviction-policy=LRU",
        "--eviction-trigger-watermark=0.80", "--eviction-ratio=0.20", "--prometheus-port=9090",
    ]  # fmt: skip
    assert _env(server) == {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "all"}
    assert server["resources"] == {"requests": {"cpu": "2", "memory": "25Gi"}, "limits": {"memory": "38Gi"}}
    assert server["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsUser": 0,  # the seed's: the image's root user, beside its CUDA IPC clients
    }
    [service] = by_kind(objects, "Service")
    assert service["spec"]["internalTrafficPolicy"] == "Local"
    connection = _connection(objects)
    assert set(connection) == {
        "kv-transfer-config.json",
        "kv-transfer-config-prefiller.json",
        "kv-transfer-config-decoder.json",
    }
    assert connection["kv-transfer-config.json"]["kv_connector_extra_config"] == {
        "lmcache.mp.host": "tcp://lmcache-engine.llm-d.svc.cluster.local",
        "lmcache.mp.port": 5555,  # the seed: "5555"; LMCache's default is an integer
        "lmcache.mp.isolated_ipc": True,
    }
    prefiller = connection["kv-transfer-config-prefiller.json"]
    assert prefiller["kv_role"] == "kv_producer"
    assert [c["kv_connector"] for c in prefiller["kv_connector_extra_config"]["connectors"]] == [
        "NixlConnector",
        "LMCacheMPConnector",
    ]


def test_isolated_ipc_flag_and_connector_setting_move_together() -> None:
    objects = _objects(REUSE, "lmcache.isolated_ipc=false")
    assert "--isolated-ipc" not in _server(objects)["args"]
    for config in _connection(objects).values():
        connectors = config.get("kv_connector_extra_config", {}).get("connectors", [config])
        lmcache = next(c for c in connectors if c["kv_connector"] == "LMCacheMPConnector")
        assert lmcache["kv_connector_extra_config"]["lmcache.mp.isolated_ipc"] is False


def test_server_memory_follows_the_l1_size_and_privileged_is_an_option() -> None:
    objects = _objects(REUSE, "cache.tier.cpu=40GiB", "lmcache.privileged=true")
    server = _server(objects)
    assert "--l1-size-gb=40" in server["args"]
    assert server["resources"]["requests"]["memory"] == "45Gi"
    assert server["securityContext"] == {"privileged": True}


def test_changing_the_lmcache_version_moves_server_and_every_vllm_image_together() -> None:
    for name in (REUSE, PD):
        objects = _objects(name, "lmcache.version=v0.6.0")
        images = {
            c["image"] for d in by_kind(objects, "Deployment") for c in d["spec"]["template"]["spec"]["containers"]
        }
        images.add(_server(objects)["image"])
        assert images == {"lmcache/vllm-openai:v0.6.0"}


def test_prefix_reuse_decode_pod() -> None:
    objects = _objects(REUSE)
    container = _modelserver(objects)
    assert container["image"] == "lmcache/vllm-openai:v0.5.6"
    assert container["args"] == ["Qwen/Qwen3-0.6B", "--port=8000", "--kv-transfer-config", "$(LMCACHE_KV_CONFIG)"]
    env = _env(container)
    assert env["PYTHONHASHSEED"] == "0"
    assert env["LMCACHE_KV_CONFIG"] == {
        "configMapKeyRef": {"name": "lmcache-engine-connection", "key": "kv-transfer-config.json"}
    }
    pod = _deployment(objects, "decode")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 120
    assert pod["volumes"] == [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]
    assert _router(REUSE)["modelServers"]["matchLabels"] == {"llm-d.ai/guide": "lmcache"}
    assert "pluginsConfig" not in _router(REUSE)["epp"]  # one pod: the chart's default plugins


def test_test_mode_disables_vllm_prefix_caching_only_when_asked() -> None:
    assert "--no-enable-prefix-caching" in _modelserver(_objects(REUSE, "lmcache.test_mode=true"))["args"]
    pd = _objects(PD, "lmcache.test_mode=true")
    assert "--no-enable-prefix-caching" in _modelserver(pd, "prefill")["args"]
    assert "--no-enable-prefix-caching" not in _modelserver(pd, "decode")["args"]
    assert "--no-enable-prefix-caching" not in _modelserver(_objects(PD), "prefill")["args"]


def test_pd_prefill_and_decode_pods() -> None:
    objects = _objects(PD)
    prefill, decode = _modelserver(objects, "prefill"), _modelserver(objects, "decode")
    assert prefill["args"] == [
        "Qwen/Qwen3-0.6B", "--port=8000", "--disable-hybrid-kv-cache-manager",
        "--kv-transfer-config", "$(LMCACHE_KV_CONFIG)",
    ]  # fmt: skip
    assert decode["args"] == [
        "Qwen/Qwen3-0.6B", "--port=8200", "--enable-prompt-tokens-details", "--disable-hybrid-kv-cache-manager",
        "--kv-transfer-config", "$(LMCACHE_KV_CONFIG)",
    ]  # fmt: skip
    for container, key in ((prefill, "kv-transfer-config-prefiller.json"), (decode, "kv-transfer-config-decoder.json")):
        env = _env(container)
        assert env["LMCACHE_KV_CONFIG"]["configMapKeyRef"]["key"] == key
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        assert env["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"] == "120"
    [sidecar] = _deployment(objects, "decode")["spec"]["template"]["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["image"] == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v1.0.0"
    assert sidecar["args"] == [
        "--port=8000",
        "--model-server-port=8200",
        "--kv-connector=nixlv2",
        "--secure-serving=false",
    ]
    router = _router(PD)
    assert router["inferencePool"]["create"] is False
    assert router["modelServers"]["matchLabels"] == {"llm-d.ai/guide": "lmcache-pd"}
    assert router["modelServers"]["targetPorts"] == [{"number": 8000}]
    assert router["epp"]["pluginsConfigFile"] == "pd-plugins.yaml"
    profiles = {p["name"] for p in router["epp"]["pluginsConfig"]["schedulingProfiles"]}
    assert profiles == {"prefill", "decode"}


def test_pd_sidecar_follows_the_router_version() -> None:
    objects = _objects(PD, "router.version=v1.0.1")
    [sidecar] = _deployment(objects, "decode")["spec"]["template"]["spec"]["initContainers"]
    assert sidecar["image"].endswith(":v1.0.1")


def test_prefix_aware_routing_adds_the_tokenizer_and_token_producer() -> None:
    router = _router(ROUTING)
    assert router["tokenizer"]["enabled"] is True
    assert router["tokenizer"]["modelName"] == "Qwen/Qwen3-0.6B"
    config = router["epp"]["pluginsConfig"]
    producer = next(p for p in config["plugins"] if p["type"] == "token-producer")
    assert producer["parameters"] == {
        "modelName": "Qwen/Qwen3-0.6B",
        "vllm": {"url": "http://localhost:8000", "timeout": "10s"},
    }
    weights = {p["pluginRef"]: p["weight"] for p in config["schedulingProfiles"][0]["plugins"]}
    assert weights == {"queue-scorer": 2, "kv-cache-utilization-scorer": 2, "prefix-cache-scorer": 3}
    assert _deployment(_objects(ROUTING), "decode")["spec"]["replicas"] == 2


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["router.match_labels={llm-d.ai/guide: tiered-prefix-cache}"], "router.match_labels = {'llm-d.ai/guide': "),
        (["lmcache.chunk_size=100"], "lmcache.chunk_size = 100: must be a multiple of the model server's 16-token"),
    ],
)
def test_troubleshooting_table_failures_are_config_errors(overrides: list[str], message: str) -> None:
    from stacks.planning.plan import plan

    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("{", r"\{")):
        plan(loading.load_preset(REUSE, overrides))


def test_lmcache_settings_need_the_lmcache_server_connector() -> None:
    with pytest.raises(ConfigError, match=r"lmcache = \['mode'\]: applies only with cache.connector lmcache-server"):
        loading.load_preset("gpu-vllm-native-cpu", ["lmcache.mode=pd"])
