"""A local control plane: kwokctl's binary runtime with the binaries `e2e.tools` built.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler run as local processes; the KWOK
controller plays every node's kubelet: nodes become Ready, scheduled pods Running and Ready, Job pods
Succeeded, and claims of the `kwok-volume` StorageClass (the cluster default) bind to a volume
provisioned for them. Nothing is pulled or run in a container: a pod's image is never fetched.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e import tools

STORAGE_CLASS = "kwok-volume"
_STAGE_DIRS = ("node/fast", "node/heartbeat-with-lease", "pod/fast", "volume/fast")


class ClusterError(RuntimeError):
    pass


def _kwok_source() -> Path:
    """The KWOK module's source (its stage files), from the module cache the build filled."""
    try:
        return tools.module_source("kwok", "sigs.k8s.io/kwok", f"v{tools.KWOK_VERSION}")
    except tools.BuildError as error:
        raise ClusterError(f"reading KWOK's stage files: {error}") from None


def stage_documents(source: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """KWOK's own fast stages for nodes, pods and volumes, and the objects they need (the StorageClass)."""
    stages: list[dict[str, Any]] = []
    objects: list[dict[str, Any]] = []
    for sub in _STAGE_DIRS:
        for path in sorted((source / "kustomize" / "stage" / sub).glob("*.yaml")):
            if path.name == "kustomization.yaml":
                continue
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc:
                    continue
                (stages if doc.get("kind") == "Stage" else objects).append(doc)
    return with_missing_images(terminal_before_delete(stages)), objects


_TERMINAL = ["Succeeded", "Failed"]
# What the kubelet does to a deleted pod before it goes: its phase becomes terminal. KWOK's fast stages
# delete it at once instead, which a pod holding a ResourceClaim never survives: the claim controller
# releases a claim only from a terminal pod, and the pod's foreground deletion waits on the claim.
POD_TERMINATE = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "pod-terminate"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                {"key": ".status.phase", "operator": "NotIn", "values": _TERMINAL},
            ]
        },
        "next": {"statusTemplate": "phase: Failed\n"},
    },
}


def _narrowed(
    stages: list[dict[str, Any]], name: str, expression: dict[str, Any], beside: dict[str, Any]
) -> list[dict[str, Any]]:
    """KWOK's stages with stage `name` also requiring `expression`, and `beside` added where it is present:
    the stage that takes the pods `name` now leaves (the stages themselves are not changed)."""
    out = []
    for stage in stages:
        if stage["metadata"]["name"] == name:
            stage = copy.deepcopy(stage)
            stage["spec"]["selector"]["matchExpressions"].append(expression)
        out.append(stage)
    if any(s["metadata"]["name"] == name for s in stages):
        out.append(copy.deepcopy(beside))
    return out


def terminal_before_delete(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """KWOK's stages with a deleted pod made terminal first (`POD_TERMINATE`), and deleted only then: two
    stages matching one pod are chosen between at random, so `pod-delete` waits for the terminal phase."""
    terminal = {"key": ".status.phase", "operator": "In", "values": _TERMINAL}
    return _narrowed(stages, "pod-delete", terminal, POD_TERMINATE)


# The registry KWOK stands in for has no image whose tag ends so: a pod that runs one never starts, as a
# kubelet leaves a pod whose image does not exist (ErrImagePull, then ImagePullBackOff), Pending and unready.
MISSING_IMAGE_SUFFIX = "-e2e-not-found"
_RUNS_MISSING_IMAGE = f'.spec.containers.[] | select( .image | endswith("{MISSING_IMAGE_SUFFIX}") ) | .name'
POD_IMAGE_NOT_FOUND = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "pod-image-not-found"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".spec.nodeName", "operator": "Exists"},
                {"key": '.status.conditions.[] | select( .type == "Ready" ) | .status', "operator": "DoesNotExist"},
                {"key": _RUNS_MISSING_IMAGE, "operator": "Exists"},
            ]
        },
        "next": {
            "statusTemplate": (
                "{{ $now := Now }}\n"
                "phase: Pending\n"
                "conditions:\n"
                "- {type: Initialized, status: 'True', lastTransitionTime: {{ $now | Quote }}}\n"
                "- {type: Ready, status: 'False', reason: ContainersNotReady, lastTransitionTime: {{ $now | Quote }}}\n"
                "- {type: ContainersReady, status: 'False', reason: ContainersNotReady,"
                " lastTransitionTime: {{ $now | Quote }}}\n"
                "containerStatuses:\n"
                "{{ range .spec.containers }}\n"
                "- name: {{ .name | Quote }}\n"
                "  image: {{ .image | Quote }}\n"
                "  ready: false\n"
                "  restartCount: 0\n"
                "  state:\n"
                "    waiting:\n"
                "      reason: ImagePullBackOff\n"
                '      message: {{ printf "Back-off pulling image %q: not found" .image | Quote }}\n'
                "{{ end }}\n"
            )
        },
    },
}


