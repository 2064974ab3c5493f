"""The P/D invariants as mandatory rules: each passes on the rendered P/D preset and trips on a hand-edited copy
of it (llm-d pd-disaggregation README.multi-tier.md: one block size, one hash seed, per-rank ports, the CPU
budget per engine x local ranks, NIXL on both sides)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.units import GiB
from policies.resources import Resource
from tests.policy_cases import RULE, chart_values_of, recorded, violations_of

PRESET = "gpu-vllm-native-pd"  # prefill: 2 engines x 100 GiB a pod, limit 256 GiB; decode: NIXL alone


@pytest.fixture(scope="module")
def clean() -> list[Resource]:
    return recorded(PRESET)


def _copy(resources: list[Resource]) -> list[Resource]:
    return [Resource(r.type, r.name, copy.deepcopy(r.props)) for r in resources]


def _container(resources: list[Resource], role: str) -> dict[str, Any]:
    deployment = next(r for r in resources if r.type.endswith("Deployment") and r.name.endswith(f"-{role}"))
    container: dict[str, Any] = deployment.props["spec"]["template"]["spec"]["containers"][0]
    return container


def _set_arg(container: dict[str, Any], prefix: str, value: str) -> None:
    args = container["args"]
    args[next(i for i, a in enumerate(args) if a.startswith(prefix))] = f"{prefix}{value}"


def _kv(container: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    args = container["args"]
    i = args.index("--kv-transfer-config") + 1
    return i, json.loads(args[i])


@pytest.mark.parametrize(
    "rule",
    ["pd-block-size", "pd-hash-seed", "pd-rank-ports", "pd-handoff-both-sides", "memory-limit-covers-tier"],
)
def test_the_preset_is_clean(clean: list[Resource], rule: str) -> None:
    assert violations_of(RULE[rule], clean) == []


def test_engine_block_unlike_the_router_s_trips(clean: list[Resource]) -> None:
    resources = _copy(clean)
    _set_arg(_container(resources, "decode"), "--block-size=", "16")
    messages = violations_of(RULE["pd-block-size"], resources)
    assert messages and all("--block-size 16" in m and "blockSizeTokens 128" in m for m in messages)
    assert len(messages) == 2  # against each of the router's two producers


def test_router_block_unlike_the_engines_trips(clean: list[Resource]) -> None:
    resources = _copy(clean)
    plugins = chart_values_of(resources)["router"]["epp"]["pluginsConfig"]["plugins"]
    next(p for p in plugins if p.get("name") == "cpu-prefix-cache-producer")["parameters"]["blockSizeTokens"] = 64
    assert len(violations_of(RULE["pd-block-size"], resources)) == 2  # both engines' pods


def test_a_second_hash_seed_trips(clean: list[Resource]) -> None:
    resources = _copy(clean)
    seed = next(e for e in _container(resources, "decode")["env"] if e["name"] == "PYTHONHASHSEED")
    seed["value"] = "42"
    [message] = violations_of(RULE["pd-hash-seed"], resources)
    assert "(0: llmd-model-server-prefill-gpu-vllm-prefill; 42: llmd-model-server-gpu-vllm-decode)" in message


def test_a_missing_hash_seed_trips(clean: list[Resource]) -> None:
    resources = _copy(clean)
    container = _container(resources, "prefill")
    container["env"] = [e for e in container["env"] if e["name"] != "PYTHONHASHSEED"]
    assert any("without PYTHONHASHSEED" in m for m in violations_of(RULE["pd-hash-seed"], resources))


def test_an_engine_without_its_handshake_port_trips(clean: list[Resource]) -> None:
    """Two engines listen on 5600 and 5601; drop the second's port."""
    resources = _copy(clean)
    container = _container(resources, "prefill")
    container["ports"] = [p for p in container["ports"] if p["containerPort"] != 5601]
    [message] = violations_of(RULE["pd-rank-ports"], resources)
    assert "runs 2 engines" in message and "[5601]" in message


def test_more_engines_than_declared_ports_trips(clean: list[Resource]) -> None:
    resources = _copy(clean)
    _set_arg(_container(resources, "prefill"), "--data-parallel-size=", "3")
    [message] = violations_of(RULE["pd-rank-ports"], resources)
    assert "[5602]" in message


def test_cpu_bytes_times_local_ranks_over_the_limit_trips(clean: list[Resource]) -> None:
    """3 engines x 100 GiB = 300 GiB > the 256 GiB limit, though each engine's 100 GiB alone fits and the stamp
    (200 GiB) is unchanged: the rule counts the engines from the command line."""
    resources = _copy(clean)
    _set_arg(_container(resources, "prefill"), "--data-parallel-size=", "3")
    [message] = violations_of(RULE["memory-limit-covers-tier"], resources)
    assert f"({300 * GiB} bytes)" in message and "256Gi" in message


def test_two_engines_within_the_limit_pass(clean: list[Resource]) -> None:
    """The other side of the boundary: 2 x 100 GiB = 200 GiB under a 208 GiB /dev/shm and 256 GiB limit."""
    resources = _copy(clean)
    _container(resources, "prefill")["resources"]["limits"]["memory"] = "208Gi"
    assert violations_of(RULE["memory-limit-covers-tier"], resources) == []
    _container(resources, "prefill")["resources"]["limits"]["memory"] = "199Gi"
    assert violations_of(RULE["memory-limit-covers-tier"], resources)


def test_decode_without_the_handoff_trips(clean: list[Resource]) -> None:
    resources = _copy(clean)
    container = _container(resources, "decode")
    i, _ = _kv(container)
    container["args"][i] = json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both"})
    [message] = violations_of(RULE["pd-handoff-both-sides"], resources)
    assert "(decode) runs no handoff" in message


def test_prefill_multiconnector_without_nixl_trips(clean: list[Resource]) -> None:
    resources = _copy(clean)
    container = _container(resources, "prefill")
    i, config = _kv(container)
    inner = config["kv_connector_extra_config"]["connectors"]
    config["kv_connector_extra_config"]["connectors"] = [c for c in inner if c["kv_connector"] != "NixlConnector"]
    container["args"][i] = json.dumps(config)
    messages = violations_of(RULE["pd-handoff-both-sides"], resources)
    assert any("(prefill) runs no handoff" in m for m in messages)
