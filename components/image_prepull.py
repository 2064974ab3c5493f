"""ImagePrepull: the serving pool's images pulled onto every node of the pool before the model servers
start (an optional DaemonSet, components/specs/prepull.py). Model servers depend on it: `pulumi up`
awaits every node's pull first, so a new image is on every node before the first pod rolls."""

from __future__ import annotations

from components.workload import Workload, WorkloadArgs

ImagePrepullArgs = WorkloadArgs


class ImagePrepull(Workload):
    type_token = "llmd:image_prepull:ImagePrepull"
