"""`autoscaling.scale_in: cache-value` on the real control plane: the cache annotator's script, laid out as its
ConfigMap mounts it, run as a local process against the e2e's API server with a token of the stack's own
ServiceAccount (so its Role is all it may do), each model-server pod's /metrics served by a test double (KWOK runs no
engine); then the Deployment scaled in through its scale subresource, as KEDA's HPA does, and the
kube-controller-manager's ReplicaSet controller deciding which pod goes. Observed: it deletes the pod with the
lowest cost, which its own order (no cost) would have kept longest; the annotator survives the API server
restarted (it writes again after) and a pod that never answers (lowest cost at once, then deleted).

KWOK has no kubelet, so the drain itself (preStop, vLLM's `--shutdown-timeout`) is not exercised here; the
ReplicaSet's choice is, and the Role through the API server's RBAC authorizer (`kubectl auth can-i`).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from components.catalog import labels
from components.formulas.victims import DELETION_COST_ANNOTATION, LOWEST_COST, Candidate, deletion_order
from components.specs import cache_annotator
from e2e.engine import python
from e2e.kwok import Cluster
from e2e.steps import StepError

# The annotator's loop shortened for the run (the stack's: 15 s, its window the scale-down window), so a few loops
# fit in seconds; everything else is the render's.
INTERVAL_S, WINDOW_S, SCRAPE_TIMEOUT_S = 2, 20, 1
PODS = 4  # the replicas scaled to first, as the HPA would under load (the stack's most is 8)
WAIT_S = 60  # for the annotator's costs, or the controller's deletion, to show


def annotator_of(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next(
        (o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == cache_annotator.NAME), None
    )


class MetricsDouble:
    """Each pod's /metrics at `/pods/<name>/metrics`: its HBM hit counter growing at its own rate; a pod in
    `silent` accepts the request and never answers."""

    def __init__(self, hbm_counter: str) -> None:
        self.rates: dict[str, float] = {}
        self.silent: set[str] = set()
        self.totals: dict[str, float] = {}
        self.last = time.monotonic()
        self.lock, self.release = threading.Lock(), threading.Event()
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.split("/")[2] if self.path.startswith("/pods/") else ""
                if name in double.silent:
                    double.release.wait(WAIT_S)  # holds the connection past any scrape timeout
                    return
                body = f'{hbm_counter}{{engine="0",model_name="e2e"}} {double.total(name)}\n'.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def total(self, name: str) -> float:
        """The counter now: every pod's grows at its rate since the last read."""
        with self.lock:
            now = time.monotonic()
            for pod, rate in self.rates.items():
                self.totals[pod] = self.totals.get(pod, 0.0) + rate * (now - self.last)
            self.last = now
            return round(self.totals.get(name, 0.0))

    def set_rates(self, rates: dict[str, float]) -> None:
        self.total("")  # bank the increase at the old rates
        with self.lock:
            self.rates = dict(rates)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/pods/{{name}}/metrics"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _seconds_since(stamp: str, now: datetime) -> float:
    return (now - datetime.fromisoformat(stamp.replace("Z", "+00:00"))).total_seconds()


