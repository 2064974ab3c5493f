"""The router's P/D scheduling profiles (components/specs/router_values.py picks them by profile): `pd`, every
request to a prefill pod and a decode pod chosen by queue; `pd-tiered`, the prefill pod chosen by both tiers' prefix
hits too (llm-d pd-disaggregation and its multi-tier guide)."""

from __future__ import annotations

from typing import Any

from components.catalog.labels import CPU_PRODUCER, CPU_SCORER, GPU_PRODUCER, GPU_SCORER
from components.specs.precise_picker import METRICS_SOURCE

Values = dict[str, Any]
# Every P/D profile's plugins: each request disaggregated, its prefill and decode pods told apart by their role.
DISAGGREGATION: tuple[Values, ...] = (
    {"type": "always-disagg-pd-decider"},
    {"type": "disagg-profile-handler", "parameters": {"deciders": {"prefill": "always-disagg-pd-decider"}}},
    {"type": "prefill-filter"},
    {"type": "decode-filter"},
)


def queue_chosen(role: str) -> list[Values]:
    """A profile that picks the role's pod by its queue alone."""
    return [{"pluginRef": f"{role}-filter"}, {"pluginRef": "queue-scorer"}, {"pluginRef": "max-score-picker"}]


def pd_config(api_version: str) -> Values:
    """Every request disaggregated: a prefill pod and a decode pod, chosen by their `llm-d.ai/role`."""
    return {
        "apiVersion": api_version,
        "kind": "EndpointPickerConfig",
        "plugins": [
            *DISAGGREGATION,
            {"type": "queue-scorer"},
            {"type": "max-score-picker"},
            METRICS_SOURCE,
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [{"name": role, "plugins": queue_chosen(role)} for role in ("prefill", "decode")],
    }


def prefill_prefix_plugins(cpu_lru_capacity_per_server: int, block_tokens: int) -> tuple[list[Values], list[Values]]:
    """The prefill profile's prefix scoring, both tiers (approximate: the router's own index of where it sent each
    prefix, in the engines' blocks; the CPU index sized to the prefill pod's tier, engines x `cpu_bytes_to_use`).
    The producers and the scorers' references: where precise KV-event routing lands (`router.prefix_routing:
    precise`), it replaces these two lists."""
    block = {"blockSizeTokens": block_tokens}
    producers: list[Values] = [
        {"type": "approx-prefix-cache-producer", "name": GPU_PRODUCER, "parameters": {**block}},
        {
            "type": "approx-prefix-cache-producer",
            "name": CPU_PRODUCER,
            "parameters": {**block, "autoTune": False, "lruCapacityPerServer": cpu_lru_capacity_per_server},
        },
        {
            "type": "prefix-cache-scorer",
            "name": GPU_SCORER,
            "parameters": {"prefixMatchInfoProducerName": GPU_PRODUCER},
        },
        {
            "type": "prefix-cache-scorer",
            "name": CPU_SCORER,
            "parameters": {"prefixMatchInfoProducerName": CPU_PRODUCER},
        },
    ]
    return producers, [{"pluginRef": GPU_SCORER}, {"pluginRef": CPU_SCORER}]


def pd_tiered_config(api_version: str, cpu_lru_capacity_per_server: int, block_tokens: int) -> Values:
    """P/D with the tier on the prefill pods: every request disaggregated; the prefill pod chosen by queue, KV
    utilisation and both tiers' prefix hits, the decode pod by queue (llm-d pd-disaggregation multi-tier guide)."""
    producers, prefix_refs = prefill_prefix_plugins(cpu_lru_capacity_per_server, block_tokens)
    return {
        "apiVersion": api_version,
        "kind": "EndpointPickerConfig",
        "plugins": [
            *DISAGGREGATION,
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            *producers,
            {"type": "max-score-picker"},
            METRICS_SOURCE,
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {
                "name": "prefill",
                "plugins": [
                    {"pluginRef": "prefill-filter"},
                    {"pluginRef": "queue-scorer"},
                    {"pluginRef": "kv-cache-utilization-scorer"},
                    *prefix_refs,
                    {"pluginRef": "max-score-picker"},
                ],
            },
            {"name": "decode", "plugins": queue_chosen("decode")},
        ],
    }
