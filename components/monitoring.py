"""Monitoring: scrape configs for the model servers (and LMCache server, Mooncake master), alert rules, dashboard."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class MonitoringArgs:
    manifests: list[dict[str, Any]]  # components.specs.monitoring / alerts / dashboard


class Monitoring(pulumi.ComponentResource):
    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:monitoring:Monitoring", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.register_outputs({})
