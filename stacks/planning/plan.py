"""StackConfig -> everything the components render, as plain data (no Pulumi here).

Resolution (the combination's defaults for unset sizes and counts), sizing and the config-time
consistency checks that need derived objects (selector, ports) all happen here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from components.catalog import labels, versions
from components.formulas.shared_tier_capacity import StoreRate
from components.specs import alerts, payoff_table, sizing
from components.specs.kv_events import PreciseIndex
from components.specs.router_values import RouterInputs, inference_pool, router_values
from components.specs.servers import ServerSpec
from components.specs.servers.base import router_selector
from components.specs.servers.scheduling import Scheduling
from components.specs.workloads import ordered
from components.units import ByteSize
from stacks.config import StackConfig
from stacks.config.backend_choice import filesystem_of
from stacks.config.cross_checks import check_epp_index
from stacks.config.errors import ConfigError
from stacks.config.loading import PROJECT_DIR
from stacks.config.providers import provider_of
from stacks.planning import autoscaling, cold_starts, hardware, hbm_fit, precise_routing, scale_in
from stacks.planning.cluster_plan import ClusterPlan, plan_cluster
from stacks.planning.gateway_route import route_workload
from stacks.planning.gpu_product_affinity import with_product
from stacks.planning.node_pools import pool_specs
from stacks.planning.passes import hardened, through_mirror, with_await_budgets, with_network_policies, with_rollouts
from stacks.planning.pd_roles import engine_shape, pd_servers, prefill_of, with_pool_counts
from stacks.planning.resolution import Resolved, resolve
from stacks.planning.stack_plan import Role as Role  # the records, named here too
from stacks.planning.stack_plan import StackPlan as StackPlan
from stacks.planning.tier_capacity import EVICTOR_METRICS, shared_tier
from stacks.planning.tier_fit import size_on_hardware
from stacks.planning.tier_identity import tier_identity
from stacks.planning.workload import capacity_plan
from stacks.planning.workload.tier_throughput import check_rendered
from stacks.planning.workload.workload_source import WorkloadSource, config_source
from stacks.planning.workload_builders import Serving, resolve_model_cache, workloads
from stacks.planning.workload_plan import Replan, plan_workload, priced


def _scheduling(config: StackConfig, node_pool: str | None = None) -> Scheduling:
    """Placement on `node_pool` (default: `cache.node_pool`)."""
    key = node_pool or config.cache.node_pool
    if key is None:
        return Scheduling()
    pool = config.node_pools[key]
    if provider_of(config).creates:  # created pools label their nodes with their key
        return Scheduling(node_selector={hardware.POOL_LABEL: key})
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


def _image(stack: Resolved) -> str:
    return stack.config.cache.image or stack.connector.image(stack.choice)


def check_router_reaches_model_servers(values: dict[str, Any], servers: list[ServerSpec]) -> None:
    """The seed's troubleshooting table: a selector that matches no pod, or a port nobody listens on."""
    model_servers = values["router"]["modelServers"]
    selector = model_servers["matchLabels"]
    for server in servers:
        pod_labels = server.serving_pod_labels
        if any(pod_labels.get(k) != v for k, v in selector.items()):
            raise ConfigError(
                "router.match_labels",
                selector,
                f"selects no {server.role} pod (its pods carry {pod_labels})",
            )
    ports = [p["number"] for p in model_servers["targetPorts"]]
    if ports != [labels.MODEL_SERVER_PORT]:
        raise ConfigError(
            "router.modelServers.targetPorts", ports, f"must be the model-server port [{labels.MODEL_SERVER_PORT}]"
        )


