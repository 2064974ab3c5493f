"""SharedStorage: the filesystem tier's ReadWriteMany claim (`llm-d-kv-cache-storage`)."""

from __future__ import annotations

from typing import Any

from components.workload import Workload, WorkloadArgs

SharedStorageArgs = WorkloadArgs  # the one claim


class SharedStorage(Workload):
    type_token = "llmd:storage:SharedStorage"
    claim_name: str

    def outputs(self, args: WorkloadArgs) -> dict[str, Any]:
        [claim] = args.manifests
        self.claim_name = claim["metadata"]["name"]
        return {"claimName": self.claim_name}
