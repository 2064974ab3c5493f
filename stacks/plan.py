"""StackConfig -> everything the components render, as plain data (no Pulumi here).

Resolution (the combination's defaults for unset sizes and counts), sizing and the config-time
consistency checks that need derived objects (selector, ports) all happen here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from components.catalog import labels, versions
from components.catalog.accelerators import ACCELERATORS
from components.catalog.machines import MACHINES
from components.catalog.model_cache import streams_weights
from components.catalog.models import MODELS, ModelSpec
from components.catalog.rates import ACCELERATOR_RATES
from components.catalog.support import SUPPORTED, ComboDefaults
from components.formulas.payoff import LMCACHE_CHUNK_TOKENS
from components.manifest import Manifest
from components.specs import (
    alerts,
    dashboard,
    images,
    lmcache,
    model_cache,
    monitoring,
    mooncake,
    network,
    payoff,
    prepull,
    sizing,
    verification,
)
from components.specs.clusters import PoolSpec
from components.specs.connectors import TIERING_BLOCK_TOKENS
from components.specs.rollout import (
    pod_disruption_budget,
    with_all_nodes_update,
    with_config_checksum,
    with_node_by_node_update,
    with_rollout,
)
from components.specs.router_values import (
    RouterInputs,
    inference_pool,
    router_endpoint,
    router_pod_labels,
    router_values,
)
from components.specs.servers import ServerSpec, model_server_manifests, sglang
from components.specs.servers.base import FILES_STORAGE_CLAIM, Scheduling, files_storage_claim, router_selector
from components.specs.servers.vllm import lmcache_image_for
from components.specs.startup import AwaitBudget, with_await_budget
from components.specs.storage import EFS_CLASS, LUSTRE_CLASS
from components.specs.verification import VerificationSpec, verification_manifests
from components.units import ByteSize, GiB
from stacks import hardware, rollout, startup
from stacks.config import StackConfig
from stacks.errors import ConfigError
from stacks.mirror import Mirror, chart_images, cluster_mirror, mirror_registry, router_values_through
from stacks.prepull import prepull_manifests
from stacks.rules import pool_names

# Guide labels of the LMCache integration's model servers (the router selects them).
LMCACHE_GUIDES = {"prefix-reuse": "lmcache", "pd": "lmcache-pd"}


@dataclass(frozen=True)
class Role:
    spec: ServerSpec
    manifests: list[Manifest]


@dataclass(frozen=True)
class StackPlan:
    config: StackConfig
    sizing: sizing.TierSizing
    roles: list[Role]  # model-server roles; the last is the decode role
    storage_manifests: list[Manifest]  # the filesystem tier's shared claim
    model_cache: model_cache.ModelCache | None  # where the model servers load their weights from
    model_cache_manifests: list[Manifest]  # a dedicated claim, the fetch script and its Job
    mooncake_master: list[Manifest]
    mooncake_client: list[Manifest]
    lmcache_server: list[Manifest]
    router_values: dict[str, Any]
    inference_pool: dict[str, Any] | None  # what the router chart creates, mirrored for checks and the summary
    monitoring: list[Manifest]  # monitors, alert rules, dashboard
    verification: list[Manifest]
    alerts: list[alerts.Alert]
    metrics_to_watch: list[str]
    fit: hardware.Fit | None  # the stack against its node pool (None: no pool described)
    pools: list[PoolSpec]  # node pools to create
    payoff: payoff.Payoff  # break-even load bandwidth and each tier's expected reload
    budgets: list[AwaitBudget] = dataclasses.field(default_factory=list)  # what Pulumi waits for, and why
    rollout: rollout.Rollout | None = None  # how a template change rolls the model servers
    mirror: Mirror | None = None  # the created cluster's registry mirror, which every image goes through
    router_policies: list[Manifest] = dataclasses.field(default_factory=list)  # the router pods' NetworkPolicy
    prepull: list[Manifest] = dataclasses.field(default_factory=list)  # the serving pool's image pre-pull

    @property
    def model_server(self) -> ServerSpec:
        return self.roles[-1].spec

    @property
    def model_server_manifests(self) -> list[Manifest]:
        return self.roles[-1].manifests


def combo_defaults(config: StackConfig) -> ComboDefaults:
    cache = config.cache
    return SUPPORTED[(cache.accelerator, cache.server, cache.connector, cache.tier.variant, cache.host_type)]


def _scheduling(config: StackConfig) -> Scheduling:
    if config.cache.node_pool is None:
        return Scheduling()
    pool = config.node_pools[config.cache.node_pool]
    if config.cluster.provider != "existing":  # created pools label their nodes with their key
        return Scheduling(node_selector={hardware.POOL_LABEL: config.cache.node_pool})
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


def _image(config: StackConfig) -> str:
    cache, accelerator = config.cache, ACCELERATORS[config.cache.accelerator]
    if cache.image:
        return cache.image
    if cache.server == "sglang":
        return versions.SGLANG_IMAGE
    if cache.connector == "lmcache-server":  # the client must speak the server's protocol version
        return versions.lmcache_image(config.lmcache.version)
    if cache.connector == "lmcache-connector":
        return lmcache_image_for(accelerator.key) or accelerator.vllm_image
    return accelerator.vllm_image


def _default_tier(config: StackConfig, defaults: ComboDefaults) -> ByteSize:
    model, accelerator = MODELS[config.cache.model or defaults.model], ACCELERATORS[config.cache.accelerator]
    if defaults.cpu_tier_blocks is not None:
        return sizing.tpu_tier_bytes(model, accelerator, defaults.cpu_tier_blocks)
    assert defaults.cpu_tier is not None, "every combination defaults its CPU tier"
    return defaults.cpu_tier


def _size(
    config: StackConfig, defaults: ComboDefaults, tp: int, replicas: int, tier: ByteSize
) -> tuple[sizing.TierSizing, sizing.MooncakeClientSizing | None]:
    cache = config.cache
    model, accelerator = MODELS[cache.model or defaults.model], ACCELERATORS[cache.accelerator]
    disk = cache.tier.disk or defaults.disk_tier
    if accelerator.is_tpu:
        return sizing.size_tpu(model, accelerator, tp, tier, hosts=defaults.group_size), None
    if cache.server == "sglang":
        return sizing.size_hicache(model, accelerator, tp, tier), None
    if cache.connector == "lmcache-connector":
        return sizing.size_lmcache(model, accelerator, tp, tier, disk if cache.tier.variant == "fs" else None), None
    if cache.connector == "lmcache-server":
        return sizing.size_lmcache_server_client(model, accelerator, tp, tier), None
    if cache.connector == "mooncake-store":
        if cache.tier.variant == "fs":
            assert disk is not None, "MooncakeStore fs defaults its SSD size"
            return sizing.size_mooncake_standalone(model, accelerator, tp, replicas, tier, disk)
        return sizing.size_mooncake_embedded(model, accelerator, tp, replicas, tier), None
    return sizing.size_native_cpu_tier(model, accelerator, tp, tier), None


def _per_node_daemon(config: StackConfig, tier: ByteSize, client: sizing.MooncakeClientSizing | None) -> ByteSize:
    """Memory the per-node DaemonSets (the cache's, the image pre-pull) take beside the model servers on each node."""
    prepulled = prepull.MEMORY if config.images.prepull else ByteSize(0)
    if client is not None:
        return client.memory_request + prepulled
    if config.cache.connector == "lmcache-server":
        return lmcache.server_memory(tier)[0] + prepulled
    return prepulled


def _size_on_hardware(
    config: StackConfig, defaults: ComboDefaults, tp: int, replicas: int, devices: int
) -> tuple[sizing.TierSizing, sizing.MooncakeClientSizing | None, hardware.Fit | None]:
    """Size the tier (the combination's default, the stack's, or `auto`: the largest that fits), then
    check the stack against its node pool: devices per node, nodes, and memory per node."""
    cache = config.cache
    requested = cache.tier.cpu
    pool = hardware.pool_hardware(config, cache.node_pool) if cache.node_pool else None
    if pool is not None and pool.accelerator not in (None, cache.accelerator):
        raise ConfigError(
            "cache.node_pool", cache.node_pool, f"{pool.describe()} carries {pool.accelerator}, not {cache.accelerator}"
        )
    roles = 2 if cache.connector == "lmcache-server" and config.lmcache.mode == "pd" else 1
    pods = replicas * defaults.group_size * roles
    on_node = 1
    if pool is not None:
        slots = hardware.pods_per_node(pool, devices)
        hardware.check_capacity(pool, pods, slots)
        on_node = min(slots, pods)  # at most this many of the stack's pods share a node

    def memory_for(tier: ByteSize) -> tuple[ByteSize, ByteSize]:
        tier_sizing, client = _size(config, defaults, tp, replicas, tier)
        return tier_sizing.pod_memory, _per_node_daemon(config, tier, client)

    largest = None
    if requested == "auto":
        if pool is None:
            raise ConfigError("cache.tier.cpu", "auto", "needs cache.node_pool: the tier is sized to its nodes")
        per_rank = cache.connector == "mooncake-store" and cache.tier.variant == "cpu"
        largest = hardware.largest_fitting_tier(pool, on_node, memory_for, ByteSize(GiB) * (tp if per_rank else 1))
        tier = largest
    elif requested is None:
        tier = _default_tier(config, defaults)
    else:
        tier = requested
    tier_sizing, client = _size(config, defaults, tp, replicas, tier)
    fit = None
    if pool is not None:
        fit = hardware.check_memory(
            pool, tier_sizing.pod_memory, on_node, _per_node_daemon(config, tier, client), tier.human()
        )
        fit = dataclasses.replace(fit, largest_tier=largest)
    else:  # no pool to fit: the pod must still fit some node of the accelerator
        node = hardware.any_node(cache.accelerator)
        hardware.pods_per_node(node, devices)
        hardware.check_memory(node, tier_sizing.pod_memory, 1, _per_node_daemon(config, tier, client), tier.human())
    return tier_sizing, client, fit


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


def _lmcache_settings(config: StackConfig, l1: Any) -> lmcache.LMCacheServerSettings:
    lm = config.lmcache
    return lmcache.LMCacheServerSettings(
        version=lm.version,
        namespace=config.namespace,
        l1_size=l1,
        chunk_size=lm.chunk_size,
        hash_algorithm=lm.hash_algorithm,
        isolated_ipc=lm.isolated_ipc,
        eviction_policy=lm.eviction_policy,
        eviction_trigger_watermark=lm.eviction_trigger_watermark,
        eviction_ratio=lm.eviction_ratio,
        max_workers=lm.max_workers,
        privileged=lm.privileged,
    )


def _router_profile(config: StackConfig, replicas: int) -> str:
    if config.cache.connector != "lmcache-server":
        return "tiered"
    if config.lmcache.mode == "pd":
        return "pd"
    # Prefix scoring on token blocks needs the tokenizer once there is more than one pod to choose from.
    return "token-routing" if replicas >= 2 else "default"


def plan(config: StackConfig) -> StackPlan:
    cache, defaults = config.cache, combo_defaults(config)
    tp = cache.tensor_parallelism or defaults.tensor_parallelism
    replicas = cache.replicas or defaults.replicas
    devices = defaults.devices if defaults.devices is not None else tp
    tier_sizing, client_sizing, fit = _size_on_hardware(config, defaults, tp, replicas, devices)
    decode = _decode_server(config, defaults, tier_sizing, client_sizing, tp, replicas, devices)
    servers = [dataclasses.replace(decode, role="prefill"), decode] if decode.disaggregated else [decode]
    profile = _router_profile(config, replicas)
    values = _router_values(config, decode, tier_sizing, profile)
    check_router_reaches_model_servers(values, servers)
    is_mooncake = cache.connector == "mooncake-store"
    exports = _exports(config, profile)
    stack_payoff = payoff.derive(_payoff_inputs(config, defaults, tier_sizing.model, devices, replicas))
    stack_alerts = alerts.alerts(exports, _thresholds(config, stack_payoff))
    roles = [Role(s, model_server_manifests(s)) for s in servers]
    lmcache_server = (
        lmcache.server_manifests(_lmcache_settings(config, tier_sizing.cpu_tier_per_pod))
        if cache.connector == "lmcache-server"
        else []
    )
    mooncake_client = mooncake.client_manifests(client_sizing, decode.scheduling.node_selector) if client_sizing else []
    stack_plan = StackPlan(
        config=config,
        sizing=tier_sizing,
        roles=roles,
        storage_manifests=[_claim(config)] if uses_tier_claim(config) else [],
        model_cache=decode.model_cache,
        model_cache_manifests=_model_cache_manifests(config, decode.model_cache, tier_sizing.model),
        mooncake_master=[mooncake.namespace(), *mooncake.master_manifests()] if is_mooncake else [],
        mooncake_client=mooncake_client,
        lmcache_server=lmcache_server,
        router_values=values,
        inference_pool=inference_pool(config.router.release, config.namespace, values),
        monitoring=_monitoring(config, decode, exports, stack_alerts) if config.monitoring.enabled else [],
        verification=_verification(config, decode, exports) if config.verification.enabled else [],
        alerts=stack_alerts,
        metrics_to_watch=alerts.metrics_to_watch(exports),
        fit=fit,
        pools=pool_specs(config),
        payoff=stack_payoff,
        prepull=prepull_manifests(
            config, decode.accelerator, [m for r in roles for m in r.manifests], lmcache_server + mooncake_client
        ),
    )
    return _with_network_policies(_through_mirror(_with_await_budgets(_with_rollouts(stack_plan))))


def _decode_server(
    config: StackConfig,
    defaults: ComboDefaults,
    tier_sizing: sizing.TierSizing,
    client_sizing: sizing.MooncakeClientSizing | None,
    tp: int,
    replicas: int,
    devices: int,
) -> ServerSpec:
    """The decode role's model server (the only role unless the LMCache server runs P/D)."""
    cache = config.cache
    is_lmcache_server = cache.connector == "lmcache-server"
    disaggregated = is_lmcache_server and config.lmcache.mode == "pd"
    image = _image(config)
    cached = resolve_model_cache(config, tier_sizing.model, image)
    pods = replicas * defaults.group_size * (2 if disaggregated else 1)  # a first rollout reads all at once
    cold = startup.model_server_cold_start(config, cache.accelerator, tier_sizing.model, image, cached, readers=pods)
    return ServerSpec(
        namespace=config.namespace,
        accelerator=ACCELERATORS[cache.accelerator],
        server=cache.server,
        connector=cache.connector,
        variant=cache.tier.variant,
        host_type=cache.host_type,
        platform=config.cluster.effective_platform,
        model=tier_sizing.model,
        replicas=replicas,
        tensor_parallelism=tp,
        devices=devices,
        group_size=defaults.group_size,
        image=image,
        sizing=tier_sizing,
        scheduling=_scheduling(config),
        mooncake_client=client_sizing,
        guide=LMCACHE_GUIDES[config.lmcache.mode] if is_lmcache_server else labels.GUIDE,
        disaggregated=disaggregated,
        test_mode=config.lmcache.test_mode,
        sidecar_image=versions.disagg_sidecar_image(config.router.version) if disaggregated else None,
        startup_seconds=cold.budget,
        model_cache=cached,
    )


def uses_tier_claim(config: StackConfig) -> bool:
    """The filesystem tier on the shared claim (MooncakeStore's filesystem tier is node-local SSD)."""
    return config.cache.tier.variant == "fs" and config.cache.connector != "mooncake-store"


def resolve_model_cache(config: StackConfig, model: ModelSpec, image: str) -> model_cache.ModelCache | None:
    """auto: on the tier's claim where the stack has one (the weights belong beside the tier), else off."""
    settings, has_claim = config.model_cache, uses_tier_claim(config)
    mode = ("shared" if has_claim else "off") if settings.mode == "auto" else settings.mode
    if mode == "off":
        return None
    if mode == "shared" and not has_claim:
        raise ConfigError(
            "model_cache.mode",
            "shared",
            "needs the filesystem tier's claim (cache.tier.variant fs, not mooncake-store); allowed: dedicated, off",
        )
    return model_cache.ModelCache(
        claim=FILES_STORAGE_CLAIM if mode == "shared" else model_cache.MODEL_CACHE_CLAIM,
        shared_with_tier=mode == "shared",
        model=model.name,
        compile_key=model_cache.compile_key(config.cache.accelerator, image, model.name),
        load_format="runai_streamer" if config.cache.server == "vllm" and streams_weights(image) else None,
        compile_cache=settings.compile_cache,
    )


def _model_cache_manifests(
    config: StackConfig, cache: model_cache.ModelCache | None, model: ModelSpec
) -> list[Manifest]:
    """A dedicated claim (twice the weights: a new revision's files land beside the old ones), the Job."""
    if cache is None:
        return []
    settings = config.model_cache
    out = []
    # The claim the weights land on: its size is what it holds (EFS is elastic: its claim's size is nominal).
    holds = (
        ("storage.size", config.storage.size if config.storage.backend != "aws-efs" else None)
        if cache.shared_with_tier
        else ("model_cache.size", settings.size)
    )
    if holds[1] is not None and holds[1] < model.weight_bytes:
        raise ConfigError(
            holds[0],
            holds[1].human(),
            f"smaller than the {model.weight_bytes.ceil_to(GiB).human()} of weights of {model.name} the model cache"
            " fetches onto it",
        )
    if not cache.shared_with_tier:
        size = settings.size or ByteSize(-(-2 * model.weight_bytes.bytes // GiB) * GiB)
        out.append(model_cache.dedicated_claim(config.namespace, settings.storage_class, size.quantity()))
    budget = _fetch_budget(config, cache, model)
    fetch = model_cache.FetchSpec(config.namespace, cache, settings.revision, settings.image, budget.seconds)
    return out + model_cache.fetch_manifests(fetch)


def _fetch_budget(config: StackConfig, cache: model_cache.ModelCache, model: ModelSpec) -> AwaitBudget:
    return AwaitBudget(model_cache.FETCH_NAME, startup.fetch_job_cold_start(config, cache, model), 1)


def _router_values(
    config: StackConfig, decode: ServerSpec, tier_sizing: sizing.TierSizing, profile: str
) -> dict[str, Any]:
    router = config.router
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
        )
    )


def _exports(config: StackConfig, profile: str) -> alerts.Exports:
    cache = config.cache
    return alerts.Exports(
        vllm=cache.server == "vllm",
        vllm_offload=cache.server == "vllm"
        and cache.connector == "native"
        and not ACCELERATORS[cache.accelerator].is_tpu,
        sglang=cache.server == "sglang",
        lmcache=cache.connector in ("lmcache-connector", "lmcache-server"),
        router_cpu_index=profile == "tiered",
    )


def _thresholds(config: StackConfig, stack_payoff: payoff.Payoff) -> alerts.Thresholds:
    """The stack's alert thresholds; loads must beat the derived break-even unless the config says otherwise."""
    t = config.monitoring.alerts
    link = ACCELERATOR_RATES[config.cache.accelerator].host_link
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


def _transfer_block(config: StackConfig) -> tuple[int, str]:
    """Tokens per block the CPU tier moves to the accelerator, and what sets it."""
    cache, accelerator = config.cache, ACCELERATORS[config.cache.accelerator]
    if accelerator.is_tpu:
        return accelerator.kv_block_tokens, "TPU offload KV block"
    if cache.server == "sglang":
        return sglang.PAGE_TOKENS, "HiCache page"
    if cache.connector == "lmcache-server":
        return config.lmcache.chunk_size, "LMCache chunk, `lmcache.chunk_size`"
    if cache.connector == "lmcache-connector":
        return LMCACHE_CHUNK_TOKENS, "LMCache chunk"
    if cache.connector == "native" and cache.tier.variant == "fs":
        return TIERING_BLOCK_TOKENS, "TieringOffloadingSpec `block_size`"
    return accelerator.kv_block_tokens, "vLLM KV block"


def _payoff_inputs(
    config: StackConfig, defaults: ComboDefaults, model: ModelSpec, devices: int, replicas: int
) -> payoff.PayoffInputs:
    cache, storage = config.cache, config.storage
    block_tokens, block_from = _transfer_block(config)
    shared = uses_tier_claim(config)
    return payoff.PayoffInputs(
        model=model,
        accelerator=cache.accelerator,
        devices_per_pod=devices,
        pods_per_replica=defaults.group_size,
        block_tokens=block_tokens,
        block_from=block_from,
        prefix_tokens=config.monitoring.alerts.prefix_tokens,
        filesystem=(
            payoff.filesystem(
                storage.backend,
                storage.size,
                storage.lustre.per_unit_storage_throughput,
                storage.read_bandwidth,
                replicas * defaults.group_size,
            )
            if shared
            else None
        ),
    )


def _verification(config: StackConfig, decode: ServerSpec, exports: alerts.Exports) -> list[Manifest]:
    return verification_manifests(
        VerificationSpec(
            namespace=config.namespace,
            image=config.verification.image,
            model=decode.model.name,
            router_url=router_endpoint(config.router.release, config.namespace),
            selector=router_selector(decode),
            check="sglang" if exports.sglang else "native" if exports.vllm_offload else "external",
            shared_tier=exports.vllm_offload and config.cache.tier.variant == "fs",
            requests=config.verification.requests,
        )
    )


def lustre_volume_name(config: StackConfig) -> str:
    return f"{config.namespace}-kv-cache-lustre"


def _claim(config: StackConfig) -> Manifest:
    backend = config.storage.backend
    storage_class = {"gcp-lustre": LUSTRE_CLASS, "aws-efs": EFS_CLASS}.get(backend, config.storage.storage_class)
    volume = lustre_volume_name(config) if backend == "gcp-lustre" else None
    return files_storage_claim(config.namespace, storage_class, config.storage.size.quantity(), volume)


def pool_specs(config: StackConfig) -> list[PoolSpec]:
    """The node pools to create (none on an existing cluster); TPU multi-host pools, one per slice."""
    if config.cluster.provider == "existing":
        return []
    out = []
    for key, pool in sorted(config.node_pools.items()):
        taints = [{k: v for k, v in t.model_dump().items() if v is not None} for t in pool.taints]
        for name in pool_names(config.cluster.name, key, pool.slices):
            out.append(
                PoolSpec(
                    key=key,
                    name=name,
                    machine=MACHINES[str(pool.machine_type)],
                    node_count=pool.node_count,
                    tpu_topology=pool.tpu_topology,
                    spot=pool.spot,
                    reservation=pool.reservation,
                    labels=dict(pool.labels),
                    taints=taints,
                    image_streaming=mirror_registry(config) is not None,
                )
            )
    return out


def _through_mirror(stack_plan: StackPlan) -> StackPlan:
    """Every image the stack renders, and the router chart's, referenced through the mirror."""
    p = stack_plan
    every = [m for r in p.roles for m in r.manifests]
    every += p.model_cache_manifests + p.mooncake_master + p.mooncake_client + p.lmcache_server + p.verification
    every += p.prepull
    registries = {images.split_image(i)[0] for i in [*images.images(every), *chart_images()]}
    mirror = cluster_mirror(p.config, registries)
    if mirror is None:
        return stack_plan
    return dataclasses.replace(
        p,
        roles=[Role(r.spec, images.rewrite(r.manifests, mirror.image)) for r in p.roles],
        model_cache_manifests=images.rewrite(p.model_cache_manifests, mirror.image),
        mooncake_master=images.rewrite(p.mooncake_master, mirror.image),
        mooncake_client=images.rewrite(p.mooncake_client, mirror.image),
        lmcache_server=images.rewrite(p.lmcache_server, mirror.image),
        verification=images.rewrite(p.verification, mirror.image),
        prepull=images.rewrite(p.prepull, mirror.image),
        router_values=router_values_through(p.router_values, mirror),
        mirror=mirror,
    )


def _monitoring(
    config: StackConfig, decode: ServerSpec, exports: alerts.Exports, stack_alerts: list[alerts.Alert]
) -> list[Manifest]:
    provider, namespace = config.monitoring.provider, config.namespace
    out = [monitoring.model_server_monitor(provider, namespace, router_selector(decode), decode.role)]
    if config.cache.connector == "lmcache-server":
        out.append(monitoring.lmcache_server_monitor(provider, namespace))
    if config.cache.connector == "mooncake-store":
        out.append(monitoring.mooncake_master_monitor(provider))
    if provider == "prometheus-operator":
        out.append(alerts.prometheus_rule("tiered-prefix-cache", namespace, stack_alerts))
    else:  # GKE Managed Prometheus evaluates rules from its own Rules kind
        out.append(alerts.gmp_rules("tiered-prefix-cache", namespace, stack_alerts))
    if config.monitoring.dashboard:
        out.append(dashboard.dashboard_config_map(namespace, exports, config.monitoring.alerts.window))
    return out


def _nodes_of_stack(stack_plan: StackPlan) -> int:
    """Nodes a per-node daemon rolls over: the pool's, or (no pool described) one per model-server pod."""
    config = stack_plan.config
    if config.cache.node_pool:
        return hardware.pool_hardware(config, config.cache.node_pool).nodes
    return sum(r.spec.replicas * r.spec.group_size for r in stack_plan.roles)


def _budget_workloads(
    manifests: list[Manifest], kinds: tuple[str, ...], budget: AwaitBudget, wait_for: str | None = None
) -> list[Manifest]:
    return [with_await_budget(m, budget.seconds, wait_for) if m["kind"] in kinds else m for m in manifests]


def _model_server_budgets(stack_plan: StackPlan) -> tuple[list[Role], list[AwaitBudget]]:
    """A rolling update restarts a role's pods one after the other: a cold start per replica."""
    config, server = stack_plan.config, stack_plan.model_server
    pods = sum(r.spec.replicas * r.spec.group_size for r in stack_plan.roles)
    cold = startup.model_server_cold_start(
        config, server.accelerator.key, server.model, server.image, server.model_cache, readers=pods
    )
    roles, budgets = [], []
    for role in stack_plan.roles:
        workload = role.manifests[-1]
        budget = AwaitBudget(workload["metadata"]["name"], cold, waves=role.spec.replicas)
        budgets.append(budget)
        lws = workload["kind"] == "LeaderWorkerSet"  # no built-in await: the generic one, on its condition
        awaited = _budget_workloads(role.manifests, (workload["kind"],), budget, "condition=Available" if lws else None)
        roles.append(Role(role.spec, awaited))
    return roles, budgets


def _other_budgets(stack_plan: StackPlan) -> list[tuple[str, str, AwaitBudget]]:
    """(StackPlan field, awaited kind, budget) of each workload beside the model servers: the image pre-pull
    (every node at once), the per-node cache daemons (one node at a time), the Mooncake master, the
    verification Job (bounded by its own deadline)."""
    nodes, out = _nodes_of_stack(stack_plan), []
    if stack_plan.prepull:
        pulled = startup.prepull_cold_start(images.images(stack_plan.prepull))
        out.append(("prepull", "DaemonSet", AwaitBudget(prepull.NAME, pulled, 1)))
    if stack_plan.lmcache_server:
        image = versions.lmcache_image(stack_plan.config.lmcache.version)
        cold = startup.daemon_cold_start(image, stack_plan.sizing.cpu_tier_per_pod.bytes)
        out.append(("lmcache_server", "DaemonSet", AwaitBudget(lmcache.NAME, cold, nodes)))
    if stack_plan.mooncake_master:
        cold = startup.daemon_cold_start(versions.MOONCAKE_IMAGE, 0)
        out.append(("mooncake_master", "Deployment", AwaitBudget(mooncake.MASTER, cold, 1)))
    if stack_plan.mooncake_client:
        pinned = stack_plan.roles[-1].spec.mooncake_client
        cold = startup.daemon_cold_start(versions.MOONCAKE_IMAGE, pinned.dram.bytes if pinned else 0)
        out.append(("mooncake_client", "DaemonSet", AwaitBudget(mooncake.CLIENT, cold, nodes)))
    if stack_plan.verification:
        job = next(m for m in stack_plan.verification if m["kind"] == "Job")
        cold = startup.job_cold_start(stack_plan.config.verification.image, int(job["spec"]["activeDeadlineSeconds"]))
        out.append(("verification", "Job", AwaitBudget(job["metadata"]["name"], cold, 1)))
    return out


def _with_await_budgets(stack_plan: StackPlan) -> StackPlan:
    """Every workload Pulumi awaits gets an explicit budget above its modeled cold start; the summary lists
    them in the order `pulumi up` meets them."""
    roles, server_budgets = _model_server_budgets(stack_plan)
    fetch = []
    if stack_plan.model_cache is not None:  # its Job carries its budget already (it names the Job)
        job = next(m for m in stack_plan.model_cache_manifests if m["kind"] == "Job")
        budget = _fetch_budget(stack_plan.config, stack_plan.model_cache, stack_plan.model_server.model)
        fetch.append(dataclasses.replace(budget, workload=job["metadata"]["name"]))
    others = _other_budgets(stack_plan)
    awaited = {field: _budget_workloads(getattr(stack_plan, field), (kind,), b) for field, kind, b in others}
    before = [b for field, _, b in others if field == "prepull"]
    after = [b for field, _, b in others if field != "prepull"]

    def budgeted(field: str) -> list[Manifest]:
        current: list[Manifest] = getattr(stack_plan, field)
        return awaited.get(field, current)

    budgets = [*before, *fetch, *server_budgets, *after]
    _check_budgets(stack_plan.config, budgets)
    return dataclasses.replace(
        stack_plan,
        roles=roles,
        prepull=budgeted("prepull"),
        lmcache_server=budgeted("lmcache_server"),
        mooncake_master=budgeted("mooncake_master"),
        mooncake_client=budgeted("mooncake_client"),
        verification=budgeted("verification"),
        budgets=budgets,
    )


# The longest one pod's cold start may take: a week. Beyond it the modeled cold start says the stack
# cannot come up (its startup probe's failureThreshold and the await timeout grow past any use, and, at
# a bandwidth of a few bytes per second, past int32 and the engine's duration).
MAX_AWAIT_SECONDS = 7 * 24 * 3600


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


def _rollout(stack_plan: StackPlan) -> rollout.Rollout:
    config, server, fit = stack_plan.config, stack_plan.model_server, stack_plan.fit
    cap = None
    if config.cache.node_pool and fit is not None:
        pool = hardware.pool_hardware(config, config.cache.node_pool)
        daemon = fit.per_node - server.sizing.pod_memory * fit.pods_per_node
        cap = rollout.capacity(pool, server.devices, server.group_size, server.sizing.pod_memory, daemon)
    # The tier a model-server restart loses: the pod's own, unless a per-node daemon holds it.
    in_daemon = config.cache.connector == "lmcache-server" or bool(stack_plan.mooncake_client)
    return rollout.choose(
        replicas=server.replicas,
        roles=len(stack_plan.roles),
        group_size=server.group_size,
        cap=cap,
        tier_dropped=None if in_daemon else server.sizing.cpu_tier_per_pod,
        tier_auto=config.cache.tier.cpu == "auto",
    )


def _with_rollouts(stack_plan: StackPlan) -> StackPlan:
    """The chosen strategy on every model-server workload, a disruption budget beside each, node-by-node
    updates for the per-node daemons, and on every long-running pod template the checksum of its config."""
    chosen = _rollout(stack_plan)
    everything = [m for r in stack_plan.roles for m in r.manifests] + [
        *stack_plan.lmcache_server,
        *stack_plan.mooncake_master,
        *stack_plan.mooncake_client,
        *stack_plan.model_cache_manifests,
    ]
    configs = {m["metadata"]["name"]: m for m in everything if m["kind"] == "ConfigMap"}

    def checksummed(manifests: list[Manifest]) -> list[Manifest]:
        kinds = ("Deployment", "DaemonSet", "LeaderWorkerSet")
        return [with_config_checksum(m, configs) if m["kind"] in kinds else m for m in manifests]

    roles = []
    for role in stack_plan.roles:
        *objects, workload = checksummed(role.manifests)
        rolled = with_rollout(workload, chosen.max_surge, chosen.max_unavailable)
        roles.append(Role(role.spec, [*objects, pod_disruption_budget(rolled), rolled]))

    def daemons(manifests: list[Manifest]) -> list[Manifest]:
        return [with_node_by_node_update(m) if m["kind"] == "DaemonSet" else m for m in checksummed(manifests)]

    return dataclasses.replace(
        stack_plan,
        roles=roles,
        lmcache_server=daemons(stack_plan.lmcache_server),
        mooncake_master=checksummed(stack_plan.mooncake_master),
        mooncake_client=daemons(stack_plan.mooncake_client),
        prepull=[with_all_nodes_update(m) if m["kind"] == "DaemonSet" else m for m in stack_plan.prepull],
        rollout=chosen,
    )


def _traffic(stack_plan: StackPlan) -> network.StackTraffic:
    config, server, values = stack_plan.config, stack_plan.model_server, stack_plan.router_values
    scraper = config.network_policies.scraper
    default_namespaces, default_pods = network.SCRAPERS[config.monitoring.provider]
    return network.StackTraffic(
        namespace=config.namespace,
        router_pods=router_pod_labels(config.router.release, values),
        router_target_ports=[int(p["number"]) for p in values["router"]["modelServers"]["targetPorts"]],
        roles=[
            network.ServingRole(r.spec.role, r.spec.pod_labels, network.container_ports(r.manifests[-1]))
            for r in stack_plan.roles
        ],
        peer_traffic=server.disaggregated or server.host_type == "multi-host" or server.connector == "mooncake-store",
        scraper=network.Peer(
            scraper.pod_labels if scraper.pod_labels is not None else default_pods,
            scraper.namespace_labels if scraper.namespace_labels is not None else default_namespaces,
        ),
        verification={"app.kubernetes.io/name": verification.NAME} if stack_plan.verification else None,
        lmcache_server=bool(stack_plan.lmcache_server),
        mooncake=bool(stack_plan.mooncake_master),
    )


def _with_network_policies(stack_plan: StackPlan) -> StackPlan:
    """Each pod's NetworkPolicy, declared first in the component that owns the pod (the Mooncake ones
    after their namespace), so no pod of the stack starts unprotected."""
    if not stack_plan.config.network_policies.enabled:
        return stack_plan
    traffic = _traffic(stack_plan)
    roles = [
        Role(r.spec, [network.model_server_policy(traffic, serving, r.spec.workload_name), *r.manifests])
        for r, serving in zip(stack_plan.roles, traffic.roles, strict=True)
    ]
    master, client = stack_plan.mooncake_master, stack_plan.mooncake_client
    if traffic.mooncake:
        master_policy, client_policy = network.mooncake_policies(traffic, client=bool(client))
        master = [master[0], master_policy, *master[1:]]  # after the `mooncake` namespace
        client = [client_policy, *client] if client_policy else client
    lmcache_server = stack_plan.lmcache_server
    if lmcache_server:
        lmcache_server = [network.lmcache_server_policy(traffic), *lmcache_server]
    checks = stack_plan.verification
    if checks and traffic.verification is not None:
        checks = [network.closed_policy(traffic.namespace, verification.NAME, traffic.verification), *checks]
    fetch = stack_plan.model_cache_manifests
    if fetch:
        job = {"app.kubernetes.io/name": model_cache.FETCH_NAME}
        fetch = [network.closed_policy(traffic.namespace, model_cache.FETCH_NAME, job), *fetch]
    prepulled = stack_plan.prepull
    if prepulled:
        prepulled = [network.closed_policy(traffic.namespace, prepull.NAME, dict(prepull.LABELS)), *prepulled]
    release = stack_plan.config.router.release
    return dataclasses.replace(
        stack_plan,
        roles=roles,
        mooncake_master=master,
        mooncake_client=client,
        lmcache_server=lmcache_server,
        verification=checks,
        model_cache_manifests=fetch,
        prepull=prepulled,
        router_policies=[network.router_policy(traffic, labels.router_name(release))],
    )
