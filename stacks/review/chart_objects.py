"""The objects a Helm chart row renders, as the engine sees them: `helm template` with the pinned Helm
(scripts/install_helm.py) on the chart the row names, from the row's own values.

Under the real engine each object a `kubernetes:helm.sh/v4:Chart` renders is a resource of its own, named
`<chart>:<namespace>/<name>` (`<chart>:<name>` where the kind has no namespace); the change plan compares
them object by object, so a value that adds, removes or changes one (`router.epp_replicas: 2` adds the
EPP's leader-election Role and RoleBinding) shows in it. The router chart and the Gateway's body-based
routing chart are expanded; a row whose `chart` is a file on this machine (`router.chart_file`, the e2e's)
is expanded from that file, an OCI reference from the chart the shelf holds
(tests/fixtures/upstream/charts, SOURCES.md): the version's own archive, else the router chart at main
(`v0`, the newest layout offline; the seeds' v1.0.0 is not on the shelf). Main's chart reads the EPP's
plugin config as v0.x does (`pluginsCustomConfig`, a file of YAML): a v1.0.0 row's `pluginsConfig` map is
laid out that way first, as components/specs/router_values.py lays it out for a v0.x chart.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from components.specs.bbr import harden_bbr_object
from components.specs.router_values import VALUES_CHECKSUM_ANNOTATION, values_checksum
from components.specs.security import harden_chart_object
from stacks.config.errors import ConfigError
from stacks.config.loading import PROJECT_DIR

CHARTS = PROJECT_DIR / "tests" / "fixtures" / "upstream" / "charts"
ROUTER = "llm-d-router-standalone"
BBR = "body-based-routing"
EXPANDED = (ROUTER, BBR)
ROUTER_NEWEST = "v0"
# Kinds without a namespace among what these charts render (the engine names them `<chart>:<name>`).
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace", "PriorityClass"}
HELM_TIMEOUT_S = 60


def _family(row: dict[str, Any]) -> str | None:
    chart = Path(str(row.get("inputs", {}).get("chart", "")).rstrip("/")).name
    return next((f for f in EXPANDED if chart.startswith(f)), None)


def expands(row: dict[str, Any]) -> bool:
    """Whether the change plan expands this chart row (the router's, the Gateway's body-based routing)."""
    return _family(row) is not None


def _as_declared(obj: dict[str, Any], family: str, values: dict[str, Any]) -> dict[str, Any]:
    """The object as the program's transforms hand it to the engine (components/router.py: hardened pods and
    the values' digest on the EPP's pod template; components/gateway_front.py: BBR's hardening)."""
    kind = obj.get("kind")
    if family == ROUTER and kind in ("Deployment", "StatefulSet", "DaemonSet"):
        obj = harden_chart_object(obj)
        if kind == "Deployment":
            metadata = obj.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {})
            annotations = metadata.get("annotations") or {}
            metadata["annotations"] = {**annotations, VALUES_CHECKSUM_ANNOTATION: values_checksum(values)}
    if family == BBR and kind == "Deployment":
        obj = harden_bbr_object(obj)
    return obj


def _chart_path(inputs: dict[str, Any]) -> Path:
    chart, version = str(inputs.get("chart", "")), str(inputs.get("version") or "")
    if not chart.startswith("oci://"):  # a chart file on this machine (router.chart_file, gateway.bbr_chart_file)
        path = Path(chart).expanduser()
        path = path if path.is_absolute() else PROJECT_DIR / path
        if path.exists():
            return path
        raise ConfigError("chart", chart, "not a chart on this machine: the change plan expands the chart it renders")
    name = chart.rstrip("/").rsplit("/", 1)[-1]
    for candidate in (CHARTS / f"{name}-{version}.tgz", CHARTS / f"{name}-{version}"):
        if candidate.exists():
            return candidate
    if name == ROUTER:
        return CHARTS / f"{ROUTER}-{ROUTER_NEWEST}.tgz"
    raise ConfigError("chart", f"{chart}:{version}", f"no copy in {CHARTS.relative_to(PROJECT_DIR)} to expand")


