"""`./run e2e --faults PRESET`: what the user sees, and what is left, when an update goes wrong.

Each fault is a step on a deployed preset: the engine interrupted (SIGINT, as Ctrl-C sends it to the
foreground process group, or SIGKILL, as a CI runner's cancellation does) at a point of an update read from
the engine's own progress lines; the API server stopped and started under a running update; the node of a
rolling model server deleted and replaced, as a node pool's autoscaler would; a model server whose image
does not exist; a `destroy` interrupted with protection on. After each, the run recovers as the README says
(`docs/operating.md`, "When an update is interrupted"), and checks what a user would: the live objects hold
what a render of the same config sets, a preview plans nothing, and no object the provider applied is left
outside the state (orphaned) or twice in it. Each fault is one row of the table printed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.engine import Engine, Result
from e2e.kwok import MISSING_IMAGE_SUFFIX, ClusterError, process_running
from e2e.lifecycle import destroy_under_protect, protected_resources
from e2e.session import Session, new_session, start
from e2e.steps import Report, StepError, check_live_matches, live_object, render_stack, timed

# The image the model server rolls to and back from, to make a template change (a pinned tag, as the policy
# pack asks); the stack's default is the other side of each toggle.
ROLL_IMAGE = "docker.io/vllm/vllm-openai:v0.26.1"
IMAGE_KEY = "llmd:cache.image"
# What the README tells the user to run, by what the engine says (its own words, matched here).
LOCKED = "the stack is currently locked"
PENDING_CREATES = "interrupted while creating"
BROKEN_CHECKPOINT = "failed to load checkpoint: EOF"
CANCEL = ("cancel", "--yes")
CLEAR_PENDING = ("refresh", "--clear-pending-creates", "--yes", "--skip-preview")


@dataclass
class Row:
    """One fault: what the next `up` said, the commands run before the stack converged, how long that took
    from the fault, and what the checks found."""

    fault: str
    observed: str
    hand_steps: list[str] = field(default_factory=list)
    seconds: float = 0.0
    orphans: int = 0
    detail: str = ""

    def cells(self) -> list[str]:
        steps = "; ".join(f"`{s}`" for s in self.hand_steps) or "none"
        return [self.fault, self.observed, steps, f"{self.seconds:.0f} s", str(self.orphans), self.detail]


@dataclass(frozen=True)
class Point:
    """Where in an update the engine is interrupted: a line of its progress output, and whether the stack
    starts empty (a first `up`) or deployed (a rollout of the model server)."""

    label: str
    matches: Callable[[str], bool]
    fresh: bool


POINTS = {
    "crds": Point(
        "while the InferencePool CRDs are created",
        lambda line: "CustomResourceDefinition" in line and " creating" in line,
        fresh=True,
    ),
    "chart": Point(
        "while the router chart's objects are created",
        lambda line: "llmd-router-chart:" in line and " creating" in line and "Deployment" in line,
        fresh=True,
    ),
    "server": Point(
        "while a rolling model server is updated and awaited",
        lambda line: "Deployment llmd-model-server" in line and " updating" in line,
        fresh=False,
    ),
}
SIGNALS = {"sigint": signal.SIGINT, "sigkill": signal.SIGKILL}


@dataclass
class Interrupted:
    code: int
    output: str
    triggered: bool
    leftover_plugins: int


def _descendants(root: int) -> list[int]:
    """Every process under `root` (the engine's plugins run in process groups of their own)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        found += children
        frontier += children
    return found


def run_interrupted(
    engine: Engine, args: tuple[str, ...], trigger: Callable[[str], bool], act: Callable[[int], None]
) -> Interrupted:
    """`pulumi ARGS` with `act(pid)` called at the first progress line `trigger` matches; then the run is
    let finish. Plugins the engine left running (it cannot stop them once killed) are counted and stopped."""
    argv = ["pulumi", *args, "--non-interactive", "--color", "never", "--stack", engine.stack]
    process = subprocess.Popen(
        argv,
        cwd=engine.project,
        env=engine.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    lines, triggered, plugins = [], False, []
    for line in process.stdout:
        lines.append(line)
        if not triggered and trigger(line):
            triggered = True
            plugins = _descendants(process.pid)
            act(process.pid)
    process.wait(timeout=900)
    leftover = [pid for pid in plugins if process_running(pid)]
    for pid in leftover:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    output = "".join(lines)
    with (engine.workdir / "engine.log").open("a") as sink:
        sink.write(f"\n$ {' '.join(argv)}  (exit {process.returncode}, interrupted)\n{output}\n")
    return Interrupted(process.returncode, output, triggered, len(leftover))


_URN = re.compile(r'"?urn:pulumi:[^"\s]*::([^"\s]+)"?')


def gist(result: Result) -> str:
    """What a run said that a user acts on: its first error (a URN shortened to its name), the pending
    operations it found, or success."""
    text = _URN.sub(r"\1", result.stdout + "\n" + result.stderr)
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("error:") and "update failed" not in stripped:
            return stripped[:240]
        if "pending operations from previous deployment" in stripped:
            return stripped.split("warning: ", 1)[-1][:240]
    return "converged" if result.ok else f"exit {result.code}"


def pending_operations(engine: Engine) -> list[str]:
    """The operations the state lists as in flight (`pulumi stack export`): what a killed run left."""
    result = engine.run("stack", "export")
    if not result.ok:
        return []  # a state that cannot be read: the next `up` says why
    deployment = json.loads(result.stdout).get("deployment") or {}
    return [
        f"{op.get('type')} {str((op.get('resource') or {}).get('urn', '')).rsplit('::', 1)[-1]}"
        for op in deployment.get("pending_operations") or []
    ]


def _empty_blob_attributes(backend: Path) -> list[Path]:
    """The file backend's attribute files (`<stack>.json.attrs`, beside each checkpoint) that a kill left empty."""
    return [p for p in (backend / ".pulumi" / "stacks").rglob("*.json.attrs") if p.stat().st_size == 0]


def converge(engine: Engine) -> tuple[str, list[str]]:
    """`pulumi up` as the README says to after a fault: a stale lock is cancelled, pending creates cleared, a
    checkpoint's attribute file a kill left empty removed, then `up` again. Returns what the first `up` said
    and the commands it took."""
    said, steps = "", list[str]()
    for _ in range(5):
        result = engine.run("up", "--yes", "--skip-preview")
        said = said or gist(result)
        if result.ok and not pending_operations(engine):
            return said, steps
        text = result.stdout + result.stderr
        if result.ok:  # converged, but the state still lists the killed run's operations: every `up` warns
            engine.run(*CLEAR_PENDING, check=True)
            steps.append(f"pulumi {' '.join(CLEAR_PENDING)}")
            continue
        if LOCKED in text:
            engine.run(*CANCEL, check=True)
            steps.append(f"pulumi {' '.join(CANCEL)}")
        elif PENDING_CREATES in text:
            engine.run(*CLEAR_PENDING, check=True)
            steps.append(f"pulumi {' '.join(CLEAR_PENDING)}")
        elif BROKEN_CHECKPOINT in text and (emptied := _empty_blob_attributes(engine.workdir / "state")):
            for path in emptied:
                path.unlink()
            steps.append(f"rm {' '.join(str(p.relative_to(engine.workdir / 'state')) for p in emptied)} (empty)")
        else:
            raise StepError(f"`pulumi up` after the fault did not converge:\n{result.tail(30)}")
    raise StepError(f"`pulumi up` did not converge after {', '.join(steps)}")


_DIAGNOSTIC_BLOCK = re.compile(r"^  (\S+) \((.+)\):$")


def failed_resources(output: str) -> dict[str, list[str]]:
    """The resources the engine's Diagnostics report an error for (the stack's own block aside): each one's
    lines, by its name."""
    section = output.split("\nDiagnostics:\n", 1)[-1].split("\nOutputs:", 1)[0]
    blocks: dict[str, list[str]] = {}
    current = ""
    for line in section.splitlines():
        header = _DIAGNOSTIC_BLOCK.match(line)
        if header:
            current = "" if header.group(1) == "pulumi:pulumi:Stack" else header.group(2)
            if current:
                blocks[current] = []
        elif current and line.strip():
            blocks[current].append(line.strip())
    return {name: lines for name, lines in blocks.items() if any(x.startswith("error:") for x in lines)}


def _identity(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))


def state_objects(state: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The Kubernetes objects the stack's state holds (components and providers aside), once per resource."""
    out = []
    for resource in state:
        kind = resource.get("type", "")
        if not kind.startswith("kubernetes:") or kind.startswith(("kubernetes:helm.sh/", "kubernetes:yaml/")):
            continue
        outputs = resource.get("outputs") or {}
        if outputs.get("kind") and (outputs.get("metadata") or {}).get("name"):
            out.append(_identity(outputs))
    return out


def applied_by_pulumi(obj: dict[str, Any]) -> bool:
    return any(
        str(entry.get("manager", "")).startswith("pulumi-kubernetes")
        for entry in (obj.get("metadata") or {}).get("managedFields") or []
    )


def strays(live: list[dict[str, Any]], state: list[tuple[str, str, str]]) -> tuple[list[str], list[str]]:
    """(objects the provider applied that the state does not hold: orphans; objects the state holds twice)."""
    held = set(state)
    orphans = sorted("/".join(k) for k in {_identity(o) for o in live if applied_by_pulumi(o)} - held)
    twice = sorted({"/".join(k) for k in state if state.count(k) > 1})
    return orphans, twice


def _live_objects(session: Session) -> list[dict[str, Any]]:
    kinds = session.cluster.kubectl("api-resources", "--verbs=list,delete", "-o", "name").stdout.split()
    skip = ("events", "events.events.k8s.io", "pods", "endpoints", "endpointslices.discovery.k8s.io", "leases")
    wanted = [k for k in kinds if not k.startswith(skip)]
    out = session.cluster.kubectl("get", ",".join(wanted), "-A", "-o", "json", "--show-managed-fields", check=False)
    if out.returncode != 0:
        raise StepError(f"listing the live objects: {out.stderr.strip()[-300:]}")
    return list(json.loads(out.stdout).get("items", []))


def check_converged(session: Session, tag: str) -> tuple[int, str]:
    """The stack after recovery against an uninterrupted run of the same config: the live objects hold every
    field a fresh render sets, a preview plans nothing, nothing orphaned or held twice. (orphans, detail)"""
    render = render_stack(session.project, session.engine.stack, session.workdir / f"render-{tag}")
    session.state["render"] = render
    detail = check_live_matches(session.cluster, render["objects"])
    result = session.engine.run("preview", "--expect-no-changes", "--diff")
    if not result.ok:
        raise StepError(f"a preview after recovery plans changes:\n{result.tail(30)}")
    pending = pending_operations(session.engine)
    if pending:
        raise StepError(f"the state still lists {len(pending)} pending operation(s): {', '.join(pending[:5])}")
    orphans, twice = strays(_live_objects(session), state_objects(session.engine.state()))
    if twice:
        raise StepError(f"the state holds objects twice: {', '.join(twice[:10])}")
    if orphans:
        raise StepError(f"{len(orphans)} object(s) applied by Pulumi but not in the state: {', '.join(orphans[:10])}")
    return 0, detail


def _toggle_image(session: Session) -> None:
    """A template change of the model server: to `ROLL_IMAGE` and back to the stack's default."""
    if session.state.get("rolled"):
        session.engine.remove_config(IMAGE_KEY)
    else:
        session.engine.set_config(IMAGE_KEY, ROLL_IMAGE)
    session.state["rolled"] = not session.state.get("rolled")


def _empty_stack(session: Session) -> None:
    """The stack destroyed (protection lifted and restored), so a first `up` can be interrupted."""
    protected = protected_resources(session.state["render"]["resources"])
    if protected:
        session.engine.set_config("llmd:protect", "false")
        if not session.engine.run("up", "--yes", "--skip-preview").ok:
            raise StepError("lifting protection to empty the stack failed")
    result = session.engine.run("destroy", "--yes", "--skip-preview")
    if protected:
        session.engine.remove_config("llmd:protect")
    if not result.ok:
        raise StepError(f"emptying the stack failed:\n{result.tail(20)}")


def interrupted_up(session: Session, sig: str, point_name: str) -> Row:
    point, engine = POINTS[point_name], session.engine
    if point.fresh:
        _empty_stack(session)
    else:
        _toggle_image(session)
    started = time.monotonic()
    run = run_interrupted(
        engine, ("up", "--yes", "--skip-preview"), point.matches, lambda pid: os.killpg(pid, SIGNALS[sig])
    )
    if not run.triggered:
        raise StepError(f"the update ended (exit {run.code}) before it reached the point: {point.label}")
    said, steps = converge(engine)
    seconds = time.monotonic() - started
    orphans, detail = check_converged(session, f"{sig}-{point_name}")
    if run.leftover_plugins:
        detail += f"; {run.leftover_plugins} plugin processes outlived the killed engine (stopped by the run)"
    return Row(f"{sig.upper()} {point.label}", said, steps, seconds, orphans, detail)


def apiserver_restart(session: Session) -> Row:
    """kube-apiserver stopped under a rolling update and started again 15 s later."""
    engine, cluster = session.engine, session.cluster
    _toggle_image(session)
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

    run = run_interrupted(engine, ("up", "--yes", "--skip-preview"), POINTS["server"].matches, restart)
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


def _model_servers(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
    server = _model_servers(session.objects)[0]
    name, namespace = server["metadata"]["name"], server["metadata"]["namespace"]
    _toggle_image(session)
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
        run = run_interrupted(engine, ("up", "--yes", "--skip-preview"), POINTS["server"].matches, lose_node)
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


def never_ready(session: Session) -> Row:
    """A model-server image that does not exist: `up` fails within the workload's derived budget, naming it;
    the config fixed, `up` converges without a destroy."""
    engine = session.engine
    engine.set_config(IMAGE_KEY, f"{ROLL_IMAGE}{MISSING_IMAGE_SUFFIX}")
    render = render_stack(session.project, engine.stack, session.workdir / "render-never-ready")
    server = _model_servers(render["objects"])[0]
    name = server["metadata"]["name"]
    budget = int(server["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    started = time.monotonic()
    result = engine.run("up", "--yes", "--skip-preview")
    failed_after = time.monotonic() - started
    if result.ok:
        raise StepError(f"`pulumi up` succeeded though {name}'s image does not exist")
    failing = failed_resources(result.stdout + result.stderr)
    if len(failing) != 1 or not next(iter(failing)).endswith(name):
        raise StepError(f"the resources that failed are {sorted(failing)}, not {name} alone:\n{result.tail(20)}")
    message = " ".join(next(iter(failing.values())))
    if name not in message or "ImagePullBackOff" not in message:
        raise StepError(f"the failure does not name {name} and its pod's reason: {message[:300]}")
    if not budget <= failed_after <= budget + 120:
        raise StepError(f"`pulumi up` failed after {failed_after:.0f} s; {name}'s derived budget is {budget} s")
    engine.remove_config(IMAGE_KEY)
    session.state["rolled"] = False
    fixed = time.monotonic()
    said, steps = converge(engine)
    seconds = time.monotonic() - fixed
    orphans, detail = check_converged(session, "fixed")
    return Row(
        f"{name} never ready (image not found)",
        f"failed after {failed_after:.0f} s (budget {budget} s), one resource: {message[:200]}; fixed, then {said}",
        steps,
        seconds,
        orphans,
        detail,
    )


def interrupted_destroy(session: Session) -> Row:
    """`pulumi destroy` with protection on, killed at its first deletion: every protected object stays."""
    engine, render = session.engine, session.state["render"]
    protected = protected_resources(render["resources"])
    if not protected:
        return Row("destroy interrupted (protect on)", "nothing protected in this stack", detail="not run")
    claims = [o for o in render["objects"] if o["kind"] == "PersistentVolumeClaim"]
    started = time.monotonic()
    run = run_interrupted(
        engine,
        ("destroy", "--yes", "--skip-preview"),
        lambda line: " deleting" in line,
        lambda pid: os.killpg(pid, signal.SIGKILL),
    )
    gone = [o["metadata"]["name"] for o in claims if live_object(session.cluster, o) is None]
    if gone:
        raise StepError(f"protected claims deleted by an interrupted destroy: {', '.join(gone)}")
    said, steps = converge(engine)
    seconds = time.monotonic() - started
    orphans, detail = check_converged(session, "destroy")
    first = "killed at its first deletion" if run.triggered else f"ended (exit {run.code}) before deleting"
    return Row(
        "destroy interrupted (protect on)",
        f"{first}; {len(claims)} protected claim(s) kept; `up` then {said}",
        steps,
        seconds,
        orphans,
        detail,
    )


MOVED_NAMESPACE = "llm-d-e2e-moved"


def interrupted_move(session: Session) -> Row:
    """The stack moved to another namespace with protection on, killed at its first change: the protected
    claim stays where it is; the move undone in the config, `up` converges."""
    engine, render = session.engine, session.state["render"]
    claims = [o for o in render["objects"] if o["kind"] == "PersistentVolumeClaim"]
    if not protected_resources(render["resources"]):
        return Row("namespace move interrupted (protect on)", "nothing protected in this stack", detail="not run")
    engine.set_config("llmd:namespace", MOVED_NAMESPACE)
    started = time.monotonic()
    run = run_interrupted(
        engine,
        ("up", "--yes", "--skip-preview"),
        lambda line: any(op in line for op in (" creating", " deleting", " replacing")),
        lambda pid: os.killpg(pid, signal.SIGKILL),
    )
    gone = [o["metadata"]["name"] for o in claims if live_object(session.cluster, o) is None]
    if gone:
        raise StepError(f"protected claims deleted by an interrupted move: {', '.join(gone)}")
    first = (
        "killed at its first change"
        if run.triggered
        else f"refused before any change: {gist(Result([], run.code, run.output, ''))}"
    )
    engine.remove_config("llmd:namespace")
    said, steps = converge(engine)
    seconds = time.monotonic() - started
    orphans, detail = check_converged(session, "move")
    return Row(
        "namespace move interrupted (protect on)",
        f"{first}; {len(claims)} protected claim(s) kept; the move undone, `up` then {said}",
        steps,
        seconds,
        orphans,
        detail,
    )


def _interruption(sig: str, point: str) -> Callable[[Session], Row]:
    return lambda session: interrupted_up(session, sig, point)


FAULTS: dict[str, Callable[[Session], Row]] = {
    **{f"{sig}-{point}": _interruption(sig, point) for sig in SIGNALS for point in POINTS},
    "apiserver-restart": apiserver_restart,
    "lost-node": lost_node,
    "destroy-interrupted": interrupted_destroy,
    "move-interrupted": interrupted_move,
    "never-ready": never_ready,
}


def table(rows: list[Row]) -> str:
    head = ["fault", "what `pulumi up` said next", "hand steps", "to converge", "orphans", "checked"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def run_faults(
    preset: str, workdir: Path, bins: dict[str, Path], names: list[str], overrides: list[str] | None = None
) -> Report:
    """The preset deployed, then each named fault in turn (each a step), the table, then the stack destroyed."""
    session = new_session(preset, workdir, bins, overrides)
    report, rows = session.report, []
    try:
        start(session, bins)

        def up() -> str:
            result = session.engine.run("up", "--yes", "--skip-preview")
            if not result.ok:
                raise StepError(result.tail(40))
            return "deployed"

        timed(report, "pulumi up", up)
        for name in names:

            def step(fault: str = name) -> str:
                row = FAULTS[fault](session)
                rows.append(row)
                return f"{row.observed}; hand steps: {', '.join(row.hand_steps) or 'none'}; {row.seconds:.0f} s"

            timed(report, f"fault: {name}", step)
        timed(
            report,
            "destroy under protect",
            lambda: destroy_under_protect(session.engine, session.cluster, session.state),
        )
    except (StepError, ClusterError):
        pass
    finally:
        session.close(False)
        if rows:
            text = table(rows)
            (workdir / "faults.md").write_text(text + "\n")
            print(text, flush=True)
    return report
