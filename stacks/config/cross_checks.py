"""Cross-field checks run at config load, after each field is valid on its own."""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel

from components.catalog import labels, router_floors
from components.catalog.key_lists import spoken
from components.catalog.machines import MACHINES
from components.catalog.support import SUPPORTED, ComboDefaults, supported_for
from components.formulas import payoff
from components.specs.clusters import POOL_LABEL
from components.specs.connectors import BY_KEY
from components.units import ByteSize, GiB, MiB
from stacks.config import StackConfig, formats
from stacks.config.capacity_checks import check_replicas_auto
from stacks.config.connector_choice import choice, connector_of
from stacks.config.disaggregation_checks import check_disaggregation
from stacks.config.errors import HIDDEN, ConfigError
from stacks.config.evictor_checks import check_evictor_applies
from stacks.config.layer_checks import check_layer
from stacks.config.pricing_checks import check_pricing
from stacks.config.providers import PROVIDERS, ClusterProvider, provider_of, providers_that
from stacks.config.storage_checks import check_backend_settings, check_storage
from stacks.config.workload_section import check_workload


def _creates(provider: ClusterProvider) -> bool:
    return provider.creates


def _disk_tiers() -> str:
    """The connectors and tier variants whose combinations take `cache.tier.disk` (components/catalog/support.py)."""
    combos = [combo for combo, defaults in SUPPORTED.items() if defaults.disk_tier is not None]
    connectors, variants = (list(dict.fromkeys(combo[i] for combo in combos)) for i in (2, 3))
    noun = "variant" if len(variants) == 1 else "variants"
    return f"{spoken(connectors, 'and')} with the {spoken(variants)} {noun}"


_DISK_TIERS = _disk_tiers()


def check_stack(config: StackConfig, *, trace_given: bool = False) -> None:
    """`trace_given`: the workload comes from `./run size --trace`, not the stack."""
    check_layer(config)
    if config.effective_layer == "cluster":  # no model: only what the cluster stack creates
        check_cluster(config)
        check_storage(config)
        check_applies(config)
        check_pricing(config)
        return
    cache = config.cache
    combo = (cache.accelerator, cache.server, cache.connector, cache.tier.variant, cache.host_type)
    if combo not in SUPPORTED:
        field, value, allowed = supported_for(combo)
        raise ConfigError(field, value, allowed)
    defaults = SUPPORTED[combo]

    platform = config.cluster.effective_platform
    if platform not in defaults.platforms:
        raise ConfigError(
            "cluster.platform",
            platform,
            f"not supported for {'/'.join(combo[:4])}; allowed: {', '.join(defaults.platforms)}",
        )

    # before anything reads the pool it names (the P/D pools default to it)
    if cache.node_pool is not None and cache.node_pool not in config.node_pools:
        allowed = ", ".join(sorted(config.node_pools)) or "none are described in node_pools"
        raise ConfigError("cache.node_pool", cache.node_pool, f"allowed: {allowed}")
    check_disaggregation(config)
    _check_sizes(config, defaults)
    check_router_floors(config)

    connector = connector_of(config)
    problem = connector.settings_problem(choice(config))
    if problem is not None:
        raise ConfigError(*problem)
    if config.router.prefix_routing == "precise" and config.cache.disaggregation is not None:
        raise ConfigError(
            "router.prefix_routing",
            "precise",
            "not with cache.disaggregation: its prefill profile scores the router's own HBM and CPU-tier indexes"
            " (approximate); allowed there: approximate",
        )
    if config.router.prefix_routing == "precise":
        refused = connector.precise_refusal(choice(config).filesystem_tier)
        if refused is not None:
            raise ConfigError("router.prefix_routing", "precise", refused)
    if not connector.reads_lmcache_section and config.lmcache.model_fields_set:
        raise ConfigError(
            "lmcache",
            sorted(config.lmcache.model_fields_set),
            f"applies only with cache.connector {spoken(k for k, c in BY_KEY.items() if c.reads_lmcache_section)}",
        )

    check_namespace(config)
    check_router_names(config)
    check_cluster(config)
    check_storage(config)
    check_applies(config)
    check_evictor_applies(config)
    check_workload(config.workload, trace_given=trace_given)
    check_replicas_auto(config, trace_given=trace_given)
    check_pricing(config)


