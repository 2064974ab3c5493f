"""`cache.disaggregation`'s cross-field checks: what can run P/D with its tier on the prefill pods, and what each
pool's shape must fit. Each refusal is one line naming the field, the value and what is allowed."""

from __future__ import annotations

from components.catalog.accelerators import ACCELERATORS
from components.catalog.key_lists import spoken
from components.catalog.support import SUPPORTED
from components.specs.connectors import BY_KEY
from stacks.config import StackConfig
from stacks.config.connector_choice import connector_of
from stacks.config.disaggregation_section import PoolConfig
from stacks.config.errors import ConfigError

FIELD = "cache.disaggregation"


def check_disaggregation(config: StackConfig) -> None:
    cache, pd = config.cache, config.cache.disaggregation
    if pd is None:
        return
    connector = connector_of(config)
    if not connector.disaggregates:
        able = spoken(k for k, c in BY_KEY.items() if c.disaggregates)
        raise ConfigError(
            FIELD,
            f"{cache.server}/{cache.connector}",
            f"P/D with the tier on the prefill pods runs on vLLM with cache.connector {able} only (NIXL + the"
            " OffloadingConnector on prefill); SGLang's decode-side radix cache for P/D and the other connectors"
            " are not supported here",
        )
    if cache.host_type != "single-host":
        raise ConfigError("cache.host_type", cache.host_type, f"{FIELD} runs single-host pods only")
    if "replicas" in cache.model_fields_set:
        raise ConfigError(
            "cache.replicas", cache.replicas, f"unset with {FIELD}: each pool counts its own (`{FIELD}.*.replicas`)"
        )
    if config.autoscaling.enabled:
        raise ConfigError("autoscaling.enabled", True, f"not with {FIELD}: the pools' counts are planned, not scaled")
    if cache.tier.cpu == "auto":
        raise ConfigError("cache.tier.cpu", "auto", f"a size with {FIELD} (the CPU tier of one prefill engine)")
    slo = config.workload.slo if config.workload is not None else None
    for role, pool, target in (("prefill", pd.prefill, "ttft_p90"), ("decode", pd.decode, "tpot_p90")):
        if pool.replicas == "auto" and (slo is None or getattr(slo, target) is None):
            raise ConfigError(
                f"{FIELD}.{role}.replicas", "auto", f"needs a workload and workload.slo.{target} to choose the count"
            )
    transports = set()
    for role, pool in (("prefill", pd.prefill), ("decode", pd.decode)):
        transports.add(_check_pool(config, f"{FIELD}.{role}", pool))
    if len(transports) > 1:
        raise ConfigError(
            f"{FIELD}.decode.accelerator", pd.decode.accelerator, "must carry the prefill pool's KV transport"
        )


def _check_pool(config: StackConfig, field: str, pool: PoolConfig) -> str:
    cache, pd = config.cache, config.cache.disaggregation
    assert pd is not None
    key = pool.accelerator or cache.accelerator
    accelerator = ACCELERATORS[key]
    transport = accelerator.kv_transport
    if transport is None or transport.key != pd.transport:
        able = spoken(k for k, a in ACCELERATORS.items() if a.kv_transport and a.kv_transport.key == pd.transport)
        raise ConfigError(f"{field}.accelerator", key, f"{pd.transport} runs on {able} (its vLLM image carries it)")
    combo = (key, cache.server, cache.connector, cache.tier.variant, cache.host_type)
    if combo not in SUPPORTED:
        raise ConfigError(f"{field}.accelerator", key, f"{'/'.join(combo[1:4])} does not run on {key}")
    tp = pool.tensor_parallelism or cache.tensor_parallelism or SUPPORTED[combo].tensor_parallelism
    devices = tp * pool.data_parallelism
    if devices > accelerator.devices_per_node:
        raise ConfigError(
            f"{field}.data_parallelism",
            pool.data_parallelism,
            f"{tp} devices x {pool.data_parallelism} engines = {devices} exceeds the {accelerator.devices_per_node}"
            f" a {key} node has",
        )
    node_pool = pool.node_pool or cache.node_pool
    if pool.node_pool is not None and pool.node_pool not in config.node_pools:
        allowed = ", ".join(sorted(config.node_pools)) or "none are described in node_pools"
        raise ConfigError(f"{field}.node_pool", pool.node_pool, f"allowed: {allowed}")
    carries = config.node_pools[node_pool].accelerator if node_pool is not None else None
    if carries is not None and carries != key:
        raise ConfigError(f"{field}.node_pool", node_pool, f"holds {carries} nodes, not {key}")
    return transport.key
