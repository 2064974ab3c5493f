"""What every step of a preset's run shares: its report line, the offline render of the stack the engine
runs, and the live objects read back from the API server."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e import compare
from e2e.engine import python
from e2e.kwok import Cluster, ClusterError


class StepError(RuntimeError):
    pass


@dataclass
class Report:
    preset: str
    lines: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    failed: bool = False

    def say(self, line: str) -> None:
        text = f"[e2e {self.preset}] {line}"
        self.lines.append(text)
        print(text, flush=True)


def timed(report: Report, label: str, action: Callable[[], str | None]) -> None:
    started = time.monotonic()
    try:
        detail = action()
    except (StepError, ClusterError) as error:
        report.say(f"FAIL {label} ({time.monotonic() - started:.0f} s): {error}")
        report.failed = True
        raise
    report.say(f"ok   {label} ({time.monotonic() - started:.0f} s){': ' + detail if detail else ''}")


def render_stack(project: Path, stack: str, out: Path) -> dict[str, Any]:
    """The offline render of the very stack file the engine runs, in the project copy."""
    result = subprocess.run(
        [python(), "-m", "stacks", "render", stack, "--out", str(out)], cwd=project, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise StepError(f"offline render: {(result.stderr or result.stdout).strip()[-400:]}")
    objects = [o for o in yaml.safe_load_all((out / "manifests.yaml").read_text()) if o]
    return {"objects": objects, "resources": (out / "resources.json").read_text(), "dir": out}


def live_object(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj.get("metadata", {})
    kind = obj["kind"]
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    resource = f"{kind}.{group}" if group else kind
    scope = ["-n", meta["namespace"]] if meta.get("namespace") else []
    out = cluster.kubectl("get", resource, meta["name"], *scope, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def check_live_matches(cluster: Cluster, objects: list[dict[str, Any]]) -> str:
    problems = []
    for obj in objects:
        live = live_object(cluster, obj)
        name = f"{obj['kind']}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        if live is None:
            problems.append(f"{name}: not on the API server")
            continue
        want = dict(obj)
        if obj["kind"] == "Secret":
            want.pop("stringData", None)  # the API server keeps it as data
        problems += [f"{name}: {p}" for p in compare.missing_fields(want, live)]
    if problems:
        raise StepError(f"{len(problems)} field(s) differ from the render:\n  " + "\n  ".join(problems[:20]))
    return f"{len(objects)} objects hold every field the render sets"
