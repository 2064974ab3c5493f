"""Scrape configuration: model servers (PodMonitor, or PodMonitoring on GKE), the LMCache server, Mooncake."""

from __future__ import annotations

from components.catalog import labels
from components.manifest import Manifest
from components.specs import lmcache, mooncake, tier_evictor
from components.specs.workloads import WorkloadType

WORKLOAD = WorkloadType("llmd:monitoring:Monitoring", "monitoring")  # monitors, alert rules, dashboard


def _pod_monitor(
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
    return _pod_monitor(provider, name, namespace, selector, labels.MODEL_SERVER_PORT_NAME, interval)


def lmcache_server_monitor(provider: str, namespace: str) -> Manifest:
    return _pod_monitor(provider, lmcache.NAME, namespace, lmcache.LABELS, "metrics", "30s")


def tier_evictor_monitor(provider: str, namespace: str) -> Manifest:
    return _pod_monitor(provider, tier_evictor.NAME, namespace, tier_evictor.LABELS, "metrics", "30s")


def mooncake_master_monitor(provider: str) -> Manifest:
    """The master's metrics port (9003); GKE scrapes it with a PodMonitoring in namespace `mooncake`."""
    if provider == "gke-managed-prometheus":
        return _pod_monitor(provider, mooncake.MASTER, mooncake.NAMESPACE, mooncake.MASTER_LABELS, "metrics", "15s")
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": mooncake.MASTER, "namespace": mooncake.NAMESPACE, "labels": mooncake.MASTER_LABELS},
        "spec": {
            "selector": {"matchLabels": mooncake.MASTER_LABELS},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "15s"}],
        },
    }
