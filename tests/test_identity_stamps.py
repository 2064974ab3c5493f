"""A number in a stamp is not a reason: the transfer-block stamp must be a block the pod's engine can move (a whole
number of its profile's KV blocks, at most the largest transfer block a connector is set to), the CPU-tier stamp must
agree with the tier the native connector's own config gives, and a container named like the TPU node-setup container
is exempt only where it runs that container's script (round 4, still open in round 5: the stamps `1` and
`99999999999999999999`, and a model server renamed `tpu-node-setup`, running privileged as root, passed every
mandatory rule)."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import labels
from components.formulas.payoff import MAX_TRANSFER_BLOCK_TOKENS
from policies.checks.ruleset import RULES
from policies.resources import Pod, Resource, pods
from tests.policy_cases import recorded

BLOCK, TIER = labels.KV_TRANSFER_BLOCK_ANNOTATION, labels.CPU_TIER_BYTES_ANNOTATION


def _server(resources: list[Resource]) -> Pod:
    return next(p for p in pods(resources) if p.labels.get(labels.ROLE_LABEL) == "decode")


def _annotations(resources: list[Resource]) -> dict[str, Any]:
    annotations: dict[str, Any] = _server(resources).owner.props["metadata"]["annotations"]
    return annotations


def _mandatory(resources: list[Resource]) -> dict[str, list[str]]:
    """The mandatory rules that fail, with their messages."""
    found = {r.name: [v.message for v in r.check(resources, r.config)] for r in RULES if r.enforcement == "mandatory"}
    return {name: messages for name, messages in found.items() if messages}


@pytest.fixture(scope="module")
def native_cpu() -> list[Resource]:
    return recorded("gpu-vllm-native-cpu")


def _fresh(name: str = "gpu-vllm-native-cpu") -> list[Resource]:
    return recorded(name)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("1", "not a whole number of the gpu profile's 16-token KV blocks"),
        ("8", "not a whole number of the gpu profile's 16-token KV blocks"),
        ("24", "not a whole number of the gpu profile's 16-token KV blocks"),
        ("99999999999999999999", "not a whole number of the gpu profile's 16-token KV blocks"),
        ("99999999999999999984", f"more than the {MAX_TRANSFER_BLOCK_TOKENS:,} tokens"),
        (str(MAX_TRANSFER_BLOCK_TOKENS + 16), f"more than the {MAX_TRANSFER_BLOCK_TOKENS:,} tokens"),
    ],
)
def test_a_transfer_block_no_engine_moves_fails_identity(value: str, why: str) -> None:
    resources = _fresh()
    _annotations(resources)[BLOCK] = value
    failed = _mandatory(resources)
    assert list(failed) == ["identity-labels"]
    [message] = failed["identity-labels"]
    assert message.startswith(f"it carries {BLOCK}: {value!r}, {why}"), message


@pytest.mark.parametrize("value", ["16", "32", "256", str(MAX_TRANSFER_BLOCK_TOKENS)])
def test_a_transfer_block_of_whole_kv_blocks_within_the_bound_passes(value: str) -> None:
    """The edges: one KV block, a few, the largest bound itself."""
    resources = _fresh()
    _annotations(resources)[BLOCK] = value
    assert _mandatory(resources) == {}


def test_the_xpu_profiles_own_kv_block_is_the_unit() -> None:
    """XPU's overlays run vLLM with 64-token blocks: 64 passes, 16 (a GPU's block) does not."""
    resources = _fresh("xpu-vllm-native-cpu")
    assert _annotations(resources)[BLOCK] == "64" and _mandatory(resources) == {}
    _annotations(resources)[BLOCK] = "16"
    [message] = _mandatory(resources)["identity-labels"]
    assert "not a whole number of the xpu profile's 64-token KV blocks" in message


@pytest.mark.parametrize("value", ["1", "0", "322122547199", "99999999999999999999"])
def test_a_cpu_tier_stamp_that_disagrees_with_the_native_connectors_config_fails(value: str) -> None:
    resources = _fresh()
    assert _annotations(resources)[TIER] == "322122547200"
    _annotations(resources)[TIER] = value
    messages = _mandatory(resources).get("identity-labels", [])
    assert (
        f"it carries {TIER}: {value!r}, not the 322122547200 bytes its native connector's kv-transfer config gives"
        " (cpu_bytes_to_use)" in " | ".join(messages)
    ), messages


def _renamed(resources: list[Resource]) -> dict[str, Any]:
    """The model server renamed like the TPU node-setup container, privileged and root."""
    container: dict[str, Any] = next(iter(_server(resources).containers(init=False)))
    container["name"] = "tpu-node-setup"
    context = container.setdefault("securityContext", {})
    context.update({"privileged": True, "runAsUser": 0})
    context.pop("runAsNonRoot", None)
    return container


def test_a_container_named_like_the_tpu_setup_container_is_not_exempt() -> None:
    resources = _fresh()
    _renamed(resources)
    failed = _mandatory(resources)
    assert {"privileged-containers", "root-containers"} <= set(failed), failed
    assert failed["privileged-containers"] == ["container tpu-node-setup is privileged"]


def test_the_tpu_setup_container_itself_stays_exempt() -> None:
    """The TPU stacks' own init container (its name, script and no arguments) passes; the same name running
    anything else, or the script with an argument more, does not."""
    resources = _fresh("tpu-v6-vllm-native-cpu")
    assert _mandatory(resources) == {}
    setup = next(c for c in _server(resources).containers() if c.get("name") == "tpu-node-setup")
    setup["args"] = ["; id"]
    assert "privileged-containers" in _mandatory(resources)
