"""The plan's passes over its workloads, in the order `plan()` runs them: rollouts, await budgets, the
registry mirror, NetworkPolicies. Each is one loop over `StackPlan.workloads`; none names a workload.
"""

from __future__ import annotations

import dataclasses

from components.catalog import labels
from components.manifest import Manifest
from components.specs import cache_annotator, images, network, security, verification
from components.specs.rollout import (
    pod_disruption_budget,
    with_all_nodes_update,
    with_config_checksum,
    with_node_by_node_update,
    with_rollout,
)
from components.specs.router_values import router_pod_labels
from components.specs.startup import AwaitBudget, with_await_budget
from components.specs.workloads import PHASES, Workload
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.planning import autoscaling, hardware, rollout_choice
from stacks.planning.gateway_route import gateway_peers
from stacks.planning.mirror import chart_images, cluster_mirror, router_values_through
from stacks.planning.stack_plan import StackPlan

_ROLLED_KINDS = ("Deployment", "DaemonSet", "LeaderWorkerSet")


def _map(stack_plan: StackPlan, change: dict[str, Workload]) -> dict[str, Workload]:
    return {key: change.get(key, w) for key, w in stack_plan.workloads.items()}


def _rollout(stack_plan: StackPlan) -> rollout_choice.Rollout:
    config, server, fit = stack_plan.config, stack_plan.model_server, stack_plan.fit
    cap = None
    if config.cache.node_pool and fit is not None:
        pool = hardware.pool_hardware(config, config.cache.node_pool)
        daemon = fit.per_node - server.sizing.pod_memory * fit.pods_per_node
        cap = rollout_choice.capacity(pool, server.devices, server.group_size, server.sizing.pod_memory, daemon)
    # The tier a model-server restart loses: the pod's own, unless a per-node daemon holds it.
    in_daemon = any(w.holds_cpu_tier for w in stack_plan.workloads.values())
    # Under autoscaling a rollout may meet any count up to the most: plan for the most.
    replicas = stack_plan.autoscaling.max_replicas if stack_plan.autoscaling else server.replicas
    return rollout_choice.choose(
        replicas=replicas,
        roles=len(stack_plan.roles),
        group_size=server.group_size,
        cap=cap,
        tier_dropped=None if in_daemon else server.sizing.cpu_tier_per_pod,
        tier_auto=fit is not None and fit.largest_tier == stack_plan.tier,  # auto filled the nodes
    )


def with_rollouts(stack_plan: StackPlan) -> StackPlan:
    """The chosen strategy on every model-server workload, a disruption budget beside each, node-by-node
    updates for the per-node daemons, and on every long-running pod template the checksum of its config."""
    chosen = _rollout(stack_plan)
    every = [m for w in stack_plan.workloads.values() for m in w.manifests]
    configs = {m["metadata"]["name"]: m for m in every if m["kind"] == "ConfigMap"}

    def rolled(w: Workload) -> list[Manifest]:
        checksummed = [with_config_checksum(m, configs) if m["kind"] in _ROLLED_KINDS else m for m in w.manifests]
        if w.rolls == "strategy":
            *objects, workload = checksummed
            workload = with_rollout(workload, chosen.max_surge, chosen.max_unavailable)
            return [*objects, pod_disruption_budget(workload), workload]
        update = {"node-by-node": with_node_by_node_update, "all-nodes": with_all_nodes_update}.get(w.rolls)
        if update is None:
            return checksummed
        return [update(m) if m["kind"] == "DaemonSet" else m for m in checksummed]

    change = {key: w.with_manifests(rolled(w)) for key, w in stack_plan.workloads.items() if w.rolls != "none"}
    return dataclasses.replace(stack_plan, workloads=_map(stack_plan, change), rollout=chosen)


# The longest one pod's cold start may take: a week. Beyond it the modeled cold start says the stack
# cannot come up (its startup probe's failureThreshold and the await timeout grow past any use, and, at
# a bandwidth of a few bytes per second, past int32 and the engine's duration).
MAX_AWAIT_SECONDS = 7 * 24 * 3600


def with_await_budgets(stack_plan: StackPlan) -> StackPlan:
    """Every workload Pulumi awaits gets an explicit budget above its modeled cold start; the summary lists
    them in the order `pulumi up` meets them (by phase, then in declaration order)."""
    change, budgets = {}, []
    for phase in PHASES:
        for key, w in stack_plan.workloads.items():
            if w.awaited is None or w.awaited.phase != phase:
                continue
            a = w.awaited
            budgets.append(a.budget)
            if a.kind is not None:  # else its manifests carry their budget already
                awaited = [
                    with_await_budget(m, a.budget.seconds, a.wait_for) if m["kind"] == a.kind else m
                    for m in w.manifests
                ]
                change[key] = w.with_manifests(awaited)
    _check_budgets(stack_plan.config, budgets)
    return dataclasses.replace(stack_plan, workloads=_map(stack_plan, change), budgets=budgets)


