"""Scrape configuration for the model servers: a Prometheus Operator PodMonitor or a GKE PodMonitoring."""

from __future__ import annotations

from typing import Any

from components.catalog import labels

Manifest = dict[str, Any]


def model_server_monitor(provider: str, namespace: str, selector: dict[str, str], name: str) -> Manifest:
    endpoint = {"port": labels.MODEL_SERVER_PORT_NAME, "path": "/metrics"}
    if provider == "gke-managed-prometheus":
        return {
            "apiVersion": "monitoring.googleapis.com/v1",
            "kind": "PodMonitoring",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": dict(selector)}, "endpoints": [{**endpoint, "interval": "15s"}]},
        }
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": dict(selector)}, "podMetricsEndpoints": [{**endpoint, "interval": "30s"}]},
    }
