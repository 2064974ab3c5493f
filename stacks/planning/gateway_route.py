"""A serving stack's place behind its cluster stack's Gateway: the HTTPRoute to its InferencePool and the
label its namespace carries so the Gateway admits the route (components/specs/gateway.py)."""

from __future__ import annotations

from components.specs import bbr, gateway, network
from components.specs.workloads import ROUTER, Workload
from stacks.config import StackConfig
from stacks.config.cluster_facts import GatewayFacts
from stacks.config.cluster_outputs import GATEWAY_ROUTES_LABEL


def gateway_of(config: StackConfig) -> GatewayFacts | None:
    outputs = config.cluster.outputs
    return outputs.gateway if outputs is not None else None


def namespace_labels(config: StackConfig) -> dict[str, str]:
    """The label the cluster's Gateway admits HTTPRoutes by (none without a Gateway)."""
    facts = gateway_of(config)
    return {GATEWAY_ROUTES_LABEL: facts.name} if facts is not None else {}


def route_workload(config: StackConfig, model_name: str) -> Workload | None:
    """The HTTPRoute sending requests whose body names `model_name` to this stack's InferencePool (the router
    release's), attached to the cluster stack's Gateway; None without one."""
    facts = gateway_of(config)
    if facts is None:
        return None
    outputs = config.cluster.outputs
    assert outputs is not None, "a Gateway comes with the cluster's outputs"
    choice = gateway.gateway_class_for(outputs.platform, facts.class_name)
    serving = gateway.ServingRoute(
        stack=config.router.release, namespace=config.namespace, models=(model_name,), pool=config.router.release
    )
    route = gateway.http_route(
        serving,
        gateway.GatewayRef(facts.name, facts.namespace),
        gateway.ROUTE_REQUEST_TIMEOUT if choice.route_timeouts else None,
    )
    return Workload(gateway.ROUTE_WORKLOAD, [route], needs=(ROUTER,))


def gateway_peers(config: StackConfig) -> tuple[network.Peer, ...]:
    """Who carries the Gateway's requests into this stack: the Gateway's own proxy pods (in-cluster
    controllers label them `gateway.networking.k8s.io/gateway-name`), or GKE's load-balancer proxies from the
    region's proxy-only subnet."""
    facts = gateway_of(config)
    outputs = config.cluster.outputs
    if facts is None or outputs is None:
        return ()
    choice = gateway.gateway_class_for(outputs.platform, facts.class_name)
    plane = bbr.data_plane_for(choice, facts.name, (facts.proxy_subnet_cidr,) if facts.proxy_subnet_cidr else ())
    if plane.cidrs:
        return tuple(network.Peer({}, cidr=c) for c in plane.cidrs)
    return (network.Peer({gateway.GATEWAY_NAME_LABEL: facts.name}, {network.NAMESPACE_NAME_LABEL: facts.namespace}),)
