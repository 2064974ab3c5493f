"""A Grafana dashboard of the seed's key metrics, as a ConfigMap the Grafana sidecar picks up."""

from __future__ import annotations

import json
from typing import Any

from components.manifest import Manifest
from components.specs.metric_family import MetricFamily, Panel

SIDECAR_LABEL = {"grafana_dashboard": "1"}  # the kube-prometheus-stack Grafana sidecar's default label


def panels(families: tuple[MetricFamily, ...], window: str) -> list[Panel]:
    """Each family's panels, the router's, then each family's late ones."""
    out = [panel for family in families for panel in family.panels(window)]
    out += _router_panels()
    return out + [panel for family in families for panel in family.late_panels(window)]


def _router_panels() -> list[Panel]:
    return [
        (
            "Router prefix index size by tier",
            "short",
            [("{{plugin_name}}", "sum by (plugin_name) (llm_d_epp_prefix_indexer_size)")],
        ),
        (
            "Router prefix index hit ratio by tier",
            "percentunit",
            [("{{plugin_name}}", "max by (plugin_name) (llm_d_epp_prefix_indexer_hit_ratio)")],
        ),
    ]


def dashboard(families: tuple[MetricFamily, ...], window: str) -> dict[str, Any]:
    grafana_panels = [
        {
            "id": i + 1,
            "type": "timeseries",
            "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [
                {"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend}
                for j, (legend, expr) in enumerate(queries)
            ],
        }
        for i, (title, unit, queries) in enumerate(panels(families, window))
    ]
    return {
        "title": "llm-d tiered prefix cache",
        "uid": "llmd-tiered-prefix-cache",
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}]
        },
        "panels": grafana_panels,
    }


def dashboard_config_map(namespace: str, families: tuple[MetricFamily, ...], window: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "llmd-tiered-prefix-cache-dashboard", "namespace": namespace, "labels": SIDECAR_LABEL},
        "data": {"tiered-prefix-cache.json": json.dumps(dashboard(families, window), indent=2, sort_keys=True) + "\n"},
    }
