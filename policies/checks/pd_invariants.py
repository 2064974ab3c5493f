"""Rules over P/D disaggregation with its tier on the prefill pods (llm-d pd-disaggregation README.multi-tier.md):
the engines and the router hash in one block size, every engine hashes with one seed, each local engine has its
own NIXL handshake port, and both roles run the handoff. (A CPU tier times the pod's engines within the pod's
memory limit is `memory-limit-covers-tier`, which counts the engines.) A P/D engine is one whose kv-transfer config
runs a handoff the catalog's accelerators carry (`kv_transport`); an LMCache P/D pod, whose config a ConfigMap
holds, is LMCache's rules'."""

from __future__ import annotations

from components.catalog.accelerators import ACCELERATORS
from components.catalog.kv_transport import NIXL_SIDE_CHANNEL_PORT
from components.catalog.labels import ROLE_LABEL
from policies.checks.inventory import router_charts
from policies.checks.rule_types import NoConfig, Violation
from policies.resources import (
    Pod,
    Props,
    Resource,
    args,
    chart_values,
    connectors,
    endpoint_picker_config,
    env,
    flag,
    kv_transfer_config,
    local_engines,
    pods,
    selects,
)

HANDOFFS = {a.kv_transport.connector_class for a in ACCELERATORS.values() if a.kv_transport is not None}
PD_ROLES = ("prefill", "decode")


def _handoffs(container: Props) -> set[str]:
    return {str(c.get("kv_connector")) for c in connectors(kv_transfer_config(container))} & HANDOFFS


def pd_engines(resources: list[Resource]) -> list[tuple[Pod, Props]]:
    """(pod, container) of every engine that runs a P/D handoff."""
    return [(pod, c) for pod in pods(resources) for c in pod.containers(init=False) if _handoffs(c)]


def pd_block_size(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """The router hashes prompts in `blockSizeTokens`; a P/D engine in `--block-size`: unequal, the router's
    prefix index names blocks no engine holds (the multi-tier guide: "The same vLLM `--block-size` and router
    `tokenProcessorConfig.blockSizeTokens`")."""
    out = []
    for chart in router_charts(resources):
        values = chart_values(chart)
        selector = ((values["router"].get("modelServers") or {}).get("matchLabels")) or {}
        producers = [
            p
            for p in endpoint_picker_config(values).get("plugins") or []
            if p.get("type") == "approx-prefix-cache-producer"
        ]
        for pod, container in pd_engines(resources):
            if not selects(selector, pod.labels):
                continue
            engine = flag(args(container), "--block-size")
            for producer in producers:
                router = (producer.get("parameters") or {}).get("blockSizeTokens")
                if engine is None or router is None or str(router) != engine:
                    out.append(
                        Violation(
                            pod.owner,
                            f"{pod.owner.name} runs --block-size {engine or 'unset (the engine default)'} while the"
                            f" router's {producer.get('name') or producer.get('type')} hashes blockSizeTokens"
                            f" {router or 'unset (its default)'}: set both to one value",
                        )
                    )
    return out


def pd_hash_seed(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Every P/D engine sets PYTHONHASHSEED, all to one value: prefix hashes must agree across prefill, decode and
    the router's view of them."""
    seeds: dict[str, list[str]] = {}
    out = []
    for pod, container in pd_engines(resources):
        value = (env(container).get("PYTHONHASHSEED") or {}).get("value")
        if value is None:
            out.append(Violation(pod.owner, f"{pod.owner.name} runs a P/D handoff without PYTHONHASHSEED"))
        else:
            seeds.setdefault(str(value), []).append(pod.owner.name)
    if len(seeds) > 1:
        said = "; ".join(f"{seed}: {', '.join(sorted(set(names)))}" for seed, names in sorted(seeds.items()))
        first = next(pod for pod, _c in pd_engines(resources))
        out.append(Violation(first.owner, f"P/D engines hash with different PYTHONHASHSEEDs ({said}): use one"))
    return out


def pd_rank_ports(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Each local engine listens for NIXL handshakes on VLLM_NIXL_SIDE_CHANNEL_PORT + its local data-parallel index:
    the container declares every one of them (the NetworkPolicy admits what it declares), and no two ports clash."""
    out = []
    for pod, container in pd_engines(resources):
        base_text = str((env(container).get("VLLM_NIXL_SIDE_CHANNEL_PORT") or {}).get("value", NIXL_SIDE_CHANNEL_PORT))
        base = int(base_text) if base_text.isdigit() else NIXL_SIDE_CHANNEL_PORT
        engines = local_engines(container)
        wanted = set(range(base, base + engines))
        declared = [int(p.get("containerPort", 0)) for p in container.get("ports") or []]
        missing = sorted(wanted - set(declared))
        if missing:
            out.append(
                Violation(
                    pod.owner,
                    f"{pod.owner.name} runs {engines} engines whose NIXL handshakes listen on {min(wanted)}-"
                    f"{max(wanted)} but declares no port {missing}",
                )
            )
        if len(declared) != len(set(declared)):
            out.append(Violation(pod.owner, f"{pod.owner.name} declares a port twice: {sorted(declared)}"))
    return out


def pd_handoff_both_sides(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Where any engine runs a P/D handoff, every prefill and decode engine runs the same one, and both roles
    exist: a prefill pod without it cannot send its KV, a decode pod without it recomputes every prompt."""
    engines = pd_engines(resources)
    if not engines:
        return []
    used = set().union(*(_handoffs(c) for _p, c in engines))
    out = []
    roles = set()
    for pod in pods(resources):
        role = pod.labels.get(ROLE_LABEL)
        if role not in PD_ROLES:
            continue
        for container in pod.containers(init=False):
            if kv_transfer_config(container) is None:
                continue
            roles.add(role)
            runs = _handoffs(container)
            if runs != used:
                out.append(
                    Violation(
                        pod.owner,
                        f"{pod.owner.name} ({role}) runs {sorted(runs) or 'no handoff'} where the other P/D engines"
                        f" run {sorted(used)}: the handoff must run on both sides",
                    )
                )
    for role in PD_ROLES:
        if role not in roles:
            out.append(Violation(engines[0][0].owner, f"P/D engines run {sorted(used)} but no {role} pod does"))
    return out
