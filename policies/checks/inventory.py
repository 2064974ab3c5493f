"""What the stack runs, as the rules find it in resource inputs: the model servers and their
connector configs, the router charts, LMCache's clients and servers, the accelerator a pod holds."""

from __future__ import annotations

from typing import Any

from components.catalog.accelerators import ACCELERATORS
from policies.resources import (
    CHART_TYPE,
    Pod,
    Resource,
    args,
    chart_values,
    connectors,
    env,
    kv_transfer_config,
    pods,
)


def model_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any], dict[str, Any]]]:
    """(pod, container, kv-transfer-config) for every container started with a connector config."""
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            config = kv_transfer_config(container)
            if config is not None:
                out.append((pod, container, config))
    return out


def router_charts(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if r.type == CHART_TYPE and "router" in chart_values(r)]


def lmcache_clients(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            kinds = {c.get("kv_connector") for c in connectors(kv_transfer_config(container))}
            if kinds & {"LMCacheConnectorV1", "LMCacheMPConnector"} or "LMCACHE_KV_CONFIG" in env(container):
                out.append((pod, container))
    return out


def lmcache_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    return [
        (pod, c)
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if args(c)[:2] in (["lmcache", "server"], ["/opt/venv/bin/lmcache", "server"])
    ]


def accelerator_of(resources: list[Resource], pod: Pod, container: dict[str, Any]) -> tuple[str, int] | None:
    """The catalog accelerator a model-server pod runs on, and how many devices it holds."""
    limits = ((container.get("resources") or {}).get("limits")) or {}
    selector = pod.spec.get("nodeSelector") or {}
    for key, profile in ACCELERATORS.items():
        if profile.tpu_accelerator and selector.get("cloud.google.com/gke-tpu-accelerator") != profile.tpu_accelerator:
            continue
        if profile.device_resource and profile.device_resource in limits:
            return key, int(limits[profile.device_resource])
        if profile.dra_device_class:
            for request in _dra_requests(resources, pod):
                if request.get("deviceClassName") == profile.dra_device_class:
                    return key, int(request.get("count") or 1)
    return None


def _dra_requests(resources: list[Resource], pod: Pod) -> list[dict[str, Any]]:
    names = {c.get("resourceClaimTemplateName") for c in pod.spec.get("resourceClaims") or []}
    return [
        request.get("exactly") or request
        for r in resources
        if r.type.endswith(":ResourceClaimTemplate") and (r.props.get("metadata") or {}).get("name") in names
        for request in ((((r.props.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or [])
    ]


def namespace_of(resource: Resource) -> str:
    return str((resource.props.get("metadata") or {}).get("namespace") or "default")
