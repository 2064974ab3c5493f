"""Scrape configuration: model servers, the tier evictor and the cache annotator (PodMonitor, or PodMonitoring on
GKE); a connector's daemons' monitors sit in its module, built with `pod_monitor`."""

from __future__ import annotations

from components.catalog import labels
from components.manifest import Manifest
from components.specs import cache_annotator, tier_evictor
from components.specs.workload_type import WorkloadType

WORKLOAD = WorkloadType("llmd:monitoring:Monitoring", "monitoring")  # monitors, alert rules, dashboard


def pod_monitor(
    provider: str, name: str, namespace: str, selector: dict[str, str], port: str, interval: str
) -> Manifest:
    endpoint = {"port": port, "path": "/metrics", "interval": interval}
    if provider == "gke-managed-prometheus":
        return {
            "apiVersion": "monitoring.googleapis.com/v1",
            "kind": "PodMonitoring",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": dict(selector)}, "endpoints": [endpoint]},
        }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": dict(selector)}, "podMetricsEndpoints": [endpoint]},
    }


def model_server_monitor(provider: str, namespace: str, selector: dict[str, str], name: str) -> Manifest:
    interval = "15s" if provider == "gke-managed-prometheus" else "30s"
    return pod_monitor(provider, name, namespace, selector, labels.MODEL_SERVER_PORT_NAME, interval)


def tier_evictor_monitor(provider: str, namespace: str) -> Manifest:
    return pod_monitor(provider, tier_evictor.NAME, namespace, tier_evictor.LABELS, "metrics", "30s")


def cache_annotator_monitor(provider: str, namespace: str) -> Manifest:
    return pod_monitor(provider, cache_annotator.NAME, namespace, cache_annotator.LABELS, "metrics", "30s")
