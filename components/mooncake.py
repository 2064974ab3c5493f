"""MooncakeMaster and MooncakeClient: the MooncakeStore metadata service and the DRAM + SSD pool owners."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class MooncakeArgs:
    manifests: list[dict[str, Any]]


class MooncakeMaster(pulumi.ComponentResource):
    """Namespace `mooncake`, the master's config, snapshot claim, Service and Deployment."""

    def __init__(self, name: str, args: MooncakeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:mooncake:MooncakeMaster", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.register_outputs({})


class MooncakeClient(pulumi.ComponentResource):
    """The client DaemonSet (one per model-server node) and its headless Service."""

    def __init__(self, name: str, args: MooncakeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:mooncake:MooncakeClient", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.register_outputs({})
