"""StackConfig -> everything the components render, as plain data (no Pulumi here).

Config-time consistency checks live here too: they need the derived objects (selector, ports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.catalog import labels
from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.specs import connectors
from components.specs.model_server import ModelServerSpec, Scheduling, router_selector
from components.specs.monitoring import model_server_monitor
from components.specs.router_values import RouterInputs, inference_pool, router_values
from components.specs.sizing import TierSizing, size_native_cpu_tier
from stacks.config import StackConfig
from stacks.errors import ConfigError


@dataclass(frozen=True)
class StackPlan:
    config: StackConfig
    sizing: TierSizing
    model_server: ModelServerSpec
    router_values: dict[str, Any]
    inference_pool: dict[str, Any]  # what the router chart creates, mirrored for checks and the summary
    monitor: dict[str, Any] | None


def _scheduling(config: StackConfig) -> Scheduling:
    if config.cache.node_pool is None:
        return Scheduling()
    pool = config.node_pools[config.cache.node_pool]
    tolerations = [
        {
            k: v
            for k, v in {
                "key": t.key,
                "operator": "Equal" if t.value else "Exists",
                "value": t.value,
                "effect": t.effect,
            }.items()
            if v
        }
        for t in pool.taints
    ]
    return Scheduling(node_selector=dict(pool.labels), tolerations=tolerations)


def check_router_reaches_model_servers(pool: dict[str, Any], pod_labels: dict[str, str]) -> None:
    """The seed's troubleshooting table: a selector that matches no pod, or a port nobody listens on."""
    selector = pool["spec"]["selector"]["matchLabels"]
    missing = {k: v for k, v in selector.items() if pod_labels.get(k) != v}
    if missing:
        raise ConfigError(
            "router.modelServers.matchLabels", selector, f"selects no model-server pod (pods carry {pod_labels})"
        )
    ports = [p["number"] for p in pool["spec"]["targetPorts"]]
    if ports != [labels.MODEL_SERVER_PORT]:
        raise ConfigError(
            "router.modelServers.targetPorts", ports, f"must be the model-server port [{labels.MODEL_SERVER_PORT}]"
        )


def plan(config: StackConfig) -> StackPlan:
    cache = config.cache
    model = MODELS[cache.model]
    accelerator = ACCELERATORS[cache.accelerator]
    sizing = size_native_cpu_tier(model, accelerator, cache.tensor_parallelism, cache.tier.cpu)
    server = ModelServerSpec(
        namespace=config.namespace,
        accelerator=accelerator,
        server=cache.server,
        model=model,
        replicas=cache.replicas,
        tensor_parallelism=cache.tensor_parallelism,
        image=cache.image or accelerator.vllm_image,
        sizing=sizing,
        kv_transfer_config=connectors.to_json(connectors.offloading_connector(sizing)),
        scheduling=_scheduling(config),
    )
    router = config.router
    values = router_values(
        RouterInputs(
            chart_version=router.version,
            match_labels=router_selector(),
            target_port=labels.MODEL_SERVER_PORT,
            cpu_lru_capacity_per_server=sizing.lru_capacity_per_server,
            epp_replicas=router.epp_replicas,
            epp_cpu=router.epp_resources.cpu,
            epp_memory=router.epp_resources.memory,
            proxy_cpu=router.proxy_resources.cpu,
            proxy_memory=router.proxy_resources.memory,
            monitoring=config.monitoring.provider if config.monitoring.enabled else None,
        )
    )
    pool = inference_pool(router.release, config.namespace, values)
    check_router_reaches_model_servers(pool, server.pod_labels)
    monitor = (
        model_server_monitor(config.monitoring.provider, config.namespace, router_selector(), server.role)
        if config.monitoring.enabled
        else None
    )
    return StackPlan(config, sizing, server, values, pool, monitor)
