"""The examples of the README and docs/ run as printed."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from components.specs.router_values import router_endpoint
from stacks.config import loading
from stacks.planning.plan import plan

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [b for page in PAGES for b in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(), flags=re.DOTALL)]
# A transcript: `$ ./run ...` then the lines it prints.
TRANSCRIPTS = [b for b in BLOCKS if b.startswith("$ ./run ")]


def test_the_pages_have_their_transcripts() -> None:
    """The README's three moved to docs/ (getting-started, sizing-and-payoff) and still run here."""
    assert len(TRANSCRIPTS) >= 3
    shown = "".join((ROOT / "docs" / p).read_text() for p in ("getting-started.md", "sizing-and-payoff.md"))
    assert all(b in shown for b in TRANSCRIPTS)


@pytest.mark.parametrize("block", TRANSCRIPTS, ids=lambda b: b.splitlines()[0][8:60])
def test_a_transcript_prints_what_the_readme_shows(block: str, tmp_path: Path) -> None:
    command, *printed = block.strip().splitlines()
    args = shlex.split(command.removeprefix("$ ./run "))
    args[args.index("--out") + 1] = str(tmp_path / "out")
    result = subprocess.run(
        [sys.executable, "-m", "stacks", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert (result.stdout + result.stderr).splitlines() == printed
    assert result.returncode == 2  # the CLI's exit code for invalid stack config


def test_the_curl_example_targets_the_dev_stack_it_follows() -> None:
    block = next(b for b in BLOCKS if "curl -sS" in b)
    stack = plan(loading.load_named("dev"))
    namespace = re.search(r"kubectl -n (\S+)", block)
    url = re.search(r"curl -sS (http://[^/\s]+)(/\S+)", block)
    model = re.search(r'"model": "([^"]+)"', block)
    assert namespace and url and model
    assert model.group(1) == stack.model_server.model.name
    assert namespace.group(1) == stack.config.namespace
    # From a pod in the namespace, http://<service> is the routerEndpoint (port 80).
    short = f"{url.group(1)}.{namespace.group(1)}.svc.cluster.local:80"
    assert short == router_endpoint(stack.config.router.release, stack.config.namespace)
