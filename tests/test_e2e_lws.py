"""The LWS controller run outside the cluster: its webhook configurations pointed at 127.0.0.1 with the CA,
the pod webhooks narrowed as the module's kustomization narrows them, and its serving certificate."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from e2e import lws

_POD_SELECTOR = {"matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]}


def _hook(name: str, path: str) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "failurePolicy": "Fail",
        "rules": [{"apiGroups": [""], "resources": ["pods"]}],
    }


def _manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [_hook("mlws.kb.io", "/mutate-lws"), _hook("mpod.kb.io", "/mutate--v1-pod")],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validating-webhook-configuration"},
            "webhooks": [_hook("vlws.kb.io", "/validate-lws"), _hook("vpod.kb.io", "/validate--v1-pod")],
        },
    ]


def _patches() -> dict[str, list[dict[str, Any]]]:
    narrowed = {**_hook("mpod.kb.io", "/mutate--v1-pod"), "objectSelector": _POD_SELECTOR}
    return {"MutatingWebhookConfiguration": [{"op": "replace", "path": "/webhooks/1", "value": narrowed}]}


def test_every_client_is_a_url_on_the_loopback_with_the_ca() -> None:
    docs = lws.webhook_configurations(_manifests(), _patches(), 9443, b"PEM")
    urls = [h["clientConfig"] for d in docs for h in d["webhooks"]]
    assert [c["url"] for c in urls] == [
        "https://127.0.0.1:9443/mutate-lws",
        "https://127.0.0.1:9443/mutate--v1-pod",
        "https://127.0.0.1:9443/validate-lws",
        "https://127.0.0.1:9443/validate--v1-pod",
    ]
    assert all("service" not in c and base64.b64decode(c["caBundle"]) == b"PEM" for c in urls)
    assert [d["metadata"]["name"] for d in docs] == [
        "lws-mutating-webhook-configuration",
        "lws-validating-webhook-configuration",
    ]


def test_the_patch_narrows_the_pod_webhook_and_the_input_is_left_alone() -> None:
    manifests = _manifests()
    docs = lws.webhook_configurations(manifests, _patches(), 1, b"x")
    assert docs[0]["webhooks"][1]["objectSelector"] == _POD_SELECTOR
    assert "objectSelector" not in docs[1]["webhooks"][1]  # no validating patch given
    assert "service" in manifests[0]["webhooks"][0]["clientConfig"]


def test_a_patch_it_does_not_understand_stops_it() -> None:
    with pytest.raises(lws.ControllerError, match="not understood"):
        lws.webhook_configurations(
            _manifests(), {"MutatingWebhookConfiguration": [{"op": "add", "path": "/webhooks/-", "value": {}}]}, 1, b""
        )


def test_the_module_patches_select_only_leaderworkerset_pods() -> None:
    source = lws.module_dir()
    docs = lws.module_webhooks(source, 9443, b"PEM")
    pod_hooks = [h for d in docs for h in d["webhooks"] if h["rules"][0]["resources"] == ["pods"]]
    assert len(pod_hooks) == 2
    assert all(h["objectSelector"] == _POD_SELECTOR for h in pod_hooks)


def test_the_controller_config_turns_off_election_rotation_and_metrics(tmp_path: Path) -> None:
    config = lws.controller_config(9443, 8081, tmp_path)
    assert config["internalCertManagement"] == {"enable": False}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["webhook"] == {"port": 9443, "host": "127.0.0.1", "certDir": str(tmp_path)}
    assert config["metrics"]["bindAddress"] == "0"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_the_serving_certificate_is_for_the_loopback_and_signed_by_the_ca(tmp_path: Path) -> None:
    ca = lws.serving_certificate(tmp_path)
    assert (tmp_path / "tls.key").exists() and ca == (tmp_path / "ca.crt").read_bytes()
    verify = subprocess.run(
        ["openssl", "verify", "-CAfile", str(tmp_path / "ca.crt"), str(tmp_path / "tls.crt")],
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stderr
    text = subprocess.run(
        ["openssl", "x509", "-in", str(tmp_path / "tls.crt"), "-noout", "-text"], capture_output=True, text=True
    ).stdout
    assert "IP Address:127.0.0.1" in text
