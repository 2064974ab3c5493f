"""After a fault: what the engine said, the commands the README gives for it, and the checks that the stack
converged to what an uninterrupted run leaves (a fresh render on the API server, a preview that plans
nothing, no pending operation, no object the provider applied outside the state or twice in it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.engine import Engine, Result
from e2e.session import Session
from e2e.steps import StepError, check_live_matches, render_stack

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
