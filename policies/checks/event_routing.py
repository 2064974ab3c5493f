"""Rules over precise prefix routing and token-aware scaling: the invariants llm-d's guides ask a reader to keep by
hand (`guides/precise-prefix-cache-routing`: "`tokenProcessorConfig.{blockSize,hashSeed}` ... must match vLLM's
`--block-size` and `PYTHONHASHSEED` env var. Changing one side requires changing the other";
`keda-epp-token-aware`: the peak prefill rate "goes in two places"), held on the render.

A publishing engine is a model-server container started with `--kv-events-config` naming a zmq publisher (and,
where its connector's engine needs it, the config's switch on: `Connector.kv_events_switch`). What its connector
publishes per tier, its block flag and its switch come from the connector registry by the pod's connector label.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from components.catalog import labels
from policies.checks.inventory import CONNECTORS, router_charts
from policies.checks.rule_types import NoConfig, Violation
from policies.resources import Pod, Resource, args, chart_values, endpoint_picker_config, env, flag, pods, selects

SCALED_OBJECT_TYPE = "kubernetes:keda.sh/v1alpha1:ScaledObject"


@dataclass(frozen=True)
class Publishing:
    """One container that publishes KV-cache events, as rendered."""

    pod: Pod
    container: dict[str, Any]
    config: dict[str, Any]  # its --kv-events-config

    @property
    def name(self) -> str:
        return f"{self.pod.owner.name}/{self.container.get('name')}"

    @property
    def port(self) -> int | None:
        match = re.fullmatch(r"tcp://[^:]+:(\d+)", str(self.config.get("endpoint", "")))
        return int(match.group(1)) if match else None


def _events_config(container: dict[str, Any]) -> dict[str, Any] | None:
    value = flag(args(container), "--kv-events-config")
    try:
        parsed = json.loads(value) if value is not None else None
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _connector(pod: Pod) -> Any:
    return CONNECTORS.get(pod.labels.get(labels.KV_CONNECTOR_LABEL, ""))


def _publishes(pod: Pod, config: dict[str, Any] | None) -> bool:
    if config is None or config.get("publisher") != "zmq":
        return False
    connector = _connector(pod)
    switch = connector.kv_events_switch if connector is not None else "enable_kv_cache_events"
    return switch is None or config.get(switch) is True


def publishing(resources: list[Resource]) -> list[Publishing]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            config = _events_config(container)
            if config is not None and _publishes(pod, config):
                out.append(Publishing(pod, container, config))
    return out


@dataclass(frozen=True)
class PreciseRouter:
    chart: Resource
    selector: dict[str, str]
    producer: dict[str, Any]  # the precise-prefix-cache-producer's parameters

    def selects(self, pod: Pod) -> bool:
        return selects(self.selector, pod.labels)

    @property
    def block_tokens(self) -> object:
        tokens = self.producer.get("tokenProcessorConfig") or {}
        return tokens.get("blockSizeTokens", tokens.get("blockSize"))

    @property
    def hash_seed(self) -> object:
        return (self.producer.get("tokenProcessorConfig") or {}).get("hashSeed")

    @property
    def socket_port(self) -> object:
        return ((self.producer.get("kvEventsConfig") or {}).get("podDiscoveryConfig") or {}).get("socketPort")


def precise_routers(resources: list[Resource]) -> list[PreciseRouter]:
    out = []
    for chart in router_charts(resources):
        values = chart_values(chart)
        selector = ((values.get("router") or {}).get("modelServers") or {}).get("matchLabels") or {}
        for plugin in endpoint_picker_config(values).get("plugins") or []:
            if plugin.get("type") == labels.PRECISE_PRODUCER:
                out.append(PreciseRouter(chart, dict(selector), dict(plugin.get("parameters") or {})))
    return out


def _block_of(p: Publishing) -> str | None:
    connector = _connector(p.pod)
    return flag(args(p.container), connector.block_flag if connector is not None else "--block-size")


def kv_events_block_size(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Every publishing engine states its block size, all alike, and every precise router hashes in it."""
    found = publishing(resources)
    out = [Violation(p.pod.owner, f"{p.name} publishes KV events without stating its block size") for p in found]
    out = [v for v, p in zip(out, found, strict=True) if _block_of(p) is None]
    sizes = {block for p in found if (block := _block_of(p)) is not None}
    if len(sizes) > 1:
        out.append(
            Violation(found[0].pod.owner, f"engines publishing KV events run different block sizes {sorted(sizes)}")
        )
    for router in precise_routers(resources):
        for p in found:
            block = _block_of(p)
            if router.selects(p.pod) and block is not None and str(router.block_tokens) != block:
                out.append(
                    Violation(
                        router.chart,
                        f"the precise index hashes in blocks of {router.block_tokens} tokens, {p.name} publishes"
                        f" blocks of {block}: no request's blocks would match what the pod reports",
                    )
                )
    return out


def _seed(container: dict[str, Any]) -> object:
    return (env(container).get(labels.HASH_SEED_ENV) or {}).get("value")


