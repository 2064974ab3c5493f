"""ModelCache: the model's weights fetched once into the stack's ReadWriteMany volume (and a dedicated
claim where the stack has no filesystem tier). Model servers depend on it: `pulumi up` awaits the Job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class ModelCacheArgs:
    manifests: list[dict[str, Any]]  # components.specs.model_cache: [claim], script ConfigMap, Job


class ModelCache(pulumi.ComponentResource):
    def __init__(self, name: str, args: ModelCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:model_cache:ModelCache", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.register_outputs({})
