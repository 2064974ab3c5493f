"""Rules over the router: its prefix index fits the tier it tracks, its scorers have what they score
with, it selects the model servers, one release per namespace."""

from __future__ import annotations

from typing import Any

from components.catalog.labels import KV_CONNECTOR_LABEL, ROLE_LABEL, ROUTER_BLOCK_TOKENS
from policies.checks.inventory import (
    CONNECTORS,
    cpu_tier_of,
    model_of,
    model_servers,
    pods_per_replica,
    replicas_of,
    router_charts,
)
from policies.checks.rule_types import NoConfig, Violation
from policies.resources import (
    Pod,
    Resource,
    chart_values,
    endpoint_picker_config,
    pods,
    selects,
    served_model,
)


def _cpu_producer_capacity(values: dict[str, Any]) -> tuple[int, int] | None:
    """The CPU producer's capacity and the tokens a block of its counts (`blockSizeTokens`, else 64)."""
    for plugin in endpoint_picker_config(values).get("plugins") or []:
        params = plugin.get("parameters") or {}
        if plugin.get("type") == "approx-prefix-cache-producer" and "lruCapacityPerServer" in params:
            return int(params["lruCapacityPerServer"]), int(params.get("blockSizeTokens", ROUTER_BLOCK_TOKENS))
    return None


def _tier_daemons(resources: list[Resource]) -> list[Pod]:
    """The per-node daemons that hold a pooled tier (the LMCache server, the Mooncake Client): DaemonSets whose
    workload carries a CPU-tier stamp and whose pods run no connector of their own."""
    return [
        pod
        for pod in pods(resources)
        if pod.owner.type.endswith(":DaemonSet") and cpu_tier_of(pod) and not pod.labels.get(KV_CONNECTOR_LABEL)
    ]


def _pool(resources: list[Resource], servers: list[Pod]) -> int:
    """A pooled tier as the stamps say: every server pod's own share (an embedded Mooncake segment) and each tier
    daemon's share on every node a server pod may run on (at most one node per server pod)."""
    owners = {pod.owner.name: pod for pod in servers}
    server_pods = sum(replicas_of(pod) * pods_per_replica(pod) for pod in owners.values())
    held = sum((cpu_tier_of(pod) or 0) * replicas_of(pod) * pods_per_replica(pod) for pod in owners.values())
    daemons = {pod.owner.name: cpu_tier_of(pod) or 0 for pod in _tier_daemons(resources)}
    return held + sum(daemons.values()) * server_pods


def _server_tier(resources: list[Resource], servers: list[Pod], pod: Pod) -> int | None:
    """Bytes of the CPU tier one router endpoint (a replica) reaches, from its workload's stamp
    (`inventory.cpu_tier_of`): the replica's pods' own tiers, or for a pooled connector (its `cpu_scope`) the
    whole pool. None: not stamped (`identity-labels` reports it)."""
    stamp = cpu_tier_of(pod)
    if stamp is None:
        return None
    connector = CONNECTORS.get(pod.labels.get(KV_CONNECTOR_LABEL, ""))
    if connector is not None and connector.cpu_scope == "pooled":
        return _pool(resources, servers)
    return stamp * pods_per_replica(pod)


def _kv_bytes_per_token(pod: Pod) -> int | str | None:
    """KV bytes per token of the model the pod serves, from the geometry its workload is stamped with
    (`llm-d.ai/model-geometry`, a `cache.model_file`'s too); why it cannot be judged where the stamp is missing or
    wrong (a violation, never skipped); None where the pod serves no model."""
    for container in pod.containers(init=False):
        served = served_model(container)
        if served is not None:
            model = model_of(pod, served)
            return model if isinstance(model, str) else model.kv_bytes_per_token.bytes
    return None


def router_capacity_within_tier(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """CPU producer capacity x its block (`blockSizeTokens`, else 64) tokens x KV bytes per token must fit the CPU
    tier each server reaches, as its workload is stamped (`llm-d.ai/cpu-tier-bytes`), never read from a
    connector's own settings: a connector that writes its tier under a name of its own is checked like every other
    one. The KV bytes come from the model geometry the workload is stamped with (`llm-d.ai/model-geometry`), so a
    `cache.model_file` model is checked too."""
    out = []
    for chart in router_charts(resources):
        values = chart_values(chart)
        producer = _cpu_producer_capacity(values)
        selector = ((values["router"].get("modelServers") or {}).get("matchLabels")) or {}
        if producer is None:
            continue
        capacity, block = producer
        servers = [pod for pod in pods(resources) if selects(selector, pod.labels)]
        # P/D: the prefix scorers are the prefill profile's, and the tier is on the prefill pods alone
        prefill = [pod for pod in servers if pod.labels.get(ROLE_LABEL) == "prefill"]
        for pod in prefill or servers:
            kv = _kv_bytes_per_token(pod)
            tier = _server_tier(resources, servers, pod)
            if kv is None or tier is None:
                continue
            if isinstance(kv, str):
                out.append(
                    Violation(
                        chart,
                        f"cannot judge router lruCapacityPerServer {capacity} against the CPU tier of"
                        f" {pod.owner.name} without the KV bytes a token of its model takes: {kv}",
                    )
                )
                continue
            believed = capacity * block * kv
            if believed > tier:
                out.append(
                    Violation(
                        chart,
                        f"router lruCapacityPerServer {capacity} tracks {believed} bytes per server, more than the"
                        f" {tier}-byte CPU tier a server of {pod.owner.name} reaches: the router would steer"
                        f" requests to evicted blocks (at most {tier // (block * kv)})",
                    )
                )
    return out


def prefix_scoring_has_tokens(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A token-block prefix scorer with no tokenizer scores every pod 0 once there are two or more pods."""
    replicas = sum(replicas_of(pod) for pod, _c, _k in model_servers(resources))
    out = []
    for chart in router_charts(resources):
        values = chart_values(chart)
        plugins = endpoint_picker_config(values).get("plugins") or []
        producers = {p.get("name") or p.get("type") for p in plugins if p.get("type") == "approx-prefix-cache-producer"}
        token_scorers = [
            p for p in plugins
            if p.get("type") == "prefix-cache-scorer"
            and (p.get("parameters") or {}).get("prefixMatchInfoProducerName") not in producers
        ]  # fmt: skip
        has_tokens = any(p.get("type") == "token-producer" for p in plugins) and (
            ((values["router"].get("tokenizer") or {}).get("enabled")) is True
        )
        if token_scorers and replicas >= 2 and not has_tokens:
            out.append(
                Violation(chart, "prefix-cache-scorer on token blocks with 2+ pods and no tokenizer/token-producer")
            )
    return out


def router_selects_model_servers(resources: list[Resource], _: NoConfig) -> list[Violation]:
    labels = [pod.labels for pod in pods(resources)]
    out = []
    for chart in router_charts(resources):
        selector = ((chart_values(chart)["router"].get("modelServers") or {}).get("matchLabels")) or {}
        if not any(selects(selector, pod_labels) for pod_labels in labels):
            out.append(Violation(chart, f"router modelServers.matchLabels {selector} selects no model-server pod"))
    return out


def one_router_per_namespace(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Every release of the router chart creates a ConfigMap named `envoy`: two in one namespace collide."""
    by_namespace: dict[str, list[Resource]] = {}
    for chart in router_charts(resources):
        by_namespace.setdefault(str(chart.props.get("namespace") or "default"), []).append(chart)
    return [
        Violation(chart, f"router releases {[c.name for c in charts]} share namespace {namespace}")
        for namespace, charts in by_namespace.items()
        if len(charts) > 1
        for chart in charts[1:]
    ]
