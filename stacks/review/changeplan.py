"""The change plan of a diff: what `pulumi up` does to each changed resource, and what it costs.

Each changed resource is updated in place, rolled (its pods restart under its strategy, each dropping
its CPU tier), or replaced: delete-first where the object keeps a fixed name (pulumi-kubernetes deletes
before it creates when name and namespace stay), create-first otherwise, and why (the field that
forces it). State that a replacement or removal deletes (claims, volumes, Lustre, EFS) is at risk. A model
server whose shared tier's namespace moves says the tier goes cold, and which field moved it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from components.catalog import labels
from components.catalog.cloud_resources import CLOUD_RESOURCES
from components.specs import tier_namespace
from policies.resources import CHART_TYPE
from stacks.review import chart_objects
from stacks.review.field_changes import changed_fields

# Fields whose change replaces the object: pulumi-kubernetes' forceNew table (provider/pkg/provider/diff.go,
# pulumi/pulumi-kubernetes; `.metadata.name` and `.metadata.namespace` for every kind), as path prefixes.
_K8S_REPLACE: dict[str, tuple[str, ...]] = {
    "kubernetes:apps/v1:Deployment": ("spec.selector",),
    "kubernetes:apps/v1:StatefulSet": ("spec.selector", "spec.serviceName", "spec.volumeClaimTemplates"),
    "kubernetes:batch/v1:Job": ("spec.template", "spec.completions", "spec.parallelism", "spec.selector"),
    "kubernetes:core/v1:ConfigMap": ("data", "binaryData"),
    "kubernetes:core/v1:Secret": ("data", "stringData", "type"),
    # Read from the provider's table and held to the engine (`./run e2e`): a claim's size changes in place.
    "kubernetes:core/v1:PersistentVolumeClaim": (
        "spec.accessModes",
        "spec.selector",
        "spec.storageClassName",
        "spec.volumeName",
    ),
    "kubernetes:core/v1:PersistentVolume": ("spec.csi", "spec.nfs", "spec.hostPath", "spec.local"),
    "kubernetes:core/v1:Service": ("spec.clusterIP",),
    "kubernetes:storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
}
# Cloud resources: the provider schemas' replace-on-change (ForceNew) inputs this program sets.
_CLOUD_REPLACE: dict[str, tuple[str, ...]] = {t: r.replace_on for t, r in CLOUD_RESOURCES.items() if r.replace_on}
STATE_TYPES = (
    "kubernetes:core/v1:PersistentVolumeClaim",
    "kubernetes:core/v1:PersistentVolume",
    *(t for t, r in CLOUD_RESOURCES.items() if r.holds_data),
)
_DROPS_TIER = "; each restart drops that pod's CPU tier"
_POD_TEMPLATES = {
    "kubernetes:apps/v1:Deployment": "spec.template",
    "kubernetes:apps/v1:DaemonSet": "spec.template",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": "spec.leaderWorkerTemplate",
}


ChangeKind = Literal["added", "removed", "update", "scale", "rolling", "replace", "ignored"]


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    type: str
    name: str
    why: str
    at_risk: bool = False

    def line(self) -> str:
        risk = " **storage at risk**" if self.at_risk else ""
        return f"- **{self.kind}**{risk} `{self.type}` {self.name}: {self.why}"


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _replacing(row: dict[str, Any], paths: list[str]) -> list[str]:
    kind = row["type"]
    prefixes = list(_K8S_REPLACE.get(kind, ())) + list(_CLOUD_REPLACE.get(kind, ()))
    prefixes += [p.removeprefix("inputs.") for p in row.get("options", {}).get("replaceOnChanges", [])]
    if kind.startswith("kubernetes:"):
        prefixes += ["metadata.name", "metadata.namespace"]
    return sorted({p for p in paths for prefix in prefixes if _under(p, prefix)})


def _strategy(inputs: dict[str, Any]) -> str:
    spec = inputs.get("spec", {})
    rolling = spec.get("strategy", {}).get("rollingUpdate") or spec.get("rolloutStrategy", {}).get(
        "rollingUpdateConfiguration"
    )
    if rolling:
        return f"maxSurge {rolling.get('maxSurge')}, maxUnavailable {rolling.get('maxUnavailable')}"
    if spec.get("updateStrategy"):
        return "one node at a time"
    return "the controller's default"


def _starts_beside_old(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether the rollout adds a new pod before it removes an old one: a surge, or a higher replica count."""
    rolling = (after.get("spec", {}).get("strategy") or {}).get("rollingUpdate") or {}
    surges = str(rolling.get("maxSurge", 0)) not in ("0", "0%")
    grows = int(after.get("spec", {}).get("replicas", 1)) > int(before.get("spec", {}).get("replicas", 1))
    return surges or grows


