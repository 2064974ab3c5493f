"""SharedStorage: the filesystem tier's ReadWriteMany claim (`llm-d-kv-cache-storage`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class SharedStorageArgs:
    claim: dict[str, Any]


class SharedStorage(pulumi.ComponentResource):
    claim_name: str

    def __init__(self, name: str, args: SharedStorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:storage:SharedStorage", name, None, opts)
        declare_all(self, name, [args.claim], opts)
        self.claim_name = args.claim["metadata"]["name"]
        self.register_outputs({"claimName": self.claim_name})