def plan(
    config: StackConfig,
    *,
    keep_up: bool = True,
    workload: WorkloadSource | None = None,
    weigh_any_tier: bool = False,
    replay_day: bool = False,
    compare_routings: bool = False,
) -> StackPlan:
    """The stack's plan. With a workload (the stack's, or `workload` given: `./run size --trace`), the workload side
    once (workload_plan.plan_workload: the replicas, the tiers, their cost), and the plan rendered at its figures;
    a configured count that does not keep up stops here, unless `keep_up` is off (`./run size` reports instead).
    `weigh_any_tier`: weigh `pricing.objective`'s size where `cache.tier.cpu` is set too (what auto would take);
    `replay_day`: an autoscaled stack's day replayed per scale-in victim choice (`./run size`);
    `compare_routings`: replay the rendered figures under the other `router.prefix_routing` too (`./run size`)."""
    stack = resolve(config)
    first = _plan(stack)
    source = workload if workload is not None else config_source(config, PROJECT_DIR)
    if source is None:
        return _rendered(dataclasses.replace(first, cost=priced(first)), keep_up)
    slo = config.workload.slo if config.workload is not None else None

    def at(replicas: int, cpu_tier: ByteSize | None, store_rate: StoreRate | None) -> StackPlan:
        return _plan(dataclasses.replace(stack, replicas=replicas), cpu_tier, store_rate)

    def other(replicas: int, cpu_tier: ByteSize | None, store_rate: StoreRate | None) -> StackPlan:
        flipped = resolve(precise_routing.other_routing(config))
        return _plan(dataclasses.replace(flipped, replicas=replicas), cpu_tier, store_rate)

    replan = Replan(first, at)
    record = plan_workload(
        first,
        source,
        slo,
        replan,
        weigh_any_tier=weigh_any_tier,
        replay_day=replay_day,
        other_routing=other if compare_routings else None,
    )
    if keep_up and config.cache.replicas != "auto":
        capacity_plan.check_fits(record.capacity)
    rendered = replan(record.replicas, record.cpu_tier, record.store_rate)
    if record.disaggregated is not None and any(record.disaggregated.auto):  # the pools at the counts auto took
        run = record.disaggregated.run
        counted = with_pool_counts(
            dataclasses.replace(stack, replicas=record.replicas), run.prefill_pods, run.decode_pods
        )
        rendered = _plan(counted, record.cpu_tier, record.store_rate)
    return _rendered(dataclasses.replace(rendered, workload=record, cost=record.cost), keep_up)


def _rendered(stack_plan: StackPlan, renders: bool) -> StackPlan:
    """A plan that renders (not `./run size`'s report) has what its file system is provisioned at."""
    if renders and stack_plan.cost is not None:
        check_rendered(stack_plan.cost.throughput)
    return stack_plan


def plan_any(config: StackConfig, name: str) -> StackPlan | ClusterPlan:
    """A cluster stack's plan, or a serving (or single) stack's."""
    return plan_cluster(config, name) if config.effective_layer == "cluster" else plan(config)