def _check_budgets(config: StackConfig, budgets: list[AwaitBudget]) -> None:
    worst = max(budgets, key=lambda b: b.cold_start.budget, default=None)
    if worst is None or worst.cold_start.budget <= MAX_AWAIT_SECONDS:
        return
    days = f"{worst.cold_start.budget / 86400:.0f} days"
    if config.storage.read_bandwidth is not None:
        raise ConfigError(
            "storage.read_bandwidth",
            config.storage.read_bandwidth.human(),
            f"{worst.workload} would take {days} to start at this bandwidth, beyond the"
            f" {MAX_AWAIT_SECONDS // 86400} days `pulumi up` waits; it is bytes per second, e.g. 10GiB",
        )
    raise ConfigError(
        "cache.model",
        config.cache.model,
        f"{worst.workload} would take {days} to start, beyond the {MAX_AWAIT_SECONDS // 86400} days `pulumi up` waits",
    )


def through_mirror(stack_plan: StackPlan) -> StackPlan:
    """Every image the stack renders, and the router chart's, referenced through the mirror."""
    p = stack_plan
    every = [m for w in p.workloads.values() for m in w.manifests]
    addons = autoscaling.addon_images(p.config, p.autoscaling, p.pools)
    registries = {images.split_image(i)[0] for i in [*images.images(every), *chart_images(), *addons]}
    mirror = cluster_mirror(stack_plan.config, registries)
    if mirror is None:
        return stack_plan
    return dataclasses.replace(
        stack_plan,
        workloads={
            k: w.with_manifests(images.rewrite(w.manifests, mirror.image)) for k, w in stack_plan.workloads.items()
        },
        router_values=router_values_through(stack_plan.router_values, mirror),
        mirror=mirror,
    )


def _traffic(stack_plan: StackPlan) -> network.StackTraffic:
    config, server, values = stack_plan.config, stack_plan.model_server, stack_plan.router_values
    connector = stack_plan.stack.connector
    scraper = config.network_policies.scraper
    default_namespaces, default_pods = network.SCRAPERS[config.monitoring.provider]
    keys = stack_plan.workloads.keys()
    return network.StackTraffic(
        namespace=config.namespace,
        router_pods=router_pod_labels(config.router.release, values),
        router_target_ports=[int(p["number"]) for p in values["router"]["modelServers"]["targetPorts"]],
        roles=[
            network.ServingRole(r.spec.role, r.spec.pod_labels, network.container_ports(r.manifests[-1]))
            for r in stack_plan.roles
        ],
        peer_traffic=server.disaggregated or server.host_type == "multi-host" or connector.peer_traffic,
        scraper=network.Peer(
            scraper.pod_labels if scraper.pod_labels is not None else default_pods,
            scraper.namespace_labels if scraper.namespace_labels is not None else default_namespaces,
        ),
        verification={"app.kubernetes.io/name": verification.NAME} if verification.WORKLOAD.key in keys else None,
        server_peers=connector.server_peers(),
        gateway=gateway_peers(config),
        annotator=dict(cache_annotator.LABELS) if cache_annotator.WORKLOAD.key in keys else None,
        event_ports=server.publisher.ports if server.publisher is not None else [],
    )


def hardened(stack_plan: StackPlan) -> StackPlan:
    """Every pod template of every workload locked down (components/specs/security.py `harden`: no privilege
    escalation, every capability dropped, non-root unless an exemption names the container, a service-account
    token only where the workload calls the API); the builders leave it to this one pass."""
    return dataclasses.replace(
        stack_plan,
        workloads={
            key: w.with_manifests([security.harden(m, api_access=w.api_access) for m in w.manifests])
            for key, w in stack_plan.workloads.items()
        },
    )


def with_network_policies(stack_plan: StackPlan) -> StackPlan:
    """Each pod's NetworkPolicy, declared first in the workload that owns the pod (after a namespace the
    workload creates), so no pod of the stack starts unprotected."""
    if not stack_plan.config.network_policies.enabled:
        return stack_plan
    traffic = _traffic(stack_plan)
    change = {}
    for key, w in stack_plan.workloads.items():
        if w.ingress is not None:
            manifests = list(w.manifests)
            manifests.insert(w.ingress_at, w.ingress(traffic))
            change[key] = w.with_manifests(manifests)
    release = stack_plan.config.router.release
    return dataclasses.replace(
        stack_plan,
        workloads=_map(stack_plan, change),
        router_policies=[network.router_policy(traffic, labels.router_name(release))],
    )
