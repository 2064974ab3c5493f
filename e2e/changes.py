"""Config changes under the real engine: the engine's own plan (`pulumi preview --json`) against `stacks diff`'s
change plan, then the change applied where the run applies it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e import compare, nodes
from e2e.engine import Engine
from e2e.kwok import Cluster
from e2e.steps import Report, StepError, render_stack
from stacks.review.diff import change_plan


@dataclass
class Change:
    """A config change and what the run checks after it."""

    name: str
    key: str
    value: str | None  # None: remove the key
    apply: bool = True  # also `pulumi up` it (the moves and the state changes are previewed only)
    needs_claim: bool = False  # only where the stack has a PersistentVolumeClaim


CHANGES = (
    Change("tier size", "llmd:cache.tier.cpu", "6GiB"),
    Change("replicas", "llmd:cache.replicas", "+1"),  # one more than the stack runs
    Change("image", "llmd:cache.image", "docker.io/vllm/vllm-openai:v0.26.1"),
    Change("model", "llmd:cache.model", "Qwen/Qwen3-8B"),
    # A chart value that adds chart objects (the EPP's leader-election Role and RoleBinding): the change plan
    # expands the chart (stacks/review/chart_objects.py); the engine plans each object.
    Change("epp replicas", "llmd:router.epp_replicas", "2", apply=False),
    Change("release name", "llmd:router.release", "tpc-renamed", apply=False),
    Change("namespace", "llmd:namespace", "llm-d-e2e-moved", apply=False),
    Change("storage size", "llmd:storage.size", "18000Gi", apply=False, needs_claim=True),
    Change("protect off", "llmd:protect", "false", apply=False, needs_claim=True),
)


def _served_replicas(objects: list[dict[str, Any]]) -> int:
    """The model servers' replica count in a render (their Deployments or LeaderWorkerSets)."""
    counts = [
        int(o["spec"].get("replicas", 1))
        for o in objects
        if o["kind"] in ("Deployment", "LeaderWorkerSet") and "llm-d.ai/role" in o["metadata"].get("labels", {})
    ]
    return max(counts, default=1)


def _uids(cluster: Cluster, namespace: str) -> dict[tuple[str, str], str]:
    uids = {}
    for kind in (
        "deployments",
        "services",
        "configmaps",
        "secrets",
        "persistentvolumeclaims",
        "jobs",
        "daemonsets",
        "statefulsets",
        "networkpolicies",
        "serviceaccounts",
    ):
        for obj in cluster.objects(kind, namespace):
            uids[(obj["kind"], obj["metadata"]["name"])] = obj["metadata"]["uid"]
    return uids


def apply_change(
    engine: Engine,
    cluster: Cluster,
    project: Path,
    workdir: Path,
    state: dict[str, Any],
    change: Change,
    report: Report,
) -> str:
    before = state["render"]
    value = change.value
    if value is not None and value.startswith("+"):
        value = str(_served_replicas(before["objects"]) + int(value[1:]))
    if value is None:
        engine.remove_config(change.key)
    else:
        engine.set_config(change.key, value)
    try:
        after = render_stack(project, engine.stack, workdir / f"render-{change.name.replace(' ', '-')}")
    except StepError as rejection:
        # The config checks refuse it (the pools cannot hold it): the engine must stop on the same line.
        line = str(rejection).removeprefix("offline render: ").strip().splitlines()[-1]
        result = engine.run("preview")
        engine.remove_config(change.key)
        if result.ok or line.removeprefix("error: ") not in result.stdout + result.stderr:
            raise StepError(f"refused offline ({line}) but not by the engine:\n{result.tail(20)}") from None
        return f"{change.key}={value} refused by the config checks, offline and under the engine: {line}"
    planned = change_plan(before["resources"], after["resources"])
    refused = [c for c in planned if c.kind == "replace" and "`protect` refuses" in c.why]
    if refused:
        result = engine.run("preview")
        engine.remove_config(change.key)
        if result.ok or "protect" not in result.stdout + result.stderr:
            raise StepError(f"the change plan says protect stops it; the engine did not:\n{result.tail(20)}")
        names = ", ".join(c.name for c in refused)
        return f"the change plan says `protect` stops it ({names}); the engine's preview stops on protection too"
    steps = engine.preview_steps()
    disagreements = compare.compare_plans(steps, planned)
    for d in disagreements:
        report.disagreements.append(f"{change.name}: {d.line()}")
    summary = ", ".join(sorted({f"{c.kind} {c.name}" for c in planned}))[:300]
    if disagreements:
        raise StepError(f"{len(disagreements)} disagreement(s):\n  " + "\n  ".join(d.line() for d in disagreements))
    stalls = [c.name for c in planned if "may stall" in c.why]
    if stalls:  # the change plan warns the rollout cannot finish here: the run does not wait it out
        engine.remove_config(change.key)
        return f"plans agree ({summary}); not applied: the change plan says the rollout may stall ({', '.join(stalls)})"
    if not change.apply:  # a move the run does not make: the key goes back to unset
        engine.remove_config(change.key)
        return f"plans agree ({summary}); previewed only"
    # Where the stack describes no pool, its pods' nodes are the cluster's: more pods get more nodes.
    shapes = nodes.node_shapes(state["pools"], after["objects"])
    cluster.apply(nodes.node_objects(shapes))
    cluster.apply(nodes.dra_objects(shapes), server_side=True)
    namespace = before["objects"][0]["metadata"].get("namespace") or "llm-d-tiered-prefix-cache"
    uids = _uids(cluster, namespace)
    result = engine.run("up", "--yes", "--skip-preview")
    if not result.ok:
        raise StepError(result.tail(40))
    after_uids = _uids(cluster, namespace)
    allowed = compare.replaced_objects(planned, after["resources"])
    replaced_unplanned = sorted(
        k for k, uid in uids.items() if k in after_uids and after_uids[k] != uid and k not in allowed
    )
    if replaced_unplanned:
        raise StepError(f"replaced though the change plan calls no replacement: {replaced_unplanned}")
    state["render"] = after
    return f"plans agree ({summary}); applied"
