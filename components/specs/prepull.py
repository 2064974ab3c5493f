"""The image pre-pull DaemonSet: the serving pool's images on every node of the pool before a model server needs them.

Where no registry mirror serves the cluster (an existing cluster, or `images.mirror: off`), every node
pulls each 10-20 GB image whole when the first model server lands on it, and a rollout to a new image
pays that pull once per wave. With `images.prepull`, a DaemonSet on the serving pool's nodes runs each
image once as an init container, so the kubelet pulls it on every node at once; the model servers start
after it (CacheStack's dependency), so a new image is on every node before the first pod rolls.

Each init container runs a statically linked busybox copied from the first init container (`true`), not
the image's own shell: an image without `/bin/sh` (distroless sidecars) is still pulled and exits 0.
The pod then idles in the pause container, so its images stay in use and image garbage collection keeps
them (the pattern of the JupyterHub continuous image puller).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from components.catalog import labels, versions
from components.manifest import Manifest
from components.specs.workload_type import WorkloadType
from components.units import ByteSize, MiB

WORKLOAD = WorkloadType("llmd:image_prepull:ImagePrepull", "image-prepull")

NAME = labels.IMAGE_PREPULL
LABELS = {labels.WORKLOAD_LABEL: NAME, "app.kubernetes.io/part-of": labels.GUIDE}
TOOL_VOLUME = "prepull-tool"
TOOL_DIR = "/prepull"
TOOL = f"{TOOL_DIR}/busybox"
TOOL_CONTAINER = "copy-tool"
# Each container does nothing but exist: its image is the point. The pod's effective memory request
# (the largest of its init containers and the sum of its containers) is this, once per node.
MEMORY = ByteSize(16 * MiB)


def _resources() -> Manifest:
    return {"requests": {"cpu": "10m", "memory": MEMORY.quantity()}, "limits": {"memory": MEMORY.quantity()}}


@dataclass(frozen=True)
class Placement:
    """Where the serving pods may run, copied from their template: the DaemonSet goes to the same nodes."""

    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity: Manifest | None = None
    tolerations: list[Manifest] = field(default_factory=list)

    @property
    def constrained(self) -> bool:
        return bool(self.node_selector or self.node_affinity)


@dataclass(frozen=True)
class PrepullSpec:
    namespace: str
    images: list[str]  # in pull order; the kubelet pulls one image at a time by default
    placement: Placement


def placement_of(pod_spec: Manifest, device_resource: str | None) -> Placement:
    """The serving pods' node selector, node affinity and tolerations, and a toleration of the accelerator's
    device taint: the serving pods get that one from the ExtendedResourceToleration admission plugin for the
    devices they request, which a pod requesting no devices does not."""
    tolerations = [dict(t) for t in pod_spec.get("tolerations") or []]
    if device_resource and not any(t.get("key") == device_resource for t in tolerations):
        tolerations.append({"key": device_resource, "operator": "Exists", "effect": "NoSchedule"})
    affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity")
    return Placement(dict(pod_spec.get("nodeSelector") or {}), affinity, tolerations)


def placed(manifest: Manifest, placement: Placement) -> Manifest:
    """A DaemonSet confined to where the serving pods may run (their node selector, node affinity and
    tolerations); any other object as it is."""
    if manifest["kind"] != "DaemonSet":
        return manifest
    out: Manifest = json.loads(json.dumps(manifest))  # a deep copy of plain data
    pod = out["spec"]["template"]["spec"]
    if placement.node_selector:
        pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **placement.node_selector}
    if placement.node_affinity:
        pod["affinity"] = {**(pod.get("affinity") or {}), "nodeAffinity": placement.node_affinity}
    tolerations = list(pod.get("tolerations") or [])
    tolerations += [t for t in placement.tolerations if t not in tolerations]
    if tolerations:
        pod["tolerations"] = tolerations
    return out


def container_name(index: int, image: str) -> str:
    """`pull-1-vllm-openai`: a DNS label (at most 63 characters) naming the image it pulls."""
    repository = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    return f"pull-{index}-{re.sub(r'[^a-z0-9-]+', '-', repository.lower()).strip('-')}"[:63].rstrip("-")


def pulled_images(manifests: list[Manifest]) -> list[str]:
    """The serving images a rendered pre-pull DaemonSet pulls (not its own tool and pause images)."""
    return [
        str(c["image"])
        for m in manifests
        if m["kind"] == "DaemonSet"
        for c in m["spec"]["template"]["spec"]["initContainers"]
        if c["name"] != TOOL_CONTAINER
    ]


def _container(name: str, image: str, command: list[str]) -> Manifest:
    return {
        "name": name,
        "image": image,
        "command": command,
        "resources": _resources(),
        "volumeMounts": [{"name": TOOL_VOLUME, "mountPath": TOOL_DIR}],
    }


def prepull_manifests(spec: PrepullSpec) -> list[Manifest]:
    """The DaemonSet (its update strategy and await budget are the plan's)."""
    tool = _container(TOOL_CONTAINER, versions.STATIC_BUSYBOX_IMAGE, ["/bin/busybox", "cp", "/bin/busybox", TOOL])
    pulls = [_container(container_name(i, image), image, [TOOL, "true"]) for i, image in enumerate(spec.images, 1)]
    pause = {"name": "pause", "image": versions.PAUSE_IMAGE, "resources": _resources()}
    pod: Manifest = {
        "initContainers": [tool, *pulls],
        "containers": [pause],
        "volumes": [{"name": TOOL_VOLUME, "emptyDir": {"sizeLimit": "8Mi"}}],
        "terminationGracePeriodSeconds": 5,
    }
    daemon_set = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": spec.namespace, "labels": dict(LABELS)},
        "spec": {
            "selector": {"matchLabels": dict(LABELS)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": pod},
        },
    }
    return [placed(daemon_set, spec.placement)]
