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

import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from e2e.cluster_faults import (
    IMAGE_KEY,
    ROLL_IMAGE,
    apiserver_restart,
    lost_node,
    model_servers,
    rolls_server,
    toggle_image,
)
from e2e.engine import Result
from e2e.interrupt import run_interrupted
from e2e.kwok import MISSING_IMAGE_SUFFIX, ClusterError
from e2e.lifecycle import destroy_under_protect, protected_resources
from e2e.recovery import Row, check_converged, converge, failed_resources, gist
from e2e.rollout_state import engine_lines, rollout, wait_settled
from e2e.session import Session, new_session, start
from e2e.steps import Report, StepError, live_object, render_stack, timed


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
        rolls_server,
        fresh=False,
    ),
}
SIGNALS = {"sigint": signal.SIGINT, "sigkill": signal.SIGKILL}


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
        toggle_image(session)
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


def _up_missing_image(session: Session, namespace: str, name: str) -> tuple[Result, float]:
    """The model server's image set to one that does not exist, on a settled rollout; `up`, timed."""
    wait_settled(session.cluster, namespace, name)
    session.engine.set_config(IMAGE_KEY, f"{ROLL_IMAGE}{MISSING_IMAGE_SUFFIX}")
    started = time.monotonic()
    result = session.engine.run("up", "--yes", "--skip-preview")
    return result, time.monotonic() - started


def never_ready(session: Session) -> Row:
    """A model-server image that does not exist: `up` fails within the workload's derived budget, naming it;
    the config fixed, `up` converges without a destroy. Should the provider report success (its awaiter can take
    a Deployment from before the patch: e2e/rollout_state.py), what the engine said and what the cluster held
    go into the row, the image is fixed, and the fault is tried once more; a second success fails the step."""
    engine = session.engine
    engine.set_config(IMAGE_KEY, f"{ROLL_IMAGE}{MISSING_IMAGE_SUFFIX}")
    render = render_stack(session.project, engine.stack, session.workdir / "render-never-ready")
    engine.remove_config(IMAGE_KEY)
    server = model_servers(render["objects"])[0]
    name, namespace = server["metadata"]["name"], server["metadata"]["namespace"]
    budget = int(server["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    session.state["rolled"] = False
    result, failed_after = _up_missing_image(session, namespace, name)
    first = ""
    if result.ok:
        held = rollout(session.cluster, namespace, name)
        said = " | ".join(engine_lines(result.stdout, name))
        first = f"first try: `up` succeeded after {failed_after:.0f} s (engine: {said}; cluster: {json.dumps(held)}); "
        engine.remove_config(IMAGE_KEY)
        converge(engine)
        result, failed_after = _up_missing_image(session, namespace, name)
        if result.ok:
            raise StepError(f"`pulumi up` succeeded twice though {name}'s image does not exist; {first}")
    failing = failed_resources(result.stdout + result.stderr)
    if len(failing) != 1 or not next(iter(failing)).endswith(name):
        raise StepError(f"the resources that failed are {sorted(failing)}, not {name} alone:\n{result.tail(20)}")
    message = " ".join(next(iter(failing.values())))
    if name not in message or "ImagePullBackOff" not in message:
        raise StepError(f"the failure does not name {name} and its pod's reason: {message[:300]}")
    if not budget <= failed_after <= budget + 120:
        raise StepError(f"`pulumi up` failed after {failed_after:.0f} s; {name}'s derived budget is {budget} s")
    engine.remove_config(IMAGE_KEY)
    fixed = time.monotonic()
    said, steps = converge(engine)
    seconds = time.monotonic() - fixed
    orphans, detail = check_converged(session, "fixed")
    return Row(
        f"{name} never ready (image not found)",
        f"{first}failed after {failed_after:.0f} s (budget {budget} s), one resource: {message[:200]}; fixed, then "
        f"{said}",
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
