"""MooncakeMaster and MooncakeClient: the MooncakeStore metadata service and the DRAM + SSD pool owners."""

from __future__ import annotations

from components.workload import Workload, WorkloadArgs

MooncakeArgs = WorkloadArgs


class MooncakeMaster(Workload):
    """Namespace `mooncake`, the master's config, snapshot claim, Service and Deployment."""

    type_token = "llmd:mooncake:MooncakeMaster"


class MooncakeClient(Workload):
    """The client DaemonSet (one per model-server node) and its headless Service."""

    type_token = "llmd:mooncake:MooncakeClient"
