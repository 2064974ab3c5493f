"""The LeaderWorkerSet controller, run outside the cluster against the local API server.

In a cluster it runs as a Deployment behind a Service, with its own certificate rotation. Here it is a
local process (`lws-controller`, built by `e2e.tools` from `sigs.k8s.io/lws`) with:

- its CRDs from the module's `config/crd/bases`, as released (no conversion webhook: one version);
- a serving certificate for 127.0.0.1 signed by a throwaway CA (openssl), in its cert directory, and
  its internal certificate management off (`internalCertManagement.enable: false`);
- the module's `config/webhook/manifests.yaml` with its kustomize patches (the pod webhooks select
  only the pods of a LeaderWorkerSet), each `clientConfig` rewritten from the in-cluster Service to
  `url: https://127.0.0.1:<port>/<path>` with the CA as `caBundle`.

Its webhooks label each pod with its group and worker index and its controller creates the leader
StatefulSet and, per leader pod, the workers'; KWOK makes the pods Ready and the set becomes Available.
"""

from __future__ import annotations

import base64
import copy
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e import tools
from e2e.kwok import ClusterError

GROUP = "leaderworkerset.x-k8s.io"
HOST = "127.0.0.1"


class ControllerError(ClusterError):
    pass


def module_dir() -> Path:
    return tools.module_source("lws", "sigs.k8s.io/lws", f"v{tools.LWS_VERSION}")


def crds(source: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((source / "config" / "crd" / "bases").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _apply_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """The two JSON-patch `replace` operations kustomize applies (`/webhooks/<index>`)."""
    for op in ops:
        parts = op["path"].strip("/").split("/")
        if op.get("op") != "replace" or len(parts) != 2 or parts[0] != "webhooks":
            raise ControllerError(f"webhook patch not understood: {op}")
        doc["webhooks"][int(parts[1])] = copy.deepcopy(op["value"])


def webhook_configurations(
    manifests: list[dict[str, Any]],
    patches: dict[str, list[dict[str, Any]]],
    port: int,
    ca_bundle: bytes,
    prefix: str = "lws-",
) -> list[dict[str, Any]]:
    """The module's webhook configurations, patched as its kustomization patches them (`patches` by kind),
    every client pointed at `https://127.0.0.1:<port><path>` and trusting `ca_bundle` (PEM)."""
    out = []
    for doc in manifests:
        doc = copy.deepcopy(doc)
        _apply_patch(doc, patches.get(doc["kind"], []))
        doc["metadata"]["name"] = prefix + doc["metadata"]["name"]
        for hook in doc["webhooks"]:
            service = hook["clientConfig"].get("service") or {}
            path = service.get("path", "/")
            hook["clientConfig"] = {
                "url": f"https://{HOST}:{port}{path}",
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
        out.append(doc)
    return out


def module_webhooks(source: Path, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    folder = source / "config" / "webhook"
    manifests = [d for d in yaml.safe_load_all((folder / "manifests.yaml").read_text()) if d]
    patches = {
        "MutatingWebhookConfiguration": yaml.safe_load((folder / "mutating-patch.yaml").read_text()),
        "ValidatingWebhookConfiguration": yaml.safe_load((folder / "validating-patch.yaml").read_text()),
    }
    return webhook_configurations(manifests, patches, port, ca_bundle)


def controller_config(webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """The manager's Configuration: no leader election, no certificate rotation, no metrics server."""
    return {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": webhook_port, "host": HOST, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"{HOST}:{health_port}"},
    }


def serving_certificate(cert_dir: Path, host: str = HOST) -> bytes:
    """A CA and a certificate for `host` it signs, as the webhook server reads them (tls.crt, tls.key);
    returns the CA's PEM."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = cert_dir / "ca.key", cert_dir / "ca.crt"
    key, csr, crt, ext = cert_dir / "tls.key", cert_dir / "tls.csr", cert_dir / "tls.crt", cert_dir / "san.cnf"
    ext.write_text(f"subjectAltName=IP:{host}\nextendedKeyUsage=serverAuth\n")
    steps = [
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            ca_key,
            "-out",
            ca_crt,
            "-days",
            "2",
            "-subj",
            "/CN=llmd-e2e-lws-ca",
        ],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={host}"],
        [
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            ca_crt,
            "-CAkey",
            ca_key,
            "-CAcreateserial",
            "-out",
            crt,
            "-days",
            "2",
            "-extfile",
            ext,
        ],
    ]
    for step in steps:
        proc = subprocess.run(["openssl", *map(str, step)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ControllerError(f"openssl {step[0]}: {proc.stderr.strip()[-300:]}")
    return ca_crt.read_bytes()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class Controller:
    """One lws-controller process for one cluster."""

    binary: Path
    workdir: Path
    kubeconfig: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, apply: Any) -> str:
        """Applies the CRDs and webhook configurations through `apply(docs, server_side)`, starts the
        controller and waits for its webhook server."""
        source = module_dir()
        self.workdir.mkdir(parents=True, exist_ok=True)
        cert_dir = self.workdir / "certs"
        ca = serving_certificate(cert_dir)
        port, health = free_port(), free_port()
        config = self.workdir / "lws-config.yaml"
        config.write_text(yaml.safe_dump(controller_config(port, health, cert_dir)))
        apply(crds(source), True)
        log = (self.workdir / "lws-controller.log").open("wb")
        self.process = subprocess.Popen(
            [
                str(self.binary),
                "--config",
                str(config),
                "--kubeconfig",
                str(self.kubeconfig),
                "--zap-log-level",
                "info",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        (self.workdir / "lws-controller.pid").write_text(f"{self.process.pid}\n")
        self._wait_serving(port)
        apply(module_webhooks(source, port, ca), True)
        return f"lws-controller v{tools.LWS_VERSION} (pid {self.process.pid}), webhooks at https://{HOST}:{port}"

    def _wait_serving(self, port: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ControllerError(f"lws-controller exited ({self.process.returncode}): {self._log_tail()}")
            try:
                with socket.create_connection((HOST, port), timeout=1):
                    return
            except OSError:
                time.sleep(0.5)
        raise ControllerError(
            f"lws-controller serves no webhook on {HOST}:{port} after {timeout:.0f} s: {self._log_tail()}"
        )

    def _log_tail(self) -> str:
        path = self.workdir / "lws-controller.log"
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        return " | ".join(lines[-5:])[-600:]

    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def stop(self) -> None:
        """Stops this controller, or the one a `--keep` run left (its pid file)."""
        pid_file = self.workdir / "lws-controller.pid"
        if self.process is None and pid_file.exists():
            stop_recorded(pid_file)
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        pid_file.unlink(missing_ok=True)


def stop_recorded(pid_file: Path) -> None:
    """Ends the controller a pid file names, if that process is still an lws-controller."""
    try:
        pid = int(pid_file.read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except (OSError, ValueError):
        return
    if command.endswith(b"lws-controller"):
        os.kill(pid, signal.SIGTERM)
