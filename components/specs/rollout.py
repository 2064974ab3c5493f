"""How workloads roll when their template changes, as manifest fields: update strategies and disruption budgets.

The plan chooses the numbers (stacks/planning/rollout_choice.py, from the node pools' capacity); these functions only
write them into the objects.
"""

from __future__ import annotations

import hashlib
import json

from components.catalog import labels
from components.manifest import Manifest

CONFIG_CHECKSUM = "llm-d.ai/config-checksum"


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


def with_all_nodes_update(daemon_set: Manifest) -> Manifest:
    """A DaemonSet that serves nothing (the image pre-pull) updates on every node at once: its new pods
    pull the new images in parallel, and the rollout that waits on them waits once, not once per node."""
    rolling = {"maxUnavailable": "100%"}
    spec = {**daemon_set["spec"], "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}}
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


def _pod_templates(workload: Manifest) -> list[Manifest]:
    spec = workload["spec"]
    if workload["kind"] == "LeaderWorkerSet":
        return [spec["leaderWorkerTemplate"]["leaderTemplate"], spec["leaderWorkerTemplate"]["workerTemplate"]]
    return [spec["template"]] if "template" in spec else []


def config_maps_read(pod: Manifest) -> set[str]:
    """Names of the ConfigMaps a pod mounts or reads into its environment."""
    names = {v["configMap"]["name"] for v in pod.get("volumes", []) if "configMap" in v}
    for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
        names |= {e["configMapRef"]["name"] for e in container.get("envFrom", []) if "configMapRef" in e}
        refs = (e.get("valueFrom", {}).get("configMapKeyRef") for e in container.get("env", []))
        names |= {r["name"] for r in refs if r}
    return names


def with_config_checksum(workload: Manifest, config_maps: dict[str, Manifest]) -> Manifest:
    """Pod templates annotated with a checksum of the ConfigMaps they read (by name, in the same namespace).

    A changed ConfigMap is replaced (pulumi-kubernetes treats `.data` as immutable), which restarts no
    pod; the checksum changes the template, so the pods that read it roll with the workload's strategy.
    """
    templates = _pod_templates(workload)
    read = sorted({name for t in templates for name in config_maps_read(t["spec"])} & config_maps.keys())
    if not read:
        return workload
    content = json.dumps([config_maps[n].get("data", {}) for n in read], sort_keys=True).encode()
    checksum = hashlib.sha256(content).hexdigest()[:16]
    out: Manifest = json.loads(json.dumps(workload))  # a deep copy of plain data
    for template in _pod_templates(out):
        meta = template.setdefault("metadata", {})
        meta["annotations"] = {**meta.get("annotations", {}), CONFIG_CHECKSUM: checksum}
    return out