def _plan(stack: Resolved, chosen_tier: ByteSize | None = None, store_rate: StoreRate | None = None) -> StackPlan:
    """The plan at the configured sizes; `chosen_tier`: the CPU tier auto took from the workload's curve;
    `store_rate`: the filesystem tier's, measured by the workload's replay (None: the upper bound)."""
    config, connector = stack.config, stack.connector
    tier_sizing, fit, tier = size_on_hardware(stack, chosen_tier)
    decode = _decode_server(stack, tier_sizing)
    hbm = hbm_fit.hbm_budget(decode)
    hbm_fit.check_model_fits(stack, hbm)
    servers = [dataclasses.replace(decode, role="prefill"), decode] if decode.disaggregated else [decode]
    if stack.choice.disaggregation is not None:  # each pool its own shape, sizes and placement
        servers = pd_servers(stack, decode, lambda pool: _scheduling(config, pool))
        for server in servers:  # the plan's own HBM budget stays the aggregated shape's (what P/D is weighed against)
            hbm_fit.check_model_fits(stack, hbm_fit.hbm_budget(engine_shape(server)))
    stack_payoff = payoff_table.derive(_payoff_inputs(stack))
    auto = autoscaling.resolve(config, decode, len(servers), fit, stack_payoff, connector.kv_usage_metric)
    profile = connector.router_profile(stack.choice, auto.max_replicas if auto else stack.replicas)
    if precise_routing.is_precise(stack):  # the connectors it applies to route `tiered` otherwise
        profile = "precise"
    autoscaling.check_signal(auto, profile)
    indexed = prefill_of(servers, stack.choice.disaggregation)
    values = _router_values(
        config,
        indexed,
        indexed.sizing,
        profile,
        flow_control=auto is not None,
        precise=precise_routing.precise_index(stack, stack_payoff),
        peak_prefill_rate=auto.prefill_rate.whole if auto and auto.prefill_rate else None,
    )
    check_router_reaches_model_servers(values, servers)
    if auto is not None and profile == "default":
        raise ConfigError(
            "autoscaling.max_replicas",
            auto.max_replicas,
            "one replica routes with the chart's default plugins, which export no flow-control queue to scale on;"
            " allow at least 2",
        )
    exports = connector.exports(stack.choice, profile)
    stack_alerts = alerts.alerts(exports, _thresholds(stack, stack_payoff))
    scaled_in = scale_in.resolve(stack, decode, hbm, auto, exports)
    if scaled_in is not None:  # every model server drains before it stops; the annotator's alert
        servers = [dataclasses.replace(s, drain=scaled_in.drain) for s in servers]
        stack_alerts = [*stack_alerts, *alerts.annotator_alerts(scaled_in.interval_s)]
    most = auto.max_replicas if auto else None
    shared = shared_tier(stack, stack_payoff, most or sum(s.replicas for s in servers), store_rate)
    if shared is not None and shared.managed:
        stack_alerts = [*stack_alerts, *alerts.shared_tier_alerts(shared.capacity.scan_seconds)]
    serving = Serving(stack, servers, tier_sizing, exports, stack_alerts, most, shared, scaled_in)
    planned = workloads(serving)
    if auto is not None:  # KEDA owns the replica count; cache.replicas is the initial one
        pool = config.router.release if profile != "pd" else None
        roles = [w for w in planned.values() if w.server is not None]
        planned = ordered([*planned.values(), *autoscaling.scalers(config, auto, roles, pool)])
        if any(w.holds_cpu_tier for w in planned.values()):  # a per-node daemon keeps the tier a pod leaves
            auto = autoscaling.tier_held_by_daemon(auto)
    route = route_workload(config, tier_sizing.model.name)
    if route is not None:  # behind the cluster stack's Gateway
        planned = ordered([*planned.values(), route])
    stack_plan = StackPlan(
        stack=stack,
        sizing=indexed.sizing,  # P/D: the prefill pod's, which holds the tier (else the one server's)
        workloads=planned,
        model_cache=decode.model_cache,
        router_values=values,
        inference_pool=inference_pool(config.router.release, config.namespace, values),
        alerts=stack_alerts,
        metrics_to_watch=alerts.metrics_to_watch(exports)
        + (EVICTOR_METRICS if shared and shared.managed else [])
        + (scale_in.ANNOTATOR_METRICS if scaled_in else []),
        fit=fit,
        pools=autoscaling.with_node_bounds(config, pool_specs(config), auto),
        payoff=stack_payoff,
        hbm=hbm,
        tier=tier,
        autoscaling=auto,
        shared_tier=shared,
        scale_in=scaled_in,
    )
    return with_network_policies(through_mirror(with_await_budgets(with_rollouts(hardened(stack_plan)))))


def _decode_server(stack: Resolved, tier_sizing: sizing.TierSizing) -> ServerSpec:
    """The decode role's model server (the only role unless the LMCache server runs P/D)."""
    config, connector, chosen = stack.config, stack.connector, stack.choice
    cache = config.cache
    disaggregated = connector.disaggregated(chosen)
    image = _image(stack)
    cached = resolve_model_cache(stack, tier_sizing.model, image)
    cold = cold_starts.model_server_cold_start(
        config, cache.accelerator, tier_sizing.model, image, cached, readers=stack.pods
    )  # a first rollout reads all at once
    spec = ServerSpec(
        namespace=config.namespace,
        accelerator=stack.accelerator,
        server=cache.server,
        connector=connector,
        variant=cache.tier.variant,
        host_type=cache.host_type,
        platform=config.cluster.effective_platform,
        model=tier_sizing.model,
        replicas=stack.replicas,
        tensor_parallelism=stack.tensor_parallelism,
        devices=stack.devices,
        group_size=stack.group_size,
        image=image,
        sizing=tier_sizing,
        transfer_block_tokens=connector.transfer_block(chosen)[0],
        cpu_tier_bytes=connector.pod_cpu_tier(tier_sizing, stack.group_size).bytes,
        scheduling=with_product(config, _scheduling(config)),
        guide=connector.guide(chosen),
        disaggregated=disaggregated,
        test_mode=config.lmcache.test_mode,
        sidecar_image=versions.disagg_sidecar_image(config.router.version) if disaggregated else None,
        startup_seconds=cold.budget,
        model_cache=cached,
        memory_fraction=cache.memory_fraction,
        max_model_len=cache.max_model_len or stack.defaults.max_model_len,
        publisher=precise_routing.publisher(stack),
    )
    return dataclasses.replace(spec, tier_identity=tier_identity(config, spec))


