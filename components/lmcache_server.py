"""LMCacheServer: the per-node LMCache server DaemonSet, its node-local Service and the connection ConfigMap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class LMCacheServerArgs:
    manifests: list[dict[str, Any]]  # ConfigMap, Service, DaemonSet (components.specs.lmcache)


class LMCacheServer(pulumi.ComponentResource):
    def __init__(self, name: str, args: LMCacheServerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:lmcache_server:LMCacheServer", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.register_outputs({})
