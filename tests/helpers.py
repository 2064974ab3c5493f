"""Shared test helpers: renders (cached per session), schema validation against the real schemas."""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import kubernetes_validate.utils as k8s_schemas
import yaml
from referencing import Registry, Resource

from stacks.config import loading
from stacks.planning.plan import StackPlan, plan
from stacks.review.render import Render, render

# Outside data the tests check against, copied into the repo with its source (fixtures/upstream/SOURCES.md).
UPSTREAM = Path(__file__).resolve().parent / "fixtures" / "upstream"
SCHEMAS = UPSTREAM / "schemas"
SEEDS = UPSTREAM / "seeds"
KUBERNETES_VERSION = "1.34.0"


GMP_PROJECT = "autoscaling.gcp_project=llmd-e2e"


def script_module(name: str, path: Path) -> ModuleType:
    """A script outside any package (a benchmark, a fixture's refresh.py) loaded as module `name`, registered in
    sys.modules so that its dataclasses can resolve their annotations."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def with_gmp_project(name: str, overrides: tuple[str, ...], stack: bool = False) -> tuple[str, ...]:
    """`overrides` and, where NAME autoscales on GKE Managed Prometheus off a created GKE cluster, the project KEDA
    queries (a stack that does not autoscale refuses autoscaling settings: they would do nothing)."""
    config = loading.load_named(name) if stack else loading.load_preset(name)
    gmp = "monitoring.provider=gke-managed-prometheus" in overrides
    return (*overrides, GMP_PROJECT) if gmp and config.autoscaling.enabled else overrides


@functools.cache
def rendered(name: str, overrides: tuple[str, ...] = ()) -> Render:
    """A preset's render (a stack file of the same name, such as Pulumi.dev.yaml, is not read)."""
    return render(plan(loading.load_preset(name, list(overrides))), name)


@functools.cache
def rendered_stack(name: str, overrides: tuple[str, ...] = ()) -> Render:
    """The render of the stack file Pulumi.NAME.yaml (its preset under the stack's own config)."""
    assert loading.stack_file_exists(name), f"no Pulumi.{name}.yaml"
    return render(plan(loading.load_named(name, list(overrides))), name)


# The example serving stacks on the example cluster stack (Pulumi.gke-cluster.yaml).
SERVING_STACKS = ("qwen3-32b", "qwen3-8b")


def serving_plans(overrides: dict[str, list[str]] | None = None) -> dict[str, StackPlan]:
    """The example serving stacks' plans, each with its own `--set` overrides."""
    return {name: plan(loading.load_named(name, (overrides or {}).get(name))) for name in SERVING_STACKS}


def manifests(result: Render) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(result.manifests) if doc]


def resources(result: Render) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(result.resources)
    return rows


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def _strict(schema: Any) -> Any:
    """CRD schemas leave unknown fields open (the API server prunes them); tests close them."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in SCHEMAS.rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for version in spec["versions"]:
                api_version = f"{spec['group']}/{version['name']}"
                schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
                out[(api_version, spec["names"]["kind"])] = _strict(schema)
    assert out, f"no CRD schemas under {SCHEMAS}"
    return out


@functools.cache
def _validator(api_version: str, kind: str) -> Any:
    """One validator per kind, built once: kubernetes_validate.validate re-reads its schema files (megabytes)
    on every call. The schema it picks is the same: the strict one of KUBERNETES_VERSION."""
    crd = _crd_schemas().get((api_version, kind))
    if crd is not None:
        return jsonschema.Draft7Validator(crd)
    wanted = k8s_schemas.major_minor(KUBERNETES_VERSION)
    version = [v for v in k8s_schemas.all_versions() if k8s_schemas.major_minor(v) <= wanted][-1]
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = k8s_schemas.schema_contents(f"{folder}/{kind.lower()}-{group}.json", KUBERNETES_VERSION)
    definitions = k8s_schemas.schema_contents(f"{folder}/_definitions.json", KUBERNETES_VERSION)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate(obj: dict[str, Any]) -> None:
    """Built-in kinds against the Kubernetes schemas (strict); custom resources against their CRD."""
    _validator(obj["apiVersion"], obj["kind"]).validate(obj)


def router_chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The router's Helm chart resource (other charts, such as a device plugin, may sit beside it)."""
    chart: dict[str, Any] = next(
        r for r in rows if r["type"] == "kubernetes:helm.sh/v4:Chart" and r["name"] == "llmd-router-chart"
    )
    return chart


# Labels the LeaderWorkerSet controller puts on the pods it creates (kubernetes-sigs/lws, api/leaderworkerset/v1).
LWS_NAME, LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/worker-index"


def pods(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, str], dict[str, Any]]]:
    """Every pod a workload creates: (where from, labels at run time, pod spec)."""
    for obj in objects:
        kind, name, spec = obj["kind"], obj["metadata"]["name"], obj.get("spec", {})
        if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            yield f"{kind}/{name}", spec["template"]["metadata"].get("labels", {}), spec["template"]["spec"]
        elif kind == "CronJob":
            template = spec["jobTemplate"]["spec"]["template"]
            yield f"{kind}/{name}", template["metadata"].get("labels", {}), template["spec"]
        elif kind == "LeaderWorkerSet":
            groups = spec["leaderWorkerTemplate"]
            leader = groups.get("leaderTemplate", groups["workerTemplate"])
            for role, template, index in (("leader", leader, "0"), ("worker", groups["workerTemplate"], "1")):
                run_time = {**template["metadata"].get("labels", {}), LWS_NAME: name, LWS_WORKER_INDEX: index}
                yield f"{kind}/{name}/{role}", run_time, template["spec"]