def check_namespace(config: StackConfig) -> None:
    name = config.namespace
    if formats.is_reserved_namespace(name):
        raise ConfigError(
            "namespace",
            name,
            "a namespace the cluster or its platform owns; the stack creates its own namespace and deletes it"
            " with the stack: pick another",
        )


def _set_fields(section: BaseModel, names: tuple[str, ...]) -> list[str]:
    """The fields of `names` the stack set (a default is never an error)."""
    return [n for n in names if n in section.model_fields_set]


def check_applies(config: StackConfig) -> None:
    """A setting that does nothing on the chosen platform is an error, not a silent no-op."""
    cluster, storage, model_cache = config.cluster, config.storage, config.model_cache
    provider = provider_of(config)
    if not provider.takes_kubeconfig:
        for name in _set_fields(cluster, ("kubeconfig", "context")):
            raise ConfigError(
                f"cluster.{name}",
                HIDDEN,
                f"applies only with cluster.provider {providers_that(lambda p: p.takes_kubeconfig)},"
                f" not {cluster.provider}",
                hidden=True,
            )
    if not provider.creates and _set_fields(cluster, ("name",)):
        raise ConfigError(
            "cluster.name", cluster.name, f"names a created cluster; applies only with {providers_that(_creates)}"
        )
    for key, pool in config.node_pools.items():
        reserved = [k for k in pool.labels if provider.reserved_label(k)]
        if reserved:
            raise ConfigError(
                f"node_pools.{key}.labels",
                reserved[0],
                f"a label prefix {cluster.provider} and Kubernetes reserve for themselves (kubelets may not set it,"
                " the cloud refuses it on a pool): pick a prefix of your own",
            )
        if POOL_LABEL in pool.labels and provider.creates:  # the program labels the nodes of the pools it creates
            raise ConfigError(
                f"node_pools.{key}.labels",
                POOL_LABEL,
                f"the label a created pool's nodes carry with its key ({POOL_LABEL}={key}), which the model"
                " servers select: another value would send them to another pool; leave it out",
            )
        created_only = ("spot", "reservation", "slices", "tpu_topology")
        for name in _set_fields(pool, created_only) if provider.describes_pools else []:
            raise ConfigError(
                f"node_pools.{key}.{name}",
                getattr(pool, name),
                f"applies only to pools created on {providers_that(_creates)}",
            )
        described = ("accelerator", "accelerators_per_node", "host_memory")
        for name in _set_fields(pool, described) if provider.creates else []:
            value = getattr(pool, name)
            raise ConfigError(
                f"node_pools.{key}.{name}",
                value.human() if isinstance(value, ByteSize) else value,
                "describes an existing cluster's pool; a created pool's comes from its machine_type",
            )
    check_backend_settings(storage)
    if model_cache.mode != "dedicated":
        for name in _set_fields(model_cache, ("size", "storage_class")):
            raise ConfigError(
                f"model_cache.{name}", str(getattr(model_cache, name)), "applies only with model_cache.mode dedicated"
            )
    if config.images.ecr_credentials and not provider.ecr_credentials:
        raise ConfigError(
            "images.ecr_credentials",
            "(set)",
            f"applies only with cluster.provider {providers_that(lambda p: p.ecr_credentials)}",
        )
    for name, section in (("autoscaling", config.autoscaling), ("gateway", config.gateway)):
        idle = sorted(section.model_fields_set - {"enabled"})
        if idle and not section.enabled:
            value = getattr(section, idle[0])
            raise ConfigError(f"{name}.{idle[0]}", value, f"applies only with {name}.enabled true; it is off")


def check_router_names(config: StackConfig) -> None:
    """The names the router chart derives from the release and the namespace (components/catalog/labels.py)."""
    problem = labels.router_names_problem(config.router.release, config.namespace)
    if problem:
        raise ConfigError("router.release", config.router.release, problem)


