"""Secrets never echo (issue 11 §2): a canary planted in every secret-capable input appears in no output,
no error and no log; secure structured config stays a secret to the provider input."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc

from stacks.__main__ import main
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from stacks.review.render import render
from tests.pulumi_program import run_program

CANARY = "hf_CANARY_c4n4ry_s3cr3t_never_printed"
KUBECONFIG_CANARY = f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {CANARY}\n"


def _in_clear(value: Any) -> Any:
    """Inputs as a state file or a diff shows them: secrets as `[secret]`."""
    if rpc.is_rpc_secret(value):
        return "[secret]"
    if isinstance(value, dict):
        return {k: _in_clear(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_in_clear(v) for v in value]
    return value


def test_canary_token_and_kubeconfig_stay_secret_through_the_program(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    mocks = run_program(
        {
            "llmd:preset": "dev",
            "llmd:hfToken": CANARY,
            # `pulumi config set --secret --path llmd:cluster.kubeconfig "$(cat kubeconfig)"`
            "llmd:cluster": json.dumps({"kubeconfig": KUBECONFIG_CANARY, "context": "gpu"}),
        },
        ["llmd:hfToken", "llmd:cluster"],
    )
    clear = json.dumps([{"type": r.typ, "name": r.name, "inputs": _in_clear(r.inputs)} for r in mocks.resources])
    assert CANARY not in clear
    provider = next(r for r in mocks.resources if r.typ == "pulumi:providers:kubernetes")
    assert rpc.is_rpc_secret(provider.inputs["kubeconfig"])
    assert provider.inputs["context"] == "gpu"
    secret = next(r for r in mocks.resources if r.typ == "kubernetes:core/v1:Secret")
    assert rpc.is_rpc_secret(secret.inputs["stringData"])
    logged = capsys.readouterr()
    assert CANARY not in logged.out + logged.err + caplog.text


SECRET_ERRORS = [
    # A secret under a mistyped key: the unknown-key error does not print it.
    ({"llmd:hftoken": CANARY}, ["llmd:hftoken"], "llmd:hftoken = (not shown): unknown key"),
    ({"llmd:cluster": json.dumps({"kubeconfig": CANARY, "kubeconfg": CANARY})}, [], "cluster.kubeconfg = (not shown)"),
    # A type error on secure structured config names the key, not the content.
    (
        {"llmd:cluster": json.dumps({"kubeconfig": {"inline": KUBECONFIG_CANARY}})},
        ["llmd:cluster"],
        "cluster.kubeconfig = (not shown): input should be a valid string",
    ),
    # A secure value that the error message would quote ('...' is not a size).
    (
        {"llmd:preset": "dev", "llmd:cache": json.dumps({"tier": {"cpu": CANARY}})},
        ["llmd:cache"],
        "cache.tier.cpu = (not shown): '(not shown)' is not a size",
    ),
    # Errors raised after the config loads (the plan's fit checks) hide secure values too.
    (
        {
            "llmd:preset": "existing-mi300",
            "llmd:cache": json.dumps({"node_pool": "mi300", "accelerator": "amd", "tier": {"cpu": "1900GiB"}}),
        },
        ["llmd:cache"],
        "cache.tier.cpu = (not shown): 2 pods x 1940Gi",
    ),
]


@pytest.mark.parametrize(("config", "secret_keys", "message"), SECRET_ERRORS)
def test_errors_never_print_a_secret_or_an_unknown_keys_value(
    config: dict[str, str], secret_keys: list[str], message: str
) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_program({**config, "llmd:hfToken": "hf_x"}, ["llmd:hfToken", *secret_keys])
    text = str(caught.value)
    assert message in text
    assert CANARY not in text
    assert "\n" not in text


def test_a_secret_set_under_a_wrong_key_on_the_cli_is_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    for wrong in (f"hfToken={CANARY}", f"cluster.token={CANARY}"):
        assert main(["render", "dev", "--set", wrong, "--out", "/nonexistent/never-written"]) == 2
        captured = capsys.readouterr()
        assert captured.err.startswith("error: invalid stack config: ")
        assert "(not shown): unknown key" in captured.err
        assert CANARY not in captured.out + captured.err


def test_offline_render_reads_a_nested_secure_value_as_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pulumi config set --secret --path llmd:cluster.kubeconfig ...` writes ciphertext under the path."""
    (tmp_path / "Pulumi.canary.yaml").write_text(
        "config:\n  llmd:preset: dev\n  llmd:hfToken:\n    secure: v1:AAAA\n"
        f"  llmd:cluster:\n    kubeconfig:\n      secure: v1:{CANARY}\n"
    )
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    result = render(plan(loading.load_named("canary")), "canary")
    rows = json.loads(result.resources)
    provider = next(r for r in rows if r["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert "kubeconfig" in provider["secretPaths"]
    assert CANARY not in result.manifests + result.resources + result.summary


def test_offline_type_error_on_a_secure_value_does_not_print_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Pulumi.canary.yaml").write_text(
        "config:\n  llmd:preset: dev\n  llmd:cache:\n    replicas:\n      secure: v1:AAAA\n"
    )
    monkeypatch.setattr(loading, "PROJECT_DIR", tmp_path)
    with pytest.raises(ConfigError, match=r"^invalid stack config: cache.replicas = \(not shown\): "):
        loading.load_named("canary")


def test_offline_render_records_nothing_of_the_callers_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"/home/{CANARY}/.kube/config")
    monkeypatch.setenv("PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY", "false")
    monkeypatch.setenv("PULUMI_K8S_DELETE_UNREACHABLE", "true")
    result = render(plan(loading.load_preset("dev")), "dev")
    rows = json.loads(result.resources)
    provider = next(r for r in rows if r["type"] == "pulumi:providers:kubernetes")
    assert "kubeconfig" not in provider["inputs"]
    assert not {"enableServerSideApply", "deleteUnreachable"} & set(provider["inputs"])
    assert CANARY not in result.resources
