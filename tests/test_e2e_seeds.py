"""The e2e's seeded tier violation: each model server's tier halved where its connector reads it, and the
pack's rule firing on exactly the stacks whose router sizes its index by that tier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from e2e import seeds

GOLDEN = Path(__file__).parent / "golden"


def _deployment(container: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [container]}}}}


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["template"]["spec"]["containers"][0])


def test_the_kv_transfer_config_tier_is_halved_and_the_input_left_alone() -> None:
    config = json.dumps(
        {"kv_connector": "OffloadingConnector", "kv_connector_extra_config": {"cpu_bytes_to_use": 1000}}
    )
    obj = _deployment({"args": ["--port=8000", "--kv-transfer-config", config]})
    out = seeds.halve_tier(obj)
    assert out is not None
    args = _container(out)["args"]
    assert json.loads(args[2])["kv_connector_extra_config"]["cpu_bytes_to_use"] == 500
    assert json.loads(_container(obj)["args"][2])["kv_connector_extra_config"]["cpu_bytes_to_use"] == 1000


def test_a_shell_line_and_an_lws_template_are_halved_too() -> None:
    line = 'exec vllm serve m --kv-transfer-config \'{"kv_connector_extra_config":{"cpu_bytes_to_use":8}}\''
    template = {"spec": {"containers": [{"command": ["sh", "-c", line]}]}}
    lws = {"spec": {"leaderWorkerTemplate": {"leaderTemplate": template, "workerTemplate": template}}}
    out = seeds.halve_tier(lws)
    assert out is not None
    for role in ("leaderTemplate", "workerTemplate"):
        assert (
            '"cpu_bytes_to_use":4' in out["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"][0]["command"][2]
        )


@pytest.mark.parametrize(
    ("container", "want"),
    [
        ({"args": ["--hicache-size", "200"]}, ("args", 1, "100")),
        ({"args": ["serve --hicache-size=200 --x"]}, ("args", 0, "serve --hicache-size=100 --x")),
        ({"env": [{"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "value": "100.0"}]}, ("env", 0, "50")),
        ({"env": [{"name": "TPU_OFFLOAD_NUM_CPU_CHUNKS", "value": "9"}]}, ("env", 0, "4")),
    ],
)
def test_each_connector_setting_is_halved(container: dict[str, Any], want: tuple[str, int, str]) -> None:
    out = seeds.halve_tier(_deployment(container))
    assert out is not None
    field, index, value = want
    got = _container(out)[field][index]
    assert (got["value"] if field == "env" else got) == value


def test_a_workload_without_a_tier_is_not_changed() -> None:
    assert seeds.halve_tier(_deployment({"args": ["--port=8000"], "env": [{"name": "X", "value": "1"}]})) is None


@pytest.mark.parametrize(
    ("preset", "fires"),
    [("dev", True), ("existing-mi300", True), ("gpu-sglang-native-cpu", True), ("gpu-vllm-lmcache-server-pd", False)],
)
def test_the_rule_fires_on_the_halved_render_where_the_router_tracks_a_tier(preset: str, fires: bool) -> None:
    resources = (GOLDEN / preset / "resources.json").read_text()
    violations = seeds.tier_violations(resources)
    assert bool(violations) is fires
    assert all("lruCapacityPerServer" in v for v in violations)
