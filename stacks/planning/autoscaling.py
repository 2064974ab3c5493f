"""Autoscaling through KEDA: the replica bounds the node pools hold, a scale-down derived from the cold
start, the ScaledObjects on the router's own signals, and a replay of a load step through the HPA.

Every figure is derived: `max_replicas` from the fit arithmetic that checks `cache.replicas` (nodes x pods a
node holds, by devices and by memory, over the pods of one replica: a TPU slice scales whole); the
scale-down window and rate from the modeled cold start (components/formulas/scale_down.py); a replica's serving
capacity from the payoff's recompute time at the stack's prefix length (prefill-bound, no cache hits: the
floor of what one replica serves).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from components.catalog import versions
from components.formulas import hpa, scale_down
from components.formulas.engine_costs import engine_costs
from components.formulas.payoff import Replica
from components.formulas.prefill_rate import PrefillRate, peak_prefill_rate
from components.specs import keda, keda_tokens, node_autoscaling, payoff_table
from components.specs.clusters import PoolSpec
from components.specs.servers import ServerSpec
from components.specs.workloads import CLUSTER, ROUTER, Workload
from components.units import ByteSize
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.config.providers import provider_of
from stacks.planning import cold_starts, hardware, hbm_fit


@dataclass(frozen=True)
class Autoscaling:
    mode: keda.Mode
    thresholds: keda.Thresholds
    min_replicas: int
    max_replicas: int
    max_from: str  # the formula behind max_replicas
    behavior: hpa.Behavior
    behavior_from: str
    cold_start_s: int  # one added replica's modeled cold start
    tier_per_pod: ByteSize | None  # the warm CPU tier a removed pod drops (None: a per-node daemon keeps it)
    source: keda.MetricsSource
    capacity_rps: float  # one replica's serving capacity, prefill-bound
    replay: hpa.Replay
    room: Room | None = None  # the serving pool's, where one is described
    signal: keda_tokens.Signal = "requests"
    token_thresholds: keda_tokens.TokenThresholds = dataclasses.field(default_factory=keda_tokens.TokenThresholds)
    prefill_rate: PrefillRate | None = None  # the token-aware variant's divisor (and the router filter's)
    kv_usage_metric: str = ""  # the token-aware variant's decode trigger: the engine's KV pool in use
    inputs: hpa.ReplayInputs | None = None  # what the replay above ran on (the day's replay runs on them too)


@dataclass(frozen=True)
class Room:
    replicas: int  # what the serving pool holds
    formula: str
    pods_per_node: int
    pods_per_replica: int


def pool_room(config: StackConfig, server: ServerSpec, fit: hardware.Fit | None, roles: int) -> Room | None:
    """Replicas the serving pool holds, with the formula, or None where no pool is described."""
    if not config.cache.node_pool or fit is None:
        return None
    pool = hardware.pool_hardware(config, config.cache.node_pool)
    by_devices = hardware.pods_per_node(pool, server.devices)
    pod_memory = server.sizing.pod_memory
    daemon = fit.per_node - pod_memory * fit.pods_per_node
    per_node, why = by_devices, f"{by_devices} by devices"
    if fit.allocatable is not None:
        by_memory = max(0, (fit.allocatable.bytes - daemon.bytes) // pod_memory.bytes)
        if by_memory < per_node:
            per_node, why = by_memory, f"{by_memory} by memory ({pod_memory.quantity()} a pod)"
    per_replica = server.group_size * roles
    formula = f"{pool.nodes} nodes of {pool.describe()} x {per_node} pods a node ({why}) / {per_replica} pods a replica"
    return Room(pool.nodes * per_node // per_replica, formula, per_node, per_replica)


def resolve(
    config: StackConfig,
    server: ServerSpec,
    roles: int,
    fit: hardware.Fit | None,
    stack_payoff: payoff_table.Payoff,
    kv_usage_metric: str,
) -> Autoscaling | None:
    """`kv_usage_metric`: the engine's gauge of its KV pool in use (the connector's), the token-aware variant's
    decode trigger."""
    settings = config.autoscaling
    if not settings.enabled:
        return None
    if settings.signal == "tokens" and config.router.epp_replicas > 1:
        raise ConfigError(
            "router.epp_replicas",
            config.router.epp_replicas,
            "autoscaling.signal tokens reads the in-flight tokens one endpoint picker counts of what it routed: with"
            f" {config.router.epp_replicas} each sees a share of them (llm-d's token-aware guide keeps one); set 1",
        )
    room = pool_room(config, server, fit, roles)
    if settings.max_replicas is None and room is None:
        raise ConfigError(
            "autoscaling.max_replicas",
            None,
            "needs a value where cache.node_pool is unset (the default is what the serving pool holds)",
        )
    if room is not None and settings.max_replicas is not None and settings.max_replicas > room.replicas:
        raise ConfigError(
            "autoscaling.max_replicas",
            settings.max_replicas,
            f"above the {room.replicas} replicas the pool holds: {room.formula}",
        )
    if settings.max_replicas is not None:
        maximum, max_from = settings.max_replicas, "autoscaling.max_replicas"
    else:
        assert room is not None
        maximum, max_from = room.replicas, room.formula
    if settings.min_replicas > maximum:
        raise ConfigError(
            "autoscaling.min_replicas",
            settings.min_replicas,
            f"above {max_from} {maximum}"
            if room is None or settings.max_replicas is not None
            else f"above the {maximum} replicas the pool holds: {max_from}",
        )
    if not settings.min_replicas <= server.replicas <= maximum:
        raise ConfigError(
            "cache.replicas",
            server.replicas,
            f"the initial count must lie within autoscaling's {settings.min_replicas}..{maximum} replicas",
        )
    readers = server.group_size  # a scale-out adds a replica whose pods read the weights beside the serving ones
    cold = cold_starts.model_server_cold_start(
        config, server.accelerator.key, server.model, server.image, server.model_cache, readers=readers
    ).modeled
    if settings.scale_down == "upstream":
        behavior, behavior_from = scale_down.UPSTREAM_BEHAVIOR, "upstream's recipes (300 s window, 100% per 15 s)"
    else:
        behavior = scale_down.derived_behavior(cold)
        k, floor = scale_down.COLD_STARTS_PER_READD, scale_down.UPSTREAM_WINDOW_S
        behavior_from = (
            f"window min({hpa.MAX_STABILIZATION_S}, max({floor}, {k} x {cold} s cold start)); at most half the"
            f" replicas per min({hpa.MAX_POLICY_PERIOD_S}, max({hpa.SYNC_PERIOD_S}, {cold} s))"
        )
    per_request = stack_payoff.prefix_tokens * stack_payoff.recompute_seconds
    capacity = 1 / per_request if per_request > 0 else 1.0
    tier = server.sizing.cpu_tier_per_pod * server.group_size
    source = _metrics_source(config)
    tokens = settings.signal == "tokens"
    rate = prefill_rate(server) if tokens else None
    triggers = keda_tokens.token_hpa_triggers(settings.token_thresholds) if tokens else None
    inputs = hpa.ReplayInputs(
        initial_replicas=server.replicas,
        capacity_rps=capacity,
        # A replica at capacity holds upstream's running-requests target in flight (what the recipes' 16 means):
        # running requests then count the load in replicas, and the HPA holds the count the load needs.
        concurrency=settings.running_threshold,
        cold_start_s=cold,
        min_replicas=settings.min_replicas,
        max_replicas=maximum,
        cpu_tier=tier,
        triggers=triggers or keda.hpa_triggers(settings.trigger, settings.thresholds),
        behavior=behavior,
        prompt_tokens=stack_payoff.prefix_tokens,
        prefill_rate=rate.tokens_per_s if rate else 0.0,
    )
    replay = hpa.replay(inputs)
    return Autoscaling(
        settings.trigger,
        settings.thresholds,
        settings.min_replicas,
        maximum,
        max_from,
        behavior,
        behavior_from,
        cold,
        tier,
        source,
        capacity,
        replay,
        room,
        settings.signal,
        settings.token_thresholds,
        rate,
        kv_usage_metric,
        inputs,
    )


def check_signal(auto: Autoscaling | None, profile: str) -> None:
    """The token-aware filter goes in the router's default scheduling profile: P/D routes in two."""
    if auto is not None and auto.prefill_rate is not None and profile == "pd":
        raise ConfigError(
            "autoscaling.signal",
            "tokens",
            "scales on the prefill backlog the router's default scheduling profile filters on; the P/D profile"
            " routes in two (prefill, decode) and is not built for it here: use requests",
        )


