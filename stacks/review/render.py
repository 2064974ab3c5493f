"""Write an offline render: manifests.yaml, resources.json and summary.md (see DESIGN.md)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stacks.config.cluster_outputs import OUTPUTS_FILE
from stacks.planning.cluster_plan import ClusterPlan
from stacks.planning.plan import StackPlan
from stacks.review import offline
from stacks.review.cluster_summary import cluster_summary
from stacks.review.offline import RecordedResource, Recording
from stacks.review.summary import summary
from stacks.review.tier_curve_table import PLOT_FILE
from stacks.review.tier_plot import tier_curve_png

# Resource types that are Pulumi machinery, not Kubernetes objects the program declares.
_NOT_MANIFESTS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "pulumi:providers:")


@dataclass(frozen=True)
class Render:
    manifests: str
    resources: str
    summary: str
    cluster_outputs: str | None = None  # a cluster stack's `llmdCluster`, for serving stacks read offline
    tier_plot: bytes | None = None  # the workload's tier curve (stacks/review/tier_plot.py), with a workload

    def write(self, out: Path) -> None:
        """UTF-8 whatever the locale; every file encoded before any is written, each written whole (a
        temporary file renamed over it), so a failed write leaves no half-written render."""
        files = {
            "manifests.yaml": self.manifests.encode(),
            "resources.json": self.resources.encode(),
            "summary.md": self.summary.encode(),
            **({OUTPUTS_FILE: self.cluster_outputs.encode()} if self.cluster_outputs is not None else {}),
            **({PLOT_FILE: self.tier_plot} if self.tier_plot is not None else {}),
        }
        out.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            partial = out / f".{name}.partial"
            partial.write_bytes(content)
            os.replace(partial, out / name)


def kubernetes_objects(resources: list[RecordedResource]) -> list[dict[str, Any]]:
    objects = [
        r.inputs
        for r in resources
        if r.custom and r.type.startswith("kubernetes:") and not r.type.startswith(_NOT_MANIFESTS)
    ]

    def key(obj: dict[str, Any]) -> tuple[str, str, str]:
        meta = obj.get("metadata", {})
        return obj["kind"], meta.get("namespace", ""), meta.get("name", "")

    return sorted(objects, key=key)


def _manifests_yaml(objects: list[dict[str, Any]]) -> str:
    return "".join("---\n" + yaml.safe_dump(o, sort_keys=True, default_flow_style=False, width=120) for o in objects)


def _resources_json(recording: Recording) -> str:
    rows = [
        {
            "type": r.type,
            "name": r.name,
            "parent": r.parent,
            "dependsOn": r.depends_on,
            "provider": r.provider,
            "inputs": r.inputs,
            "secretPaths": r.secret_paths,
            "options": r.options,
        }
        for r in sorted(recording.resources, key=lambda r: (r.type, r.name))
    ]
    return json.dumps(rows, indent=2, sort_keys=True) + "\n"


def render(
    stack_plan: StackPlan | ClusterPlan, stack: str, servings: list[tuple[str, str, str]] | None = None
) -> Render:
    """`servings`: a cluster stack's serving stacks in this repo (stack, namespace, model), for its summary."""
    recording = offline.record(stack_plan, stack)
    objects = kubernetes_objects(recording.resources)
    if isinstance(stack_plan, ClusterPlan):
        return Render(
            manifests=_manifests_yaml(objects),
            resources=_resources_json(recording),
            summary=cluster_summary(stack_plan, stack, servings or []),
            cluster_outputs=json.dumps(stack_plan.outputs.exported(), indent=2, sort_keys=True) + "\n",
        )
    return Render(
        manifests=_manifests_yaml(objects),
        resources=_resources_json(recording),
        summary=summary(stack_plan, stack, recording),
        tier_plot=tier_curve_png(stack_plan.tier_curve) if stack_plan.tier_curve is not None else None,
    )
