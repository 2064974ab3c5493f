"""The e2e check that KEDA owns the replica count: with its HPA's write emulated through the scale
subresource (no KEDA operator runs here: its ScaledObjects are applied against its CRDs), the engine must
plan no change and a template change must roll without resetting the count (`ignoreChanges` on
`spec.replicas`, under the provider's server-side apply)."""

from __future__ import annotations

import time
from typing import Any

from e2e.engine import Engine
from e2e.kwok import Cluster
from e2e.steps import StepError

IMAGE_KEY = "llmd:cache.image"


def scaled_targets(objects: list[dict[str, Any]]) -> list[tuple[str, str, str, int]]:
    """(kind, namespace, name, the count to scale to) of each ScaledObject's target: one above its minimum,
    within its maximum (what the HPA would set under load)."""
    out = []
    for o in objects:
        if o["kind"] != "ScaledObject":
            continue
        spec = o["spec"]
        target = spec["scaleTargetRef"]
        want = min(int(spec["maxReplicaCount"]), int(spec["minReplicaCount"]) + 2)
        out.append((target["kind"], o["metadata"]["namespace"], target["name"], want))
    return out


def _replicas(cluster: Cluster, kind: str, namespace: str, name: str) -> int:
    found = cluster.objects(f"{kind.lower()}s", namespace)
    workload = next(w for w in found if w["metadata"]["name"] == name)
    return int(workload["spec"].get("replicas", 1))


def check_keda_owns_replicas(engine: Engine, cluster: Cluster, objects: list[dict[str, Any]], image: str) -> str:
    targets = scaled_targets(objects)
    if not targets:
        raise StepError("no ScaledObject in the render")
    for kind, namespace, name, want in targets:
        cluster.kubectl("scale", f"{kind.lower()}/{name}", "-n", namespace, f"--replicas={want}")
    result = engine.run("preview", "--expect-no-changes", "--diff")
    if not result.ok:
        raise StepError(f"after the HPA's scale, the engine plans a change:\n{result.tail(30)}")
    engine.set_config(IMAGE_KEY, image)
    result = engine.run("up", "--yes", "--skip-preview")
    engine.remove_config(IMAGE_KEY)
    if not result.ok:
        raise StepError(f"a template change under the HPA's count failed:\n{result.tail(30)}")
    time.sleep(1)
    kept = [(name, want, _replicas(cluster, kind, namespace, name)) for kind, namespace, name, want in targets]
    reset = [f"{n}: {have} (the HPA set {w})" for n, w, have in kept if have != w]
    if reset:
        raise StepError("`pulumi up` reset the count KEDA owns: " + "; ".join(reset))
    back = engine.run("up", "--yes", "--skip-preview")  # the image as the render has it, for what follows
    if not back.ok:
        raise StepError(f"restoring the image failed:\n{back.tail(20)}")
    counts = ", ".join(f"{n} {w}" for n, w, _ in kept)
    return f"scaled as the HPA would ({counts}): no change planned; a rollout kept the count"
