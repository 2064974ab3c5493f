"""Faults of the cluster under a rolling update: kube-apiserver restarted, the node of a rolling model server
lost. Each is a row of `./run e2e --faults` (e2e/faults.py)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from e2e.engine import Result
from e2e.interrupt import run_interrupted
from e2e.kwok import ClusterError
from e2e.recovery import Row, check_converged, converge, gist
from e2e.session import Session
from e2e.steps import StepError, live_object

# The image the model server rolls to and back from, to make a template change (a pinned tag, as the policy
# pack asks); the stack's default is the other side of each toggle.
ROLL_IMAGE = "docker.io/vllm/vllm-openai:v0.26.1"
IMAGE_KEY = "llmd:cache.image"


def rolls_server(line: str) -> bool:
    """The engine's line for a model server's Deployment being updated (and awaited)."""
    return "Deployment llmd-model-server" in line and " updating" in line


def toggle_image(session: Session) -> None:
    """A template change of the model server: to `ROLL_IMAGE` and back to the stack's default."""
    if session.state.get("rolled"):
        session.engine.remove_config(IMAGE_KEY)
    else:
        session.engine.set_config(IMAGE_KEY, ROLL_IMAGE)
    session.state["rolled"] = not session.state.get("rolled")


def apiserver_restart(session: Session) -> Row:
    """kube-apiserver stopped under a rolling update and started again 15 s later."""
    engine, cluster = session.engine, session.cluster
    toggle_image(session)
    started = time.monotonic()
    outage: dict[str, float] = {}

    commands = cluster.component_commands()
    restarted: list[str] = []

    def restart(_: int) -> None:
        argv = cluster.stop_component("kube-apiserver")
        outage["down"] = time.monotonic()
        time.sleep(15)
        cluster.start_component("kube-apiserver", argv)
        outage["up"] = time.monotonic()
        time.sleep(2)
        restarted.extend(cluster.restart_exited(commands))

    run = run_interrupted(engine, ("up", "--yes", "--skip-preview"), rolls_server, restart)
    if not run.triggered:
        raise StepError(f"the update ended (exit {run.code}) before the model server rolled")
    first = "the update went on and succeeded" if run.code == 0 else gist(Result([], run.code, run.output, ""))
    restarted.extend(cluster.restart_exited(commands))
    said, steps = converge(engine)
    seconds = time.monotonic() - started
    orphans, detail = check_converged(session, "apiserver")
    down = outage.get("up", 0.0) - outage.get("down", 0.0)
    return Row(
        "kube-apiserver restarted mid-update",
        f"{first}; then {said}",
        steps,
        seconds,
        orphans,
        f"down {down:.0f} s; exited with it, restarted as the kubelet would: {', '.join(restarted) or 'none'};"
        f" {detail}",
    )


def _ready_replicas(session: Session, deployment: dict[str, Any]) -> int:
    live = live_object(session.cluster, deployment) or {}
    return int((live.get("status") or {}).get("readyReplicas") or 0)


def model_servers(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Deployment" and "llm-d.ai/role" in o["metadata"].get("labels", {})]


def _promised(deployment: dict[str, Any]) -> int:
    """The replicas the rollout plan keeps serving: replicas less maxUnavailable."""
    spec = deployment["spec"]
    unavailable = ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable", 1)
    return max(int(spec.get("replicas", 1)) - int(unavailable), 0)


def _await_replaced(session: Session, server: dict[str, Any], lost: str, timeout: float = 180) -> list[str]:
    """Every replica of `server` ready again, none on the lost node (the pod garbage collector deletes the pods
    of a node that is gone, the Deployment makes new ones). The nodes they run on."""
    name, namespace = server["metadata"]["name"], server["metadata"]["namespace"]
    wanted = int(server["spec"].get("replicas", 1))
    deadline, nodes = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        pods = [p for p in session.cluster.objects("pods", namespace) if p["metadata"]["name"].startswith(name)]
        nodes = sorted({p["spec"].get("nodeName", "") for p in pods})
        if _ready_replicas(session, server) >= wanted and lost not in nodes and "" not in nodes:
            return nodes
        time.sleep(2)
    raise StepError(f"{name}: not all {wanted} replicas ready off the lost node {lost} within {timeout:.0f} s: {nodes}")


def lost_node(session: Session) -> Row:
    """The node of a rolling model server deleted, and a node of the same shape added 5 s later."""
    engine, cluster = session.engine, session.cluster
    server = model_servers(session.objects)[0]
    name, namespace = server["metadata"]["name"], server["metadata"]["namespace"]
    toggle_image(session)
    lowest: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            lowest.append(_ready_replicas(session, server))
            time.sleep(0.5)

    lost: dict[str, str] = {}

    def lose_node(_: int) -> None:
        pods = cluster.objects("pods", namespace)
        nodes = sorted({p["spec"].get("nodeName", "") for p in pods if p["metadata"]["name"].startswith(name)} - {""})
        if not nodes:
            raise ClusterError(f"no node runs a pod of {name}")
        node = json.loads(cluster.kubectl("get", "node", nodes[0], "-o", "json").stdout)
        cluster.kubectl("delete", "node", nodes[0], "--wait=false")
        lost["node"] = nodes[0]
        time.sleep(5)
        for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            node["metadata"].pop(key, None)
        node["metadata"]["name"] = f"{nodes[0]}-replacement"
        node["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = node["metadata"]["name"]
        node.get("status", {}).pop("conditions", None)
        node.get("spec", {}).pop("providerID", None)
        cluster.apply([node])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        run = run_interrupted(engine, ("up", "--yes", "--skip-preview"), rolls_server, lose_node)
    finally:
        stop.set()
        sampler.join()
    if not run.triggered:
        raise StepError(f"the update ended (exit {run.code}) before the model server rolled")
    first = "the rollout completed" if run.code == 0 else gist(Result([], run.code, run.output, ""))
    said, steps = converge(engine)
    replaced_on = _await_replaced(session, server, lost.get("node", ""))
    seconds = time.monotonic() - started
    orphans, detail = check_converged(session, "lost-node")
    detail = f"{detail}; its pods ready again on {', '.join(replaced_on)}"
    promised = _promised(server)
    if min(lowest, default=0) < promised:
        raise StepError(f"{name}: {min(lowest)} ready replicas during the rollout, below the {promised} promised")
    return Row(
        f"node {lost.get('node', '?')} lost during a rollout",
        f"{first}; then {said}",
        steps,
        seconds,
        orphans,
        f"{detail}; lowest ready {min(lowest, default=0)} of {server['spec'].get('replicas', 1)}"
        f" (the rollout plan keeps {promised})",
    )
