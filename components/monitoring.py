"""Monitoring: scrape configs for the model servers (and LMCache server, Mooncake master), alert rules, dashboard."""

from __future__ import annotations

from components.workload import Workload, WorkloadArgs

MonitoringArgs = WorkloadArgs


class Monitoring(Workload):
    type_token = "llmd:monitoring:Monitoring"
