"""Which nodes a model server's pods may run on: the node labels they select, the taints they tolerate and the
labels they require beyond the selector (a required node affinity), written onto a pod spec."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.manifest import PodSpec

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class Scheduling:
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, str]] = field(default_factory=list)
    # Node labels the pods require beyond the selector, each one of its values (a required node affinity): the GPU
    # product where nothing the selector names pins the device (stacks/planning/gpu_product_affinity.py).
    required: dict[str, list[str]] = field(default_factory=dict)


def scheduled(pod: PodSpec, scheduling: Scheduling) -> PodSpec:
    """`pod` with the selector merged into its own, the tolerations, and the required labels as one term of a
    required node affinity (every label at once; a pod's own affinity otherwise kept)."""
    if scheduling.node_selector:
        pod["nodeSelector"] = {**pod.get("nodeSelector", {}), **scheduling.node_selector}
    if scheduling.tolerations:
        pod["tolerations"] = list(scheduling.tolerations)
    if scheduling.required:
        expressions = [{"key": k, "operator": "In", "values": list(v)} for k, v in scheduling.required.items()]
        required = {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
        pod["affinity"] = {**pod.get("affinity", {}), "nodeAffinity": {REQUIRED: required}}
    return pod
