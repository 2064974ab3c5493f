"""ImagePrepull: the serving pool's images pulled onto every node of the pool before the model servers
start (an optional DaemonSet, components/specs/prepull.py). Model servers depend on it: `pulumi up`
awaits every node's pull first, so a new image is on every node before the first pod rolls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class ImagePrepullArgs:
    manifests: list[dict[str, Any]]  # [NetworkPolicy], DaemonSet


class ImagePrepull(pulumi.ComponentResource):
    def __init__(self, name: str, args: ImagePrepullArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:image_prepull:ImagePrepull", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.register_outputs({})
