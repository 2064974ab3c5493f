"""The Go side of building the e2e tools: the module cache and build cache under the tools' cache, a wrapper module
per build, each step logged and failing with one line (e2e/tools.py says which tools, at which versions)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path


class BuildError(RuntimeError):
    """One line: which tool, which step, what went wrong."""


def cache_root() -> Path:
    explicit = os.environ.get("LLMD_E2E_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "llmd-e2e"


def go_version() -> str:
    try:
        out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        raise BuildError(f"go: not usable ({error}); the e2e tools are built with Go 1.26+") from None
    return out.stdout.strip()


def go_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOMODCACHE=str(root / "go" / "mod"),
        GOCACHE=str(root / "go" / "build"),
        GOFLAGS="-mod=mod -buildvcs=false -trimpath",
        GOTOOLCHAIN="local",
        CGO_ENABLED="0",
        GOWORK="off",
    )
    return env


def run_step(tool: str, step: str, argv: Sequence[str], cwd: Path, env: dict[str, str], log: Path) -> None:
    with log.open("a") as sink:
        sink.write(f"$ {' '.join(argv)}\n")
        sink.flush()
        proc = subprocess.run(list(argv), cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-1:]
        raise BuildError(f"{tool}: {step} failed (exit {proc.returncode}): {' '.join(tail)[:300]} (log: {log})")


def module_source(tool: str, module: str, version: str, root: Path | None = None) -> Path:
    """Where the module cache holds a module's source (its data files: schemas, scripts, stages), downloaded
    through the proxy when missing; the go command resolves the path, case-escaping included."""
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        env=go_env(root),
        cwd=root,
    )
    try:
        return Path(json.loads(out.stdout)["Dir"])
    except (KeyError, ValueError):
        detail = (out.stderr or out.stdout).strip().replace("\n", " ")[:300]
        raise BuildError(f"{tool}: go mod download {module}@{version} failed: {detail}") from None


def wrapper_module(work: Path, module: str, go_mod_body: str, files: dict[str, str] | None = None) -> None:
    work.mkdir(parents=True, exist_ok=True)
    (work / "go.mod").write_text(f"module {module}\n\ngo 1.26\n\n{go_mod_body}")
    for name, text in (files or {}).items():
        (work / name).write_text(text)
