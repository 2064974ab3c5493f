"""ModelServer: every object of one model-server role (ServiceAccount, workload, connector objects)."""

from __future__ import annotations

from typing import Any

from components.workload import Workload, WorkloadArgs

ModelServerArgs = WorkloadArgs  # in dependency order: the workload last, what it reads first


class ModelServer(Workload):
    type_token = "llmd:model_server:ModelServer"
    workload_name: str

    def outputs(self, args: WorkloadArgs) -> dict[str, Any]:
        self.workload_name = args.manifests[-1]["metadata"]["name"]
        return {"workloadName": self.workload_name}