def _check_sizes(config: StackConfig, defaults: ComboDefaults) -> None:
    """Tensor parallelism against the model and the pod's chips; tier sizes the connector can take."""
    cache = config.cache
    model = cache.model_spec(defaults.model)
    tp = cache.tensor_parallelism or defaults.tensor_parallelism
    if model.attention_heads % tp:
        raise ConfigError(
            "cache.tensor_parallelism", tp, f"must divide the {model.attention_heads} attention heads of {model.name}"
        )
    if defaults.devices is not None and cache.tensor_parallelism is not None and tp % defaults.devices:
        raise ConfigError(
            "cache.tensor_parallelism", tp, f"must be a multiple of the {defaults.devices} TPU chips of a pod"
        )

    prefix, longest = config.monitoring.alerts.prefix_tokens, payoff.longest_prefix(model)
    if prefix > longest:
        raise ConfigError(
            "monitoring.alerts.prefix_tokens",
            prefix,
            f"must be at most {longest}: {model.name}'s {model.context_tokens}-token context less a"
            f" {payoff.SUFFIX_TOKENS}-token suffix",
        )

    takes_disk = defaults.disk_tier is not None
    if cache.tier.disk is not None and not takes_disk:
        raise ConfigError(
            "cache.tier.disk",
            cache.tier.disk.human(),
            f"only {_DISK_TIERS} take a disk size; leave it unset",
        )

    # The tier Mooncake splits: the stack's, or the combination's default (which a TP can split unevenly).
    tier = (
        cache.tier.cpu
        if isinstance(cache.tier.cpu, ByteSize)
        else defaults.cpu_tier
        if cache.tier.cpu is None
        else None
    )
    ranks = connector_of(config).segment_ranks(tp, cache.tier.variant)  # Mooncake: whole-GiB segments
    if ranks is not None and tier is not None and tier.bytes % (GiB * ranks):
        per_rank = " per rank" if ranks > 1 else ""
        if cache.tier.cpu is None:
            raise ConfigError(
                "cache.tensor_parallelism",
                tp,
                f"splits the default {tier.human()} Mooncake tier into segments that are not whole GiB{per_rank};"
                f" set cache.tier.cpu to a multiple of {ranks} GiB",
            )
        raise ConfigError(
            "cache.tier.cpu",
            tier.human(),
            f"Mooncake segments are whole GiB{per_rank}: use a multiple of {ranks} GiB",
        )


def _machines_on(cloud: str) -> str:
    return ", ".join(sorted(m.key for m in MACHINES.values() if m.cloud == cloud))


# Cloud-side name limits of node pools, by provider (each provider's `name_limit`).
NAME_LIMITS = {p.key: p.name_limit for p in PROVIDERS.values() if p.name_limit is not None}
SYSTEM_POOL = "system"  # the pool every created cluster has for the router and system pods


def pool_names(cluster_name: str, key: str, slices: int) -> list[str]:
    """Cloud-side names of a created pool: `<cluster>-<key>`, one per TPU slice `-<i>` beyond one."""
    base = f"{cluster_name}-{key}"
    return [base] if slices == 1 else [f"{base}-{i}" for i in range(slices)]


def check_names(config: StackConfig) -> None:
    """Names the clouds reject: pool keys, the cluster name and the pool names derived from both."""
    cluster = config.cluster
    for key in config.node_pools:
        try:
            formats.dns_label(key)
        except ValueError as error:
            raise ConfigError(f"node_pools.{key}", key, f"a pool key {error}") from None
    provider = provider_of(config)
    if provider.name_limit is None:
        return
    limit = provider.name_limit
    if provider.cluster_name_limit is not None and len(cluster.name) > provider.cluster_name_limit:
        raise ConfigError(
            "cluster.name", cluster.name, f"a {provider.name} cluster name has at most {limit} characters"
        )
    system = f"{cluster.name}-{SYSTEM_POOL}"
    if len(system) > limit:
        raise ConfigError("cluster.name", cluster.name, f"its system pool name {system} exceeds {limit} characters")
    for key, pool in config.node_pools.items():
        if key == SYSTEM_POOL:
            raise ConfigError(f"node_pools.{key}", key, "the name of the cluster's built-in system pool; pick another")
        longest = max(pool_names(cluster.name, key, pool.slices), key=len)
        if len(longest) > limit:
            raise ConfigError(
                f"node_pools.{key}", key, f"its {cluster.provider} pool name {longest} exceeds {limit} characters"
            )