def prefill_rate(server: ServerSpec) -> PrefillRate:
    """The peak prefill rate of one replica of the stack's model, accelerator and parallelism: the time model's
    step costs (components/formulas/engine_costs.py) at its HBM budget's batch limits, read through
    `peak_prefill_rate` so it follows them."""
    replica = Replica(server.model, server.accelerator.rates, server.devices, server.group_size)
    return peak_prefill_rate(engine_costs(replica, hbm_fit.hbm_budget(server), None, None))


def tier_held_by_daemon(auto: Autoscaling) -> Autoscaling:
    """Where a per-node daemon holds the CPU tier, a removed pod drops none of it."""
    replay = dataclasses.replace(auto.replay, cpu_tier_dropped=ByteSize(0))
    return dataclasses.replace(auto, tier_per_pod=None, replay=replay)


def with_node_bounds(config: StackConfig, pools: list[PoolSpec], auto: Autoscaling | None) -> list[PoolSpec]:
    """The serving pool's node bounds (created clusters): all its nodes at most (what max_replicas was fitted
    to), the nodes min_replicas fills at least; a pool per TPU slice scales by whole slices."""
    key, room = config.cache.node_pool, auto.room if auto else None
    if auto is None or room is None or not key:
        return pools
    serving = [p for p in pools if p.key == key]
    bounds = (
        {p.name: node_autoscaling.slice_bounds(i, p.node_count, auto.min_replicas) for i, p in enumerate(serving)}
        if len(serving) > 1
        else {
            p.name: node_autoscaling.pool_bounds(
                p.node_count, room.pods_per_node, room.pods_per_replica, auto.min_replicas
            )
            for p in serving
        }
    )
    return [dataclasses.replace(p, bounds=bounds[p.name]) if p.name in bounds else p for p in pools]


