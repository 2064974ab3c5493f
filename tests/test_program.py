"""`__main__.py`'s path: Pulumi config (structured `llmd:` keys, secret hfToken) through the real program."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc, settings
from pulumi.runtime.config import set_all_config

from stacks.program import run


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


def _run_program(config: dict[str, str], secret_keys: list[str]) -> _Mocks:
    asyncio.set_event_loop(asyncio.new_event_loop())
    settings.ROOT.set(None)
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, project="llmd", stack="test", preview=False)
    set_all_config(config, secret_keys)
    try:
        pulumi.runtime.test(run)()  # type: ignore[no-untyped-call]
    finally:
        set_all_config({}, [])
    return mocks


def test_stack_config_reaches_the_resources_and_the_token_stays_secret() -> None:
    mocks = _run_program(
        {
            "llmd:preset": "dev",
            "llmd:cache": json.dumps({"replicas": 3}),
            "llmd:hfToken": "hf_program_test_token",
        },
        ["llmd:hfToken"],
    )
    deployment = next(r for r in mocks.resources if r.typ == "kubernetes:apps/v1:Deployment")
    assert deployment.inputs["spec"]["replicas"] == 3
    assert "Qwen/Qwen3-0.6B" in deployment.inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    secret = next(r for r in mocks.resources if r.typ == "kubernetes:core/v1:Secret")
    assert rpc.is_rpc_secret(secret.inputs["stringData"])
    assert "hf_program_test_token" not in json.dumps(deployment.inputs)


def test_bad_stack_config_is_a_run_error_with_one_line() -> None:
    with pytest.raises(pulumi.RunError, match=r"^invalid stack config: cache.replicas = 'banana'"):
        _run_program({"llmd:cache": json.dumps({"replicas": "banana"}), "llmd:hfToken": "x"}, ["llmd:hfToken"])


def test_a_stack_that_cannot_fit_its_nodes_is_a_run_error_with_one_line() -> None:
    """The planner's fit check (not only config parsing) runs inside the error handler."""
    config = {
        "llmd:preset": "gke-h100-lustre",
        "llmd:cache": json.dumps({"replicas": 4, "tier": {"cpu": "900GiB"}}),
        "llmd:hfToken": "x",
    }
    with pytest.raises(pulumi.RunError) as caught:
        _run_program(config, ["llmd:hfToken"])
    message = str(caught.value)
    assert message.startswith("invalid stack config: cache.tier.cpu = '900 GiB': 4 pods x 940Gi = 3760Gi per node")
    assert "\n" not in message


def test_unknown_llmd_key_is_rejected() -> None:
    with pytest.raises(pulumi.RunError, match=r"llmd:cahce"):
        _run_program({"llmd:cahce": "{}", "llmd:hfToken": "x"}, ["llmd:hfToken"])
