"""A real Helm on the real router chart (tests/fixtures/upstream/charts), as the Pulumi provider runs it.

The Helm binary is the one scripts/install_helm.py pins (`./run test` installs it). Without it the chart
tests fail: a skipped contract is not a passing one.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from scripts import install_helm
from stacks.config import loading
from stacks.planning.plan import plan
from tests.helpers import UPSTREAM

CHARTS = UPSTREAM / "charts"
# The v1.0.0 chart the seeds pin is not available offline; the tests render the v0.x layout.
CHART_VERSION = "v0.10.0"
V0 = f"router.version={CHART_VERSION}"


@dataclass(frozen=True)
class ChartInputs:
    """What the program hands the provider's Helm: release name, namespace and values."""

    release: str
    namespace: str
    values: dict[str, Any]


@dataclass(frozen=True)
class Template:
    returncode: int
    stdout: str
    stderr: str

    @property
    def objects(self) -> list[dict[str, Any]]:
        assert self.returncode == 0, self.stderr
        return [doc for doc in yaml.safe_load_all(self.stdout) if doc]


def chart_inputs(name: str, overrides: tuple[str, ...] = ()) -> ChartInputs:
    stack = plan(loading.load_named(name, [V0, *overrides]))
    return ChartInputs(stack.config.router.release, stack.config.namespace, stack.router_values)


def helm() -> Path:
    if not install_helm.HELM.is_file():
        pytest.fail(f"Helm {install_helm.HELM_VERSION} is not at {install_helm.HELM}: `./run test` installs it")
    return install_helm.HELM


def template(inputs: ChartInputs, chart: str = CHART_VERSION) -> Template:
    return _template(inputs.release, inputs.namespace, json.dumps(inputs.values, sort_keys=True), chart)


@functools.cache
def _template(release: str, namespace: str, values: str, chart: str) -> Template:
    archive = CHARTS / f"llm-d-router-standalone-{chart}.tgz"
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HELM_CACHE_HOME": home, "HELM_CONFIG_HOME": home, "HELM_DATA_HOME": home}
        values_file = Path(home) / "values.json"  # JSON is YAML
        values_file.write_text(values)
        command = [str(helm()), "template", release, str(archive), "-n", namespace, "-f", str(values_file)]
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    return Template(result.returncode, result.stdout, result.stderr)