def check_cluster(config: StackConfig) -> None:
    cluster, provider = config.cluster, provider_of(config)
    check_names(config)
    for other in PROVIDERS.values():
        if other.settings is None:
            continue
        value = getattr(cluster, other.settings)
        if other is provider and value is None:
            raise ConfigError(f"cluster.{other.settings}", None, f"required with cluster.provider {other.key}")
        if other is not provider and value is not None:
            raise ConfigError(f"cluster.{other.settings}", "(set)", f"applies only with cluster.provider {other.key}")
    if provider.platform is not None and cluster.effective_platform != provider.platform:
        raise ConfigError(
            "cluster.platform", cluster.platform, f"a {provider.name} cluster's platform is {provider.platform}"
        )
    if cluster.gke is not None and config.gateway.enabled:  # two ranges of one VPC: GKE refuses an overlap
        proxy, master = config.gateway.proxy_subnet_cidr, cluster.gke.master_ipv4_cidr
        if ipaddress.ip_network(proxy).overlaps(ipaddress.ip_network(master)):
            raise ConfigError(
                "gateway.proxy_subnet_cidr",
                proxy,
                f"overlaps cluster.gke.master_ipv4_cidr {master}, the control plane's range; allowed: a /23 unused"
                " elsewhere in the VPC",
            )
    for key, pool in config.node_pools.items():
        field = f"node_pools.{key}.machine_type"
        machine = MACHINES.get(pool.machine_type or "")
        if not provider.creates:
            if machine is not None:
                raise ConfigError(
                    field,
                    pool.machine_type,
                    "an existing cluster's pools are described (accelerator, accelerators_per_node, host_memory),"
                    " not created",
                )
            continue
        if machine is None or machine.cloud != cluster.provider:
            raise ConfigError(
                field, pool.machine_type, f"a {cluster.provider} machine; allowed: {_machines_on(cluster.provider)}"
            )
        if pool.slices > 1 and machine.tpu_topology is None:
            raise ConfigError(f"node_pools.{key}.slices", pool.slices, "only TPU pools come in slices")
        if pool.reservation is not None and provider.reservation is not None:
            try:
                provider.reservation(pool.reservation)
            except ValueError as error:
                raise ConfigError(f"node_pools.{key}.reservation", pool.reservation, str(error)) from None
    if provider.creates and config.effective_layer != "cluster" and config.cache.node_pool is None:
        allowed = ", ".join(sorted(config.node_pools)) or "describe one in node_pools"
        raise ConfigError("cache.node_pool", None, f"required on a created cluster; allowed: {allowed}")


def check_router_floors(config: StackConfig) -> None:
    """Neither router container below the least it starts with (components/catalog/router_floors.py); the
    EPP's memory is held to its prefix index too, once the plan knows the index (plan.py)."""
    for section in ("epp_resources", "proxy_resources"):
        resources = getattr(config.router, section)
        if formats.millicores(resources.cpu) < router_floors.MIN_MILLICORES:
            raise ConfigError(
                f"router.{section}.cpu",
                resources.cpu,
                f"at least {router_floors.MIN_MILLICORES}m: {router_floors.FLOOR_FROM[section]}",
            )
        if resources.memory < router_floors.BASE_MEMORY:
            raise ConfigError(
                f"router.{section}.memory",
                resources.memory.quantity(),
                f"at least {router_floors.BASE_MEMORY.quantity()}: {router_floors.FLOOR_FROM[section]}",
            )


def check_epp_index(config: StackConfig, lru_capacity_per_server: int, endpoints: int) -> None:
    """The EPP's memory holds its base and its prefix index (the plan knows the index's size)."""
    memory = config.router.epp_resources.memory
    floor = router_floors.epp_memory_floor(lru_capacity_per_server, endpoints)
    if memory < floor:
        raise ConfigError(
            "router.epp_resources.memory",
            memory.quantity(),
            f"at least {floor.ceil_to(MiB).quantity()}: {router_floors.BASE_MEMORY.quantity()} base plus the"
            f" prefix index, {lru_capacity_per_server} entries a server x {endpoints} endpoints x"
            f" {router_floors.INDEX_ENTRY_BYTES} bytes ({router_floors.INDEX_FROM})",
        )