def _pod_memory(inputs: dict[str, Any]) -> int:
    """Bytes the pod template's containers request (what the scheduler must find on one node)."""
    from components.units import ByteSize

    spec = (inputs.get("spec", {}).get("template") or {}).get("spec") or {}
    total = 0
    for container in spec.get("containers") or []:
        memory = ((container.get("resources") or {}).get("requests") or {}).get("memory")
        if memory:
            total += ByteSize.parse(str(memory)).bytes
    return total


def _fixed_name(before: dict[str, Any], after: dict[str, Any]) -> bool:
    meta_a, meta_b = before["inputs"].get("metadata", {}), after["inputs"].get("metadata", {})
    return bool(meta_b.get("name")) and (meta_a.get("name"), meta_a.get("namespace")) == (
        meta_b.get("name"),
        meta_b.get("namespace"),
    )


def classify(before: dict[str, Any], after: dict[str, Any], paths: list[str]) -> Change:
    kind, name = after["type"], after["name"]
    # The engine keeps the state's value of an ignored field (`ignoreChanges`): no diff, no step.
    ignored = after.get("options", {}).get("ignoreChanges", [])
    kept = [p for p in paths if not any(_under(p, i) for i in ignored)]
    if not kept:
        owned = ", ".join(f"`{p}`" for p in paths)
        return Change("ignored", kind, name, f"{owned} left to its owner (`ignoreChanges`: KEDA scales it); no step")
    paths = kept
    at_risk = kind in STATE_TYPES
    forced = _replacing(after, paths)
    if forced:
        if after.get("options", {}).get("protect"):
            why = f"`{forced[0]}` forces a replacement, which `protect` refuses: `pulumi up` stops here"
            return Change("replace", kind, name, why, at_risk)
        first = "delete-first" if kind.startswith("kubernetes:") and _fixed_name(before, after) else "create-first"
        cost = "it is gone until the new one is ready" if first == "delete-first" else "old and new overlap"
        why = f"{first}: `{forced[0]}` cannot change in place; {cost}"
        return Change("replace", kind, name, why, at_risk)
    template = _POD_TEMPLATES.get(kind)
    if template and any(_under(p, template) for p in paths):
        why = f"its pods restart ({_strategy(after['inputs'])}){_DROPS_TIER}"
        if _starts_beside_old(before["inputs"], after["inputs"]) and _pod_memory(after["inputs"]) < _pod_memory(
            before["inputs"]
        ):
            why += (
                "; **may stall**: a new, smaller pod starts beside the old, larger ones (a surge, or more replicas)"
                " and stays Pending where they filled their nodes (`cache.tier.cpu: auto`): lower `cache.replicas`"
                " by one first, or roll from a tier that left room"
            )
        return Change("rolling", kind, name, why)
    if template and "spec.replicas" in paths:
        old, new = before["inputs"]["spec"].get("replicas"), after["inputs"]["spec"].get("replicas")
        return Change("scale", kind, name, f"in place, {old} → {new} replicas; no pod restarts")
    why = "in place: " + ", ".join(f"`{p}`" for p in paths[:4])
    if kind == "kubernetes:core/v1:PersistentVolumeClaim" and "spec.resources.requests.storage" in paths:
        why += "; the API server grows a claim only where its StorageClass allows expansion, and never shrinks one"
    return Change("update", kind, name, why)