def _for_chart(values: dict[str, Any], chart: Path) -> dict[str, Any]:
    """The values laid out for the chart at `chart`: a v1.0.0 `pluginsConfig` map, expanded by a v0.x layout
    (main's), becomes the `pluginsCustomConfig` file the v0.x chart reads."""
    epp = (values.get("router") or {}).get("epp") or {}
    if "pluginsConfig" not in epp or chart.name != f"{ROUTER}-{ROUTER_NEWEST}.tgz":
        return values
    epp = {k: v for k, v in epp.items() if k != "pluginsConfig"}
    name = str(epp.get("pluginsConfigFile", "custom-plugins.yaml"))
    picker = values["router"]["epp"]["pluginsConfig"]
    epp["pluginsCustomConfig"] = {name: yaml.safe_dump(picker, sort_keys=False)}
    return {**values, "router": {**values["router"], "epp": epp}}


def _helm() -> Path:
    from scripts import install_helm  # the pin the tests install; not a module of the program

    if install_helm.HELM.is_file():
        return install_helm.HELM
    try:  # a fresh clone, or a command run without `./run`: installed here, once
        return install_helm.install()
    except (SystemExit, OSError, subprocess.CalledProcessError) as error:
        raise ConfigError(
            "helm",
            str(install_helm.HELM.relative_to(PROJECT_DIR)),
            f"the change plan expands the router chart with the pinned Helm {install_helm.HELM_VERSION}, which is"
            f" missing and could not be installed ({error}): run `python scripts/install_helm.py`",
        ) from None


def type_token(obj: dict[str, Any]) -> str:
    """The engine's type of a Kubernetes object: `kubernetes:<group>/<version>:<Kind>`, core as `core/v1`."""
    api = str(obj.get("apiVersion", ""))
    return f"kubernetes:{api if '/' in api else 'core/' + api}:{obj.get('kind', '')}"


def objects(row: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, engine name) -> a row of its own (`type`, `name`, `inputs`: the object) for every object the
    chart row renders."""
    inputs = row.get("inputs", {})
    release, namespace = str(inputs.get("name") or row["name"]), str(inputs.get("namespace") or "default")
    with tempfile.TemporaryDirectory() as home:
        values = Path(home) / "values.json"  # JSON is YAML
        chart = _chart_path(inputs)
        values.write_text(json.dumps(_for_chart(inputs.get("values") or {}, chart), sort_keys=True))
        command = [str(_helm()), "template", release, str(chart), "-n", namespace, "-f", str(values)]
        if inputs.get("skipCrds"):
            command.append("--skip-crds")
        env = {**os.environ, "HELM_CACHE_HOME": home, "HELM_CONFIG_HOME": home, "HELM_DATA_HOME": home}
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, env=env, check=False, timeout=HELM_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise ConfigError(row["name"], release, f"helm template ran past {HELM_TIMEOUT_S} s") from None
    if result.returncode != 0:
        first = next((line for line in result.stderr.splitlines() if line.strip()), "no output")
        raise ConfigError(row["name"], release, f"helm template refused its values: {first}")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    family = _family(row)
    assert family is not None
    for rendered in yaml.safe_load_all(result.stdout):
        if not isinstance(rendered, dict) or "kind" not in rendered:
            continue
        obj = _as_declared(rendered, family, inputs.get("values") or {})
        meta = obj.setdefault("metadata", {})
        if obj["kind"] in CLUSTER_SCOPED:
            name = f"{row['name']}:{meta.get('name', '')}"
        else:
            meta.setdefault("namespace", namespace)
            name = f"{row['name']}:{meta['namespace']}/{meta.get('name', '')}"
        out[(type_token(obj), name)] = {"type": type_token(obj), "name": name, "inputs": obj}
    return out
