"""Rules over the router: its prefix index fits the tier it tracks, its scorers have what they score
with, it selects the model servers, one release per namespace."""

from __future__ import annotations

from typing import Any

from components.catalog.labels import ROUTER_BLOCK_TOKENS
from components.catalog.models import MODELS
from policies.checks.inventory import (
    model_servers,
    router_charts,
)
from policies.checks.rule_types import NoConfig, Violation
from policies.resources import (
    Resource,
    chart_values,
    cpu_tier_bytes,
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


def router_capacity_within_tier(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """CPU producer capacity x 64 tokens x KV bytes per token must fit the servers' CPU tier.

    MooncakeStore pools every pod's memory, so its per-server capacity is the pool: not checked per pod.
    """
    out = []
    for chart in router_charts(resources):
        values = chart_values(chart)
        producer = _cpu_producer_capacity(values)
        selector = ((values["router"].get("modelServers") or {}).get("matchLabels")) or {}
        if producer is None:
            continue
        capacity, block = producer
        for pod in pods(resources):
            if not selects(selector, pod.labels):
                continue
            for container in pod.containers(init=False):
                model = MODELS.get(served_model(container) or "")
                if model is None:
                    continue
                kv = model.kv_bytes_per_token.bytes
                tier = cpu_tier_bytes(container, kv)
                believed = capacity * block * kv
                if tier is not None and believed > tier:
                    out.append(
                        Violation(
                            chart,
                            f"router lruCapacityPerServer {capacity} tracks {believed} bytes per pod, more than the"
                            f" {tier}-byte CPU tier of {pod.owner.name}: the router would steer requests to"
                            f" evicted blocks (at most {tier // (block * kv)})",
                        )
                    )
    return out


def prefix_scoring_has_tokens(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A token-block prefix scorer with no tokenizer scores every pod 0 once there are two or more pods."""
    replicas = sum(
        int((pod.owner.props.get("spec") or {}).get("replicas") or 1) for pod, _c, _k in model_servers(resources)
    )
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
