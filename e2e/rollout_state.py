"""A model server's rollout as the API server holds it: waited on until settled before a fault starts, and
written out when `pulumi up` reports something the cluster does not bear out.

CI saw `pulumi up` succeed in 5 s on an update to an image that does not exist (once, after four interrupted
updates; not seen again here in one whole faults run and 30 image patches read as the awaiter reads them). The
provider's Deployment awaiter accepts the first Deployment whose `observedGeneration` equals its own
`generation`, of any generation (pulumi-kubernetes `pkg/await/deployment.go`,
`waitUntilDeploymentControllerReconciles`), so a copy from before the patch, or a rollout still settling from
the previous fault, can end the wait; what the cluster held says which.
"""

from __future__ import annotations

import json
import time
from typing import Any

from e2e.kwok import Cluster
from e2e.steps import StepError

REVISION = "deployment.kubernetes.io/revision"
SETTLE_S = 120.0


def _get(cluster: Cluster, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)
    return out


def rollout(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    """The Deployment's generations, revision, conditions and counts; its ReplicaSets' by revision; its pods'
    waiting reasons and how many are terminating."""
    deployment = _get(cluster, "deployment", name, "-n", namespace)
    selector = ",".join(f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items())
    status = deployment.get("status", {})
    sets = _get(cluster, "replicasets", "-n", namespace, "-l", selector)["items"]
    pods = _get(cluster, "pods", "-n", namespace, "-l", selector)["items"]
    waiting = sorted(
        {
            c["state"]["waiting"].get("reason", "")
            for p in pods
            for c in p.get("status", {}).get("containerStatuses", [])
            if "waiting" in c.get("state", {})
        }
    )
    return {
        "generation": deployment["metadata"]["generation"],
        "observedGeneration": status.get("observedGeneration"),
        "revision": deployment["metadata"].get("annotations", {}).get(REVISION),
        "conditions": {c["type"]: f"{c['status']}/{c.get('reason')}" for c in status.get("conditions", [])},
        "replicas": deployment["spec"].get("replicas", 1),
        "counts": {k: status.get(k, 0) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")},
        "replicaSets": {
            rs["metadata"].get("annotations", {}).get(REVISION, "?"): [
                rs["spec"].get("replicas", 1),
                rs.get("status", {}).get("readyReplicas", 0),
            ]
            for rs in sets
        },
        "terminating": sum(1 for p in pods if p["metadata"].get("deletionTimestamp")),
        "waiting": waiting,
    }


def settled(state: dict[str, Any]) -> bool:
    """Rolled out and quiet: the controller has seen the last change, every replica runs the current template
    and is available, no old pod is still terminating."""
    counts, want = state["counts"], state["replicas"]
    return bool(
        state["observedGeneration"] == state["generation"]
        and counts["replicas"] == counts["updatedReplicas"] == counts["availableReplicas"] == want
        and state["terminating"] == 0
    )


def wait_settled(cluster: Cluster, namespace: str, name: str, limit_s: float = SETTLE_S) -> float:
    """Seconds until the rollout settles; refused with its last state past `limit_s`."""
    started = time.monotonic()
    while True:
        state = rollout(cluster, namespace, name)
        if settled(state):
            return time.monotonic() - started
        if time.monotonic() - started > limit_s:
            raise StepError(f"{name} did not settle in {limit_s:.0f} s: {json.dumps(state)}")
        time.sleep(1)


def engine_lines(output: str, name: str, last: int = 6) -> list[str]:
    """The engine's progress lines about one resource, the last `last` of them."""
    return [line.strip() for line in output.splitlines() if name in line][-last:]