def with_missing_images(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """KWOK's stages, with a pod that runs a missing image (`MISSING_IMAGE_SUFFIX`) kept Pending and unready
    (`POD_IMAGE_NOT_FOUND`) instead of made Ready."""
    runs_no_missing = {"key": _RUNS_MISSING_IMAGE, "operator": "DoesNotExist"}
    return _narrowed(stages, "pod-ready", runs_no_missing, POD_IMAGE_NOT_FOUND)


def _command_line(pid: int) -> list[str]:
    return [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0") if a]


def process_running(pid: int) -> bool:
    """Alive and not a zombie (kwokctl's processes outlive it, and nothing here may reap them)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@dataclass
class Cluster:
    name: str
    workdir: Path
    bins: dict[str, Path]

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            KWOK_WORKDIR=str(self.workdir / "kwok"),
            KWOK_KUBE_VERSION=f"v{tools.KUBERNETES_VERSION}",
            KWOK_KUBECTL_BINARY=shutil.which("kubectl") or "kubectl",
            KUBECONFIG=str(self.kubeconfig),
        )
        return env

    def kwokctl(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.bins["kwok"] / "kwokctl"), "--name", self.name, *args],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise ClusterError(f"kwokctl {args[0]} {args[1] if len(args) > 1 else ''}: {proc.stderr.strip()[-400:]}")
        return proc

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args[:2])}: {proc.stderr.strip()[-400:]}")
        return proc

    def apply(self, objects: Iterable[dict[str, Any]], server_side: bool = False) -> None:
        docs = list(objects)
        if docs:
            extra = ["--server-side", "--force-conflicts"] if server_side else []
            self.kubectl("apply", *extra, "-f", "-", stdin=yaml.safe_dump_all(docs))

    def create(self) -> None:
        self.delete()
        self.workdir.mkdir(parents=True, exist_ok=True)
        stages, objects = stage_documents(_kwok_source())
        config = self.workdir / "kwok-stages.yaml"
        config.write_text(yaml.safe_dump_all(stages))
        k8s, etcd, kwok = self.bins["kubernetes"], self.bins["etcd"], self.bins["kwok"]
        self.kwokctl(
            "create",
            "cluster",
            "--runtime",
            "binary",
            "--kubeconfig",
            str(self.kubeconfig),
            "--config",
            str(config),
            "--kube-apiserver-binary",
            str(k8s / "kube-apiserver"),
            "--kube-controller-manager-binary",
            str(k8s / "kube-controller-manager"),
            "--kube-scheduler-binary",
            str(k8s / "kube-scheduler"),
            "--kwok-controller-binary",
            str(kwok / "kwok"),
            "--etcd-binary",
            str(etcd / "etcd"),
            "--wait",
            "3m",
        )
        self.apply(objects)

    def delete(self) -> None:
        if (self.workdir / "kwok").exists():
            self.kwokctl("delete", "cluster", check=False, timeout=120)

    def _component_dir(self) -> Path:
        return self.workdir / "kwok" / "clusters" / self.name

    def component_commands(self) -> dict[str, list[str]]:
        """Each running control-plane process's command line, by its name (its pid file's)."""
        commands = {}
        for pid_file in sorted((self._component_dir() / "pids").glob("*.pid")):
            pid = int(pid_file.read_text().strip())
            if process_running(pid):
                commands[pid_file.stem] = _command_line(pid)
        return commands

    def restart_exited(self, commands: dict[str, list[str]]) -> list[str]:
        """Start again each process of `commands` that has exited, as the kubelet restarts a static pod: the
        controller manager and the scheduler exit when they cannot renew their leader lease. Their names."""
        restarted = []
        for name, argv in commands.items():
            pid = int((self._component_dir() / "pids" / f"{name}.pid").read_text().strip())
            if not process_running(pid):
                self.start_component(name, argv)
                restarted.append(name)
        return restarted

    def stop_component(self, name: str, grace: float = 20) -> list[str]:
        """Stop one control-plane process as a restart of its host does (SIGTERM, then SIGKILL after `grace`
        seconds) and return the command line it ran, for `start_component`: kwokctl starts and stops only the
        whole cluster."""
        pid_file = self._component_dir() / "pids" / f"{name}.pid"
        pid = int(pid_file.read_text().strip())
        argv = _command_line(pid)
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 30.0)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while process_running(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if not process_running(pid):
                return argv
        raise ClusterError(f"{name} (pid {pid}) did not stop on SIGKILL")

    def start_component(self, name: str, argv: list[str]) -> None:
        """Start it again as kwokctl does (its directory, its log appended, its pid file), then wait until the
        API server answers."""
        folder = self._component_dir()
        with (folder / "logs" / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                argv, cwd=folder, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
        (folder / "pids" / f"{name}.pid").write_text(str(process.pid))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise ClusterError(f"{name} restarted, but the API server was not ready within 120 s")

    def objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        scope = ["-n", namespace] if namespace else ["-A"]
        out = self.kubectl("get", kind, *scope, "-o", "json", check=False)
        return json.loads(out.stdout).get("items", []) if out.returncode == 0 else []

    def wait_nodes_ready(self, count: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = [
                n
                for n in self.objects("nodes")
                if any(
                    c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", [])
                )
            ]
            if len(ready) >= count:
                return
            time.sleep(1)
        raise ClusterError(f"nodes: {count} expected Ready within {timeout:.0f} s")