def _router_values(
    config: StackConfig,
    decode: ServerSpec,
    tier_sizing: sizing.TierSizing,
    profile: str,
    flow_control: bool,
    precise: PreciseIndex | None = None,
    peak_prefill_rate: int | None = None,
) -> dict[str, Any]:
    router = config.router
    check_epp_index(config, tier_sizing.lru_capacity_per_server, decode.replicas * decode.group_size)
    return router_values(
        RouterInputs(
            chart_version=router.version,
            match_labels=router.match_labels if router.match_labels is not None else router_selector(decode),
            target_port=labels.MODEL_SERVER_PORT,
            cpu_lru_capacity_per_server=tier_sizing.lru_capacity_per_server,
            epp_replicas=router.epp_replicas,
            epp_cpu=router.epp_resources.cpu,
            epp_memory=router.epp_resources.memory,
            proxy_cpu=router.proxy_resources.cpu,
            proxy_memory=router.proxy_resources.memory,
            monitoring=config.monitoring.provider if config.monitoring.enabled else None,
            profile=profile,
            model_name=tier_sizing.model.name,
            flow_control=flow_control,
            precise=precise,
            peak_prefill_rate=peak_prefill_rate,
            block_tokens=tier_sizing.router_block_tokens if profile == "pd-tiered" else None,
        )
    )


def _thresholds(stack: Resolved, stack_payoff: payoff_table.Payoff) -> alerts.Thresholds:
    """The stack's alert thresholds; loads must beat the derived break-even unless the config says otherwise."""
    config = stack.config
    t = config.monitoring.alerts
    link = stack.accelerator.rates.host_link
    fastest = max(rate for _, rate in link.curve)
    if t.min_load_bandwidth is not None and t.min_load_bandwidth.bytes > fastest:
        raise ConfigError(
            "monitoring.alerts.min_load_bandwidth",
            t.min_load_bandwidth.human(),
            f"faster than the {fastest / 1e9:g} GB/s a {config.cache.accelerator} device's host link ({link.name})"
            " loads at best: the alert would always fire",
        )
    return alerts.Thresholds(
        window=t.window,
        offload_hit_rate_floor=t.offload_hit_rate_floor,
        hbm_hit_rate_drop=t.hbm_hit_rate_drop,
        loads_per_store=t.loads_per_store,
        min_load_bandwidth_bytes=(
            t.min_load_bandwidth.bytes
            if t.min_load_bandwidth is not None
            else round(stack_payoff.break_even_per_device)
        ),
        router_hit_ratio_margin=t.router_hit_ratio_margin,
        lmcache_hit_rate_floor=t.lmcache_hit_rate_floor,
    )


def _payoff_inputs(stack: Resolved) -> payoff_table.PayoffInputs:
    config = stack.config
    block_tokens, block_from = stack.connector.transfer_block(stack.choice)
    shared = stack.uses_tier_claim
    return payoff_table.PayoffInputs(
        model=stack.model,
        accelerator=stack.accelerator,
        devices_per_pod=stack.devices,
        pods_per_replica=stack.group_size,
        block_tokens=block_tokens,
        block_from=block_from,
        prefix_tokens=config.monitoring.alerts.prefix_tokens,
        filesystem=filesystem_of(config, stack.replicas * stack.group_size) if shared else None,
    )