def _stamps(row: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """A workload's shared-tier namespace and the fields it was derived from, as stamped on its metadata."""
    annotations = (row["inputs"].get("metadata") or {}).get("annotations") or {}
    try:
        identity = json.loads(annotations.get(labels.KV_TIER_IDENTITY_ANNOTATION) or "{}")
    except json.JSONDecodeError:
        identity = {}
    return annotations.get(labels.KV_TIER_NAMESPACE_ANNOTATION), identity if isinstance(identity, dict) else {}


def tier_goes_cold(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What a model server's new shared-tier namespace means ("" where it has none or keeps its own): its
    servers start on an empty directory, and the fields that moved it with the config keys that set them."""
    (old, old_fields), (new, new_fields) = _stamps(before), _stamps(after)
    if new is None or old == new:
        return ""
    if old is None:
        return (
            f"; **the shared tier goes cold**: its servers write under namespace `{new}` where the base wrote"
            " outside any namespace; the evictor reclaims the old files first"
        )
    moved = [
        f"`{name}` {old_fields.get(name)} → {new_fields.get(name)}"
        + (f" (set by {tier_namespace.SET_BY[name]})" if name in tier_namespace.SET_BY else "")
        for name in tier_namespace.changed_fields(old_fields, new_fields)
    ]
    return (
        f"; **the shared tier goes cold**: namespace `{old}` → `{new}`"
        f" ({'; '.join(moved) or 'the namespace function changed'}); no server reads the old namespace any"
        " more, and the evictor reclaims it first"
    )


def _chart_children(before: dict[str, Any], after: dict[str, Any], paths: list[str]) -> list[Change]:
    """What a change to a chart's inputs does to the objects it renders (helm.v4 children: each is a resource of
    its own under the real engine, named `<chart>:<namespace>/<object>`): the chart expanded at both sides
    (chart_objects.py), each object added, removed or classified as a resource of the program is."""
    if any(p in ("name", "namespace") or p.startswith(("name.", "namespace.")) for p in paths):
        why = "release or namespace renamed: each object the chart renders is deleted and created under its new name"
        return [Change("replace", CHART_TYPE, after["name"], why)]
    if not (chart_objects.expands(before) or chart_objects.expands(after)):
        return []

    old = chart_objects.objects(before) if chart_objects.expands(before) else {}
    new = chart_objects.objects(after) if chart_objects.expands(after) else {}
    changes = [Change("added", k[0], k[1], "created (rendered by the chart)") for k in sorted(new.keys() - old.keys())]
    changes += [Change("removed", k[0], k[1], "deleted (no longer rendered)") for k in sorted(old.keys() - new.keys())]
    for key in sorted(old.keys() & new.keys()):
        fields = [p for p, _, _ in changed_fields(old[key]["inputs"], new[key]["inputs"])]
        if fields:  # a chart's pods hold no CPU tier (the EPP, the body-based router)
            change = classify(old[key], new[key], fields)
            changes.append(dataclasses.replace(change, why=change.why.replace(_DROPS_TIER, "")))
    return changes


def plan_changes(
    before: dict[tuple[str, str], dict[str, Any]],
    after: dict[tuple[str, str], dict[str, Any]],
    fields: dict[tuple[str, str], list[str]],
) -> list[Change]:
    changes = [Change("added", k[0], k[1], "created") for k in sorted(after.keys() - before.keys())]
    changes += [
        Change(
            "removed", k[0], k[1], "deleted" + (" with its data" if k[0] in STATE_TYPES else ""), k[0] in STATE_TYPES
        )
        for k in sorted(before.keys() - after.keys())
    ]
    for k, paths in sorted(fields.items()):
        if paths:
            change = classify(before[k], after[k], paths)
            cold = tier_goes_cold(before[k], after[k]) if change.kind != "ignored" else ""
            changes.append(dataclasses.replace(change, why=change.why + cold) if cold else change)
    for k, paths in sorted(fields.items()):
        if k[0] == CHART_TYPE and paths:
            changes += _chart_children(before[k], after[k], paths)
    return changes


def plan_lines(
    before: dict[tuple[str, str], dict[str, Any]],
    after: dict[tuple[str, str], dict[str, Any]],
    fields: dict[tuple[str, str], list[str]],
) -> list[str]:
    return [c.line() for c in plan_changes(before, after, fields)]


NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"


def _monthly_cost(resources: dict[tuple[str, str], dict[str, Any]]) -> float | None:
    """The plan's monthly cost as the render stamped it on the stack's Namespace (None: not priced)."""
    for (kind, _), row in resources.items():
        if kind == NAMESPACE_TYPE:
            annotations = ((row.get("inputs") or {}).get("metadata") or {}).get("annotations") or {}
            if labels.MONTHLY_COST_ANNOTATION in annotations:
                return float(annotations[labels.MONTHLY_COST_ANNOTATION])
    return None


def cost_line(before: dict[tuple[str, str], dict[str, Any]], after: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The monthly cost before and after and the delta, from each render's stamp (stacks/planning/workload/cost.py)."""
    old, new = _monthly_cost(before), _monthly_cost(after)
    if old is None and new is None:
        return "- monthly cost: not priced at either revision"
    shown = [f"${v:,.2f}" if v is not None else "not priced" for v in (old, new)]
    delta = (
        f" ({'+' if new - old >= 0 else '-'}${abs(new - old):,.2f}/month)"
        if old is not None and new is not None
        else ""
    )
    return f"- monthly cost: {shown[0]} -> {shown[1]}{delta}"