def _metrics_source(config: StackConfig) -> keda.MetricsSource:
    """Where KEDA reads the router's metrics: the Prometheus operator's server, or GKE Managed Prometheus's
    query frontend for the cluster's project."""
    if config.monitoring.provider != "gke-managed-prometheus":
        return keda.prometheus_operator_source(config.autoscaling.prometheus_url)
    project = config.autoscaling.gcp_project or (config.cluster.gke.project if config.cluster.gke else None)
    if not project:
        raise ConfigError(
            "autoscaling.gcp_project",
            None,
            "KEDA queries the GKE Managed Prometheus of a project (monitoring.provider gke-managed-prometheus):"
            " set it on an existing cluster (a created GKE cluster's is cluster.gke.project)",
        )
    return keda.gke_managed_prometheus_source(project)


def scalers(config: StackConfig, auto: Autoscaling, servers: list[Workload], pool: str | None) -> list[Workload]:
    """A ScaledObject per model-server role, after the router (whose metrics it reads) and its workload."""
    out: list[Workload] = []
    auth = keda.trigger_authentication(auto.source, config.namespace)
    for server in servers:
        assert server.server is not None
        workload = server.manifests[-1]
        if auto.prefill_rate is not None:
            triggers = keda_tokens.token_triggers(
                auto.token_thresholds,
                auto.source,
                config.namespace,
                auto.prefill_rate.whole,
                auto.kv_usage_metric,
            )
        else:
            triggers = keda.triggers(
                auto.mode, auto.thresholds, auto.source, config.namespace, pool, server.server.model.name
            )
        scaled = keda.scaled_object(
            workload["kind"],
            workload["metadata"]["name"],
            config.namespace,
            auto.min_replicas,
            auto.max_replicas,
            auto.behavior,
            triggers,
        )
        out.append(
            Workload(
                keda.WORKLOAD,
                [*([auth] if auth and not out else []), scaled],
                needs=(ROUTER, CLUSTER, server.key),  # KEDA (its CRDs) is among the cluster's add-ons
                key_suffix=server.key_suffix,
            )
        )
    return out


def addon_images(config: StackConfig, auto: Autoscaling | None, pools: list[PoolSpec]) -> list[str]:
    """The images of the cluster add-ons autoscaling installs on a created cluster (the mirror serves them)."""
    if auto is None or not provider_of(config).creates:  # a serving stack's cluster stack installs them
        return []
    out = list(versions.keda_images(versions.KEDA_VERSION).values())
    if config.cluster.eks is not None and any(p.bounds for p in pools):
        tag = versions.CLUSTER_AUTOSCALER_TAGS[config.cluster.eks.version]
        out.append(f"{versions.CLUSTER_AUTOSCALER_IMAGE_REPOSITORY}:{tag}")
    return out
