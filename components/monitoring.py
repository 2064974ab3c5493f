"""ModelServerMonitoring: scrape the model servers' /metrics (PodMonitor, or PodMonitoring on GKE)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class ModelServerMonitoringArgs:
    monitor: dict[str, Any]


class ModelServerMonitoring(pulumi.ComponentResource):
    def __init__(self, name: str, args: ModelServerMonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:monitoring:ModelServerMonitoring", name, None, opts)
        declare_all(self, name, [args.monitor], opts)
        self.register_outputs({})
