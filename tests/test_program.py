"""`__main__.py`'s path: Pulumi config (structured `llmd:` keys, secret hfToken) through the real program."""

from __future__ import annotations

import json

import pulumi
import pytest
from pulumi.runtime import rpc

from tests.pulumi_program import run_program


def test_stack_config_reaches_the_resources_and_the_token_stays_secret() -> None:
    mocks = run_program(
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
        run_program({"llmd:cache": json.dumps({"replicas": "banana"}), "llmd:hfToken": "x"}, ["llmd:hfToken"])


def test_a_stack_that_cannot_fit_its_nodes_is_a_run_error_with_one_line() -> None:
    """The planner's fit check (not only config parsing) runs inside the error handler."""
    config = {
        "llmd:preset": "gke-h100-lustre",
        "llmd:cache": json.dumps({"replicas": 4, "tier": {"cpu": "900GiB"}}),
        "llmd:hfToken": "x",
    }
    with pytest.raises(pulumi.RunError) as caught:
        run_program(config, ["llmd:hfToken"])
    message = str(caught.value)
    assert message.startswith("invalid stack config: cache.tier.cpu = '900 GiB': 4 pods x 940Gi = 3760Gi per node")
    assert "\n" not in message


def test_unknown_llmd_key_is_rejected() -> None:
    with pytest.raises(pulumi.RunError, match=r"llmd:cahce"):
        run_program({"llmd:cahce": "{}", "llmd:hfToken": "x"}, ["llmd:hfToken"])


def test_a_plaintext_token_is_a_run_error_that_does_not_print_it() -> None:
    """Pulumi.yaml leaves hfToken undeclared (a cluster stack takes none), so the program checks it is a secret."""
    with pytest.raises(pulumi.RunError, match=r"^llmd:hfToken must be a secret") as caught:
        run_program({"llmd:preset": "dev", "llmd:hfToken": "hf_plaintext_token"}, [])
    assert "hf_plaintext_token" not in str(caught.value)