def kv_events_hash_seed(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Every publishing engine sets PYTHONHASHSEED, all the same, and every precise router hashes with it."""
    found = publishing(resources)
    out = [
        Violation(p.pod.owner, f"{p.name} publishes KV events without {labels.HASH_SEED_ENV}: its block hashes are"
                  " seeded at random on every start")
        for p in found
        if _seed(p.container) is None
    ]  # fmt: skip
    seeds = {str(_seed(p.container)) for p in found if _seed(p.container) is not None}
    if len(seeds) > 1:
        different = f"engines publishing KV events set different hash seeds {sorted(seeds)}"
        out.append(Violation(found[0].pod.owner, different))
    for router in precise_routers(resources):
        for p in found:
            seed = _seed(p.container)
            if router.selects(p.pod) and seed is not None and str(router.hash_seed) != str(seed):
                out.append(
                    Violation(
                        router.chart,
                        f"the precise index hashes with seed {router.hash_seed!r}, {p.name} with"
                        f" {labels.HASH_SEED_ENV}={seed}",
                    )
                )
    return out


def _ranks(container: dict[str, Any]) -> int:
    argv = args(container)
    value = flag(argv, "--data-parallel-size") or flag(argv, "--data-parallel-size-local") or flag(argv, "-dp")
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else 1


def _declared(container: dict[str, Any]) -> list[int]:
    return [int(p["containerPort"]) for p in container.get("ports") or [] if p.get("protocol", "TCP") == "TCP"]


def kv_events_port_per_rank(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Each rank publishes on its own port (the endpoint's port + its data-parallel rank), which the container
    declares and no other container of the pod uses, and every precise router dials from that port."""
    out = []
    found = publishing(resources)
    for p in found:
        if p.port is None:
            endpoint = p.config.get("endpoint")
            out.append(Violation(p.pod.owner, f"{p.name} publishes KV events on {endpoint!r}, no TCP port"))
            continue
        wanted = [p.port + rank for rank in range(_ranks(p.container))]
        missing = [port for port in wanted if port not in _declared(p.container)]
        if missing:
            undeclared = f"{p.name} publishes KV events on ports {wanted} but declares no {missing}"
            out.append(Violation(p.pod.owner, undeclared))
        others = {
            port for c in p.pod.containers() if c is not p.container for port in _declared(c)
        }  # fmt: skip
        shared = sorted(set(wanted) & others)
        if shared:
            out.append(Violation(p.pod.owner, f"{p.name}'s event ports {shared} are another container's too"))
        for router in precise_routers(resources):
            if router.selects(p.pod) and router.socket_port != p.port:
                dials = f"the precise index dials port {router.socket_port} on each pod, {p.name} publishes on {p.port}"
                out.append(Violation(router.chart, dials))
    return out


def _filesystem_tier(pod: Pod) -> bool:
    mounts = [m for c in pod.containers(init=False) for m in c.get("volumeMounts") or []]
    return any(m.get("mountPath") == labels.FILES_STORAGE_MOUNT for m in mounts)


def precise_scorer_over_publishers(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """A precise index routes only over pods whose engine publishes its events and whose connector's engine reports
    every tier (the connector records' stores and evictions): a pod that reports nothing scores 0 forever."""
    out = []
    found = {id(p.container) for p in publishing(resources)}
    for router in precise_routers(resources):
        for pod in pods(resources):
            if not router.selects(pod):
                continue
            serving = [c for c in pod.containers(init=False) if c.get("name") == "modelserver"] or list(
                pod.containers(init=False)
            )
            if not any(id(c) in found for c in serving):
                silent = f"the precise index routes to {pod.owner.name}, whose engine publishes no KV events"
                out.append(Violation(router.chart, silent))
                continue
            connector = _connector(pod)
            refused = (
                connector.precise_refusal(_filesystem_tier(pod))
                if connector is not None
                else f"its {labels.KV_CONNECTOR_LABEL} label names no connector whose events are recorded"
            )
            if refused is not None:
                out.append(Violation(router.chart, f"the precise index routes to {pod.owner.name}: {refused}"))
    return out


def _divisor(query: str) -> float | None:
    match = re.search(rf"{labels.INFLIGHT_TOKENS_METRIC}\{{[^}}]*\}}\)\s*/\s*([0-9.]+)", query)
    return float(match.group(1)) if match else None


def _filter_rates(resources: list[Resource]) -> list[tuple[Resource, object]]:
    out = []
    for chart in router_charts(resources):
        for plugin in endpoint_picker_config(chart_values(chart)).get("plugins") or []:
            if plugin.get("type") == labels.AFFINITY_FILTER:
                out.append((chart, (plugin.get("parameters") or {}).get("peakPrefillThroughput")))
    return out


def prefill_rate_agrees(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """The token-aware trigger divides the in-flight tokens by the router filter's peak prefill rate: one value."""
    out = []
    rates = _filter_rates(resources)
    for scaled in (r for r in resources if r.type == SCALED_OBJECT_TYPE):
        for trigger in (scaled.props.get("spec") or {}).get("triggers") or []:
            if trigger.get("name") != labels.PREFILL_BACKLOG_TRIGGER:
                continue
            divisor = _divisor(str((trigger.get("metadata") or {}).get("query", "")))
            if not rates:
                alone = (
                    f"{labels.PREFILL_BACKLOG_TRIGGER} divides by {divisor}, but no router's {labels.AFFINITY_FILTER}"
                    " carries a peakPrefillThroughput"
                )
                out.append(Violation(scaled, alone))
            for chart, rate in rates:
                if divisor is None or not isinstance(rate, (int, float)) or float(rate) != divisor:
                    out.append(
                        Violation(
                            scaled,
                            f"{labels.PREFILL_BACKLOG_TRIGGER} divides the in-flight tokens by {divisor}, the router"
                            f" {chart.name}'s {labels.AFFINITY_FILTER} prices prefill at {rate} tokens/s: one rate",
                        )
                    )
    return out
