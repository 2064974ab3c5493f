"""A cluster stack (`layer: cluster`) as plain data: the cluster, its pools, the registry caches, the add-ons
its serving stacks need and the Gateway in front of them, and what it exports for them (no Pulumi here).

Its serving stacks plan from `outputs` (stacks/config/cluster_outputs.py `describe`), so a model change never
touches this plan, and a change here shows in every serving stack that references it.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog import labels
from components.manifest import Manifest
from components.specs import bbr, gateway
from components.specs.clusters import PoolSpec
from stacks.config import StackConfig
from stacks.config.cluster_facts import ClusterOutputs, GatewayFacts
from stacks.config.cluster_outputs import GATEWAY_ROUTES_LABEL, describe
from stacks.config.providers import provider_of
from stacks.planning.mirror import Mirror, from_facts
from stacks.planning.node_pools import pool_specs
from stacks.planning.workload.cost import stack_cost
from stacks.planning.workload.cost_records import StackCost


@dataclass(frozen=True)
class GatewayPlan:
    """The Gateway (admitting HTTPRoutes from namespaces labelled for it), its namespace, and body-based
    routing's chart values and NetworkPolicy (None: `gateway.body_routing` off)."""

    choice: gateway.GatewayClassChoice
    namespace: Manifest
    gateway: Manifest
    bbr_values: Manifest | None = None
    bbr_policy: Manifest | None = None
    proxy_subnet_cidr: str | None = None  # GKE: the proxy-only subnet the Gateway needs in the region


@dataclass(frozen=True)
class ClusterPlan:
    config: StackConfig
    stack: str
    outputs: ClusterOutputs  # `llmdCluster`: what the serving stacks read
    pools: list[PoolSpec]
    mirror: Mirror | None
    gateway: GatewayPlan | None = None
    cost: StackCost | None = None  # its pools, fee, system pool and shared file system (workload/cost.py)


def _gateway_plan(config: StackConfig, facts: GatewayFacts | None, mirror: Mirror | None) -> GatewayPlan | None:
    """The Gateway from the facts the cluster stack exports, which its serving stacks read too."""
    if facts is None:
        return None
    choice = gateway.gateway_class_for(config.cluster.effective_platform, facts.class_name)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": facts.namespace, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
    }
    the_gateway = gateway.gateway(
        facts.name, facts.namespace, choice.name, namespace_label=(GATEWAY_ROUTES_LABEL, facts.name)
    )
    proxies = (facts.proxy_subnet_cidr,) if facts.proxy_subnet_cidr else ()
    values = policy = None
    if facts.body_routing:
        values = bbr.bbr_values(mirror.image if mirror else None, choice.bbr_provider, facts.name)
        policy = bbr.bbr_network_policy(facts.namespace, bbr.data_plane_for(choice, facts.name, proxies))
    return GatewayPlan(
        choice=choice,
        namespace=namespace,
        gateway=the_gateway,
        bbr_values=values,
        bbr_policy=policy,
        proxy_subnet_cidr=facts.proxy_subnet_cidr if provider_of(config).proxy_subnet else None,
    )


def plan_cluster(config: StackConfig, stack: str) -> ClusterPlan:
    outputs = describe(config, stack)
    mirror = from_facts(outputs.mirror) if outputs.mirror is not None else None
    pools = pool_specs(config)
    return ClusterPlan(
        config=config,
        stack=stack,
        outputs=outputs,
        pools=pools,
        mirror=mirror,
        gateway=_gateway_plan(config, outputs.gateway, mirror),
        cost=stack_cost(config, pools, None, None, None, 1),
    )
