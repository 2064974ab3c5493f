"""How workloads roll when their template changes, as manifest fields: update strategies and disruption budgets.

The plan chooses the numbers (stacks/rollout.py, from the node pools' capacity); these functions only
write them into the objects.
"""

from __future__ import annotations

from components.catalog import labels
from components.manifest import Manifest


def with_rollout(workload: Manifest, max_surge: int, max_unavailable: int) -> Manifest:
    """A Deployment's `strategy` or a LeaderWorkerSet's `rolloutStrategy` (counted in groups)."""
    spec = dict(workload["spec"])
    if workload["kind"] == "LeaderWorkerSet":
        spec["rolloutStrategy"] = {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
        }
    else:
        spec["strategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
        }
    return {**workload, "spec": spec}


def with_node_by_node_update(daemon_set: Manifest) -> Manifest:
    """A per-node cache daemon restarts one node at a time, never two copies on a node (it holds host
    memory and ports a second copy could not get)."""
    spec = {**daemon_set["spec"], "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}}
    return {**daemon_set, "spec": spec}


def pod_selector(workload: Manifest) -> dict[str, str]:
    """The labels that select a workload's pods (a LeaderWorkerSet's are set by its controller)."""
    if workload["kind"] == "LeaderWorkerSet":
        return {labels.LWS_NAME_LABEL: workload["metadata"]["name"]}
    selector: dict[str, str] = workload["spec"]["selector"]["matchLabels"]
    return selector


def pod_disruption_budget(workload: Manifest) -> Manifest:
    """Voluntary disruptions (node drains, upgrades) take one of the workload's pods at a time."""
    meta = workload["metadata"]
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta.get("labels", {}))},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": pod_selector(workload)}},
    }
