"""The real Pulumi CLI, run offline against one stack of a copy of the project.

Local file backend, passphrase secrets provider, no update check, no plugin download: the engine
finds the Kubernetes provider and the Python language host on PATH. The project is copied (tracked
and untracked files, as `git ls-files` lists them) so that stack files and state stay out of the
checkout; the copy shares the checkout's virtualenv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PASSPHRASE = "llmd-e2e-local-state"  # encrypts only the throwaway local state of an e2e run


class EngineError(RuntimeError):
    pass


@dataclass
class Result:
    argv: list[str]
    code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def tail(self, lines: int = 25) -> str:
        return "\n".join((self.stdout + "\n" + self.stderr).strip().splitlines()[-lines:])


def copy_project(into: Path) -> Path:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    if into.exists():
        shutil.rmtree(into)
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (into / ".venv").symlink_to(REPO / ".venv")
    (into / "policies" / ".venv").symlink_to(REPO / ".venv")
    return into


def language_host_shim(bin_dir: Path, exec_script: Path) -> Path:
    """`pulumi-language-python` on PATH: e2e/language_host.py under the project's interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "pulumi-language-python"
    shim.write_text(
        "#!/bin/sh\n"
        f'LLMD_E2E_PYTHON_EXEC="{exec_script}" exec "{REPO / ".venv" / "bin" / "python"}" '
        f'"{REPO / "e2e" / "language_host.py"}" "$@"\n'
    )
    shim.chmod(0o755)
    return shim


@dataclass
class Engine:
    project: Path
    workdir: Path
    path_dirs: list[Path]
    stack: str = "e2e"
    log: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG"))}
        env.update(
            PATH=os.pathsep.join([*map(str, self.path_dirs), env.get("PATH", "")]),
            PULUMI_HOME=str(self.workdir / "pulumi-home"),
            PULUMI_BACKEND_URL=f"file://{self.workdir / 'state'}",
            PULUMI_CONFIG_PASSPHRASE=PASSPHRASE,
            PULUMI_SKIP_UPDATE_CHECK="true",
            PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
            PULUMI_SKIP_CONFIRMATIONS="true",
            PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK="true",
            PULUMI_DIY_BACKEND_NO_LEGACY_WARNING="true",
            PULUMI_K8S_SUPPRESS_HELM_HOOK_WARNINGS="true",
            NO_COLOR="1",
        )
        return env

    def run(self, *args: str, check: bool = False, timeout: float = 3600) -> Result:
        argv = ["pulumi", *args, "--non-interactive", "--color", "never"]
        if args[0] not in ("login", "plugin", "version"):
            argv += ["--stack", self.stack]
        proc = subprocess.run(argv, cwd=self.project, env=self.env(), capture_output=True, text=True, timeout=timeout)
        result = Result(argv, proc.returncode, proc.stdout, proc.stderr)
        with (self.workdir / "engine.log").open("a") as sink:
            sink.write(f"\n$ {' '.join(argv)}  (exit {proc.returncode})\n{proc.stdout}\n{proc.stderr}\n")
        if check and not result.ok:
            raise EngineError(f"`pulumi {' '.join(args[:2])}` failed (exit {result.code}):\n{result.tail()}")
        return result

    def init(self, config: dict[str, str], secrets: dict[str, str]) -> None:
        (self.workdir / "state").mkdir(parents=True, exist_ok=True)
        self.run("login", f"file://{self.workdir / 'state'}", check=True)
        self.run("stack", "init", "--secrets-provider", "passphrase", check=True)
        for key, value in config.items():
            self.run("config", "set", "--path", key, value, check=True)
        for key, value in secrets.items():
            self.run("config", "set", "--secret", "--path", key, value, check=True)

    def set_config(self, key: str, value: str) -> None:
        self.run("config", "set", "--path", key, value, check=True)

    def remove_config(self, key: str) -> None:
        self.run("config", "rm", "--path", key, check=True)

    def outputs(self) -> dict[str, Any]:
        result = self.run("stack", "output", "--json", check=True)
        return dict(json.loads(result.stdout or "{}"))

    def preview_steps(self) -> list[dict[str, Any]]:
        """The engine's plan: `pulumi preview --json` steps (op and URN per resource)."""
        result = self.run("preview", "--json")
        try:
            doc = json.loads(result.stdout)
        except ValueError:
            raise EngineError(
                f"`pulumi preview --json` printed no JSON (exit {result.code}):\n{result.tail()}"
            ) from None
        if not result.ok and not doc.get("steps"):
            raise EngineError(f"`pulumi preview --json` failed (exit {result.code}):\n{result.tail()}")
        return list(doc.get("steps", []))

    def state(self) -> list[dict[str, Any]]:
        result = self.run("stack", "export", check=True)
        return list(json.loads(result.stdout).get("deployment", {}).get("resources", []))


def python() -> str:
    return str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
