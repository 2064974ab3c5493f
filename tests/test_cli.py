"""The offline CLI as a user runs it: a fresh process, exit codes, one-line errors."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stacks", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_list_prints_every_preset() -> None:
    result = run("list")
    assert result.returncode == 0
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert names == sorted(p.stem for p in (ROOT / "stacks" / "presets").glob("*.yaml"))
    assert "gpu-vllm-native-cpu" in names


def test_render_writes_the_three_files(tmp_path: Path) -> None:
    result = run("render", "gpu-vllm-native-cpu", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifests.yaml", "resources.json", "summary.md"]
    kinds = {d["kind"] for d in yaml.safe_load_all((tmp_path / "manifests.yaml").read_text()) if d}
    assert kinds == {"Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget", "Secret", "ServiceAccount"}


def test_bad_value_exits_non_zero_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("render", "gpu-vllm-native-cpu", "--set", "cache.replicas=banana", "--out", str(out))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "cache.replicas" in lines[0] and "banana" in lines[0]
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("command", ["render", "check"])
def test_a_fit_error_exits_2_with_one_line_and_writes_nothing(command: str, tmp_path: Path) -> None:
    """The planner's fit check runs inside the CLI's error handler, for every command that plans."""
    out = tmp_path / "out"
    overrides = ["--set", "cache.replicas=4", "--set", "cache.tier.cpu=900GiB"]
    result = run(command, "gke-h100-lustre", *overrides, *(["--out", str(out)] if command == "render" else []))
    assert result.returncode == 2
    assert result.stderr.startswith("error: invalid stack config: cache.tier.cpu = '900 GiB': 4 pods x 940Gi")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists()


def test_unknown_name_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    result = run("render", "no-such-stack", "--out", str(tmp_path))
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1


def test_renders_in_separate_processes_are_byte_identical(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        result = subprocess.run(
            [sys.executable, "-m", "stacks", "render", "gpu-vllm-native-cpu", "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert result.returncode == 0, result.stderr
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outputs[0] == outputs[1]


def test_rendering_every_preset_in_one_process_leaves_stderr_clean() -> None:
    """The mock engine's worker threads open event loops; none may fail in a finalizer."""
    script = (
        "from stacks.config import loading\n"
        "from stacks.planning.plan import plan\n"
        "from stacks.review.render import render\n"
        "for name in loading.preset_names():\n"
        "    render(plan(loading.load_preset(name)), name)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert result.stderr == ""