def live_pods(cluster: Cluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    out = cluster.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json")
    return [p for p in json.loads(out.stdout)["items"] if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def candidates(pods: list[dict[str, Any]]) -> list[Candidate]:
    """The ready pods as the ReplicaSet controller compares them (their costs left out: its own order)."""
    now = datetime.now(UTC)
    nodes = [p["spec"].get("nodeName") for p in pods]
    out = []
    for pod in pods:
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
        restarts = max((c.get("restartCount", 0) for c in pod["status"].get("containerStatuses") or []), default=0)
        out.append(
            Candidate(
                name=pod["metadata"]["name"],
                uid=pod["metadata"]["uid"],
                ready_s=_seconds_since(ready["lastTransitionTime"], now),
                age_s=_seconds_since(pod["metadata"]["creationTimestamp"], now),
                colocated=nodes.count(pod["spec"].get("nodeName")),
                restarts=int(restarts),
            )
        )
    return out


def _wait(what: str, check: Callable[[], str | None]) -> str:
    """Poll `check` until it returns a line (or WAIT_S pass)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found is not None:
            return found
        time.sleep(0.5)
    raise StepError(f"within {WAIT_S} s: {what}")


class Run:
    """The annotator process, its double and the workload it annotates."""

    def __init__(self, cluster: Cluster, objects: list[dict[str, Any]], workdir: Path) -> None:
        deployment = annotator_of(objects)
        if deployment is None:
            raise StepError("the render has no cache annotator")
        self.cluster, self.workdir = cluster, workdir / "cache-annotator"
        self.namespace = deployment["metadata"]["namespace"]
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
        self.selector = env["SELECTOR"]
        self.server = next(
            o
            for o in objects
            if o["kind"] == "Deployment" and labels.KV_TRANSFER_BLOCK_ANNOTATION in o["metadata"].get("annotations", {})
        )
        self.double = MetricsDouble(env["HBM_COUNTER"])
        self.env, self.objects = env, objects
        self.process: subprocess.Popen[bytes] | None = None

    def _lay_out(self) -> Path:
        """The ConfigMap's files where its volume's items put them (components/<path> under the mount)."""
        script = f"{cache_annotator.NAME}-script"
        config = next(o for o in self.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == script)
        deployment = annotator_of(self.objects)
        assert deployment is not None
        root = self.workdir / "mount"
        for volume in deployment["spec"]["template"]["spec"]["volumes"]:
            for item in (volume.get("configMap") or {}).get("items") or []:
                path = root / item["path"]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(config["data"][item["key"]])
        return root

    def _credentials(self) -> tuple[str, Path, Path]:
        """The API server's URL and CA from the cluster's kubeconfig, and a token of the annotator's own account."""
        kubeconfig = yaml.safe_load(self.cluster.kubeconfig.read_text())
        cluster = kubeconfig["clusters"][0]["cluster"]
        ca = self.workdir / "ca.crt"
        if cluster.get("certificate-authority"):
            ca.write_bytes(Path(cluster["certificate-authority"]).read_bytes())
        token = self.cluster.kubectl("create", "token", cache_annotator.NAME, "-n", self.namespace, "--duration=1h")
        token_file = self.workdir / "token"
        token_file.write_text(token.stdout.strip())
        token_file.chmod(0o600)
        return str(cluster["server"]), token_file, ca

    def start(self) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        root = self._lay_out()
        url, token, ca = self._credentials()
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
            **self.env,
            "NAMESPACE": self.namespace,
            "INTERVAL_SECONDS": str(INTERVAL_S),
            "WINDOW_SECONDS": str(WINDOW_S),
            "SCRAPE_TIMEOUT_SECONDS": str(SCRAPE_TIMEOUT_S),
            "API_URL": url,
            "TOKEN_FILE": str(token),
            "CA_FILE": str(ca),
            "METRICS_URL": self.double.url,
            "METRICS_PORT": str(_free_port()),
        }
        log = (self.workdir / "annotator.log").open("ab")
        command = [python(), "-m", f"components.cache_annotator.{cache_annotator.SCRIPT.stem}"]
        self.process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=log, start_new_session=True)
        return url

    def alive(self) -> None:
        if self.process is None or self.process.poll() is not None:
            raise StepError(f"the annotator exited ({self.log_tail()})")

    def log_tail(self, lines: int = 5) -> str:
        path = self.workdir / "annotator.log"
        return " | ".join(path.read_text().splitlines()[-lines:]) if path.exists() else "no log"

    def stop(self) -> int | None:
        code = None
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.process.wait(timeout=INTERVAL_S + 10)
            if code is None:
                self.process.kill()
        self.double.close()
        return code

    def costs(self) -> dict[str, str | None]:
        pods = live_pods(self.cluster, self.namespace, self.selector)
        return {
            p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION) for p in pods
        }

    def wait_costs(self, want: dict[str, int], what: str) -> str:
        wanted = {k: str(v) for k, v in want.items()}

        def check() -> str | None:
            self.alive()
            return "as ranked" if self.costs() == wanted else None

        try:
            return _wait(what, check)
        except StepError:
            found = f"the pods carry {self.costs()}, not {wanted}"
            raise StepError(f"{what}: {found}; the annotator: {self.log_tail()}") from None

    def scale(self, replicas: int) -> None:
        name = self.server["metadata"]["name"]
        self.cluster.kubectl("scale", f"deployment/{name}", "-n", self.namespace, f"--replicas={replicas}")

    def wait_serving(self, count: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []

        def check() -> str | None:
            nonlocal found
            found = live_pods(self.cluster, self.namespace, self.selector)
            return "ready" if len(found) == count and all(_ready(p) for p in found) else None

        _wait(f"{count} ready model-server pods", check)
        return found

    def scale_in_removes(self, before: list[str], expected: str) -> str:
        self.scale(len(before) - 1)
        gone: list[str] = []

        def check() -> str | None:
            nonlocal gone
            gone = sorted(set(before) - set(self.costs()))
            return ",".join(gone) if gone else None

        _wait("the ReplicaSet controller's deletion", check)
        if gone != [expected]:
            raise StepError(f"the ReplicaSet controller deleted {gone}, not {expected} (the lowest cost)")
        return expected


def _rates_ranked(order: list[str]) -> dict[str, float]:
    """Tokens per second by pod, rising along `order` (its first the lowest)."""
    return {name: 100.0 * (i + 1) for i, name in enumerate(order)}


def check_scale_in(cluster: Cluster, objects: list[dict[str, Any]], workdir: Path) -> str:
    """The whole observation; its line says what the controller deleted and what the annotator survived."""
    run = Run(cluster, objects, workdir)
    started = time.monotonic()
    try:
        can = _rbac(cluster, run.namespace)
        run.scale(PODS)
        pods = run.wait_serving(PODS)
        own_order = [c.name for c in deletion_order(candidates(pods))]  # what the controller does with no cost
        keep_longest = own_order[-1]
        # The lowest value to the pod its own order deletes last: the cost alone can make it the victim.
        order = [keep_longest, *own_order[:-1]]
        run.double.set_rates(_rates_ranked(order))
        run.start()
        run.wait_costs({name: rank for rank, name in enumerate(order)}, "the annotator's first costs")
        first = run.scale_in_removes(own_order, keep_longest)
        after_first = [n for n in order if n != first]

        # The API server restarted under the annotator: it fails its lists meanwhile and writes again after.
        commands = cluster.component_commands()
        argv = cluster.stop_component("kube-apiserver")
        down = time.monotonic()
        reversed_order = list(reversed(after_first))
        run.double.set_rates(_rates_ranked(reversed_order))
        time.sleep(3 * INTERVAL_S)
        cluster.start_component("kube-apiserver", argv)
        outage = time.monotonic() - down
        restarted = cluster.restart_exited(commands)
        run.alive()
        run.wait_costs({n: r for r, n in enumerate(reversed_order)}, "the costs after the API server's restart")

        # A pod that never answers: the lowest cost at once, the others' order kept; then it goes first.
        silent = reversed_order[-1]  # the highest value until now
        run.double.silent.add(silent)
        rest = [n for n in reversed_order if n != silent]
        run.wait_costs({silent: LOWEST_COST, **{n: r for r, n in enumerate(rest)}}, "the silent pod's lowest cost")
        restarted += cluster.restart_exited(commands)  # one that lost its lease since, as the kubelet would
        second = run.scale_in_removes(reversed_order, silent)
        run.alive()
        metrics = run.log_tail(1)
    finally:
        code = run.stop()
    if code != 0:
        raise StepError(f"the annotator did not stop on SIGTERM with 0 (exit {code}): {run.log_tail()}")
    return (
        f"{can}; {PODS} pods; the annotator's lowest ({first}) deleted by the ReplicaSet controller, the pod its own"
        f" order keeps longest (it deletes {own_order[0]} first); kube-apiserver down {outage:.0f} s (restarted:"
        f" {', '.join(restarted) or 'none'}), costs rewritten after; {silent} silent: cost {LOWEST_COST}, then"
        f" deleted ({second}); last loop: {metrics}; {time.monotonic() - started:.0f} s"
    )


def _rbac(cluster: Cluster, namespace: str) -> str:
    """The API server's RBAC authorizer on the annotator's account: what its Role grants, and nothing next to it."""
    account = f"system:serviceaccount:{namespace}:{cache_annotator.NAME}"
    asked = [
        (("patch", "pods", "-n", namespace), True),
        (("list", "pods", "-n", namespace), True),
        (("delete", "pods", "-n", namespace), False),
        (("list", "pods", "-n", "default"), False),
        (("get", "secrets", "-n", namespace), False),
        (("patch", "deployments", "-n", namespace), False),
    ]
    wrong = []
    for args, allowed in asked:
        out = cluster.kubectl("auth", "can-i", *args, "--as", account, check=False)
        if (out.stdout.strip() == "yes") != allowed:
            wrong.append(f"{' '.join(args)}: {out.stdout.strip()}")
    if wrong:
        raise StepError(f"the annotator's account is granted otherwise than its Role says: {'; '.join(wrong)}")
    return f"RBAC: {len(asked)} questions answered as its Role says"
