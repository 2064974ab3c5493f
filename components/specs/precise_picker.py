"""The EndpointPickerConfig pieces precise prefix routing and token-aware scaling add to the router's values
(components/specs/router_values.py lays them into the chart's values)."""

from __future__ import annotations

import copy
from typing import Any

from components.catalog import labels
from components.specs.kv_events import PreciseIndex

Values = dict[str, Any]

METRICS_SOURCE = {
    "type": "metrics-data-source",
    "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
}
TOKENIZER_PORT = 8000  # the tokenizer sidecar's loopback port in the EPP pod


def token_producer(model_name: str) -> dict[str, Any]:
    """The EPP's tokenizing plugin: prompts tokenized by the chart's tokenizer sidecar, for token-block scoring."""
    return {
        "type": "token-producer",
        "parameters": {
            "modelName": model_name,
            "vllm": {"url": f"http://localhost:{TOKENIZER_PORT}", "timeout": "10s"},
        },
    }


def precise_config(api_version: str, model_name: str, index: PreciseIndex) -> Values:
    """llm-d's precise prefix-cache routing (`guides/precise-prefix-cache-routing` router values, llm-d-router
    `deploy/config/epp-precise-prefix-cache-config.yaml`): the tokenizer sidecar tokenizes the prompt, the
    precise-prefix-cache-producer hashes it as the engines do and looks the blocks up in the index it keeps from
    every pod's KV-cache events (each endpoint the EPP discovers is dialled on the event port: pod discovery), and
    the prefix-cache-scorer reads it at the guide's 2:1:1 beside KV utilization and queue depth."""
    producer = {
        "type": labels.PRECISE_PRODUCER,
        "parameters": {
            "tokenProcessorConfig": {"blockSizeTokens": index.block_tokens, "hashSeed": index.hash_seed},
            "indexerConfig": {
                "kvBlockIndexConfig": {"enableMetrics": True},
                "backendConfigs": [{"name": w.medium, "weight": w.weight} for w in index.weights],
            },
            "kvEventsConfig": {
                "engineType": index.engine,
                "topicFilter": labels.KV_EVENTS_TOPIC_PREFIX,
                "discoverPods": True,
                "podDiscoveryConfig": {"socketPort": index.port},
            },
        },
    }
    return {
        "apiVersion": api_version,
        "kind": "EndpointPickerConfig",
        "plugins": [
            token_producer(model_name),
            {"type": "endpoint-notification-source"},
            METRICS_SOURCE,
            {"type": "core-metrics-extractor"},
            producer,
            {"type": "prefix-cache-scorer", "parameters": {"prefixMatchInfoProducerName": labels.PRECISE_PRODUCER}},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "queue-scorer"},
        ],
        "dataLayer": {
            "sources": [
                {"pluginRef": "metrics-data-source", "extractors": [{"pluginRef": "core-metrics-extractor"}]},
                {"pluginRef": "endpoint-notification-source", "extractors": [{"pluginRef": labels.PRECISE_PRODUCER}]},
            ]
        },
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "prefix-cache-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 1},
                    {"pluginRef": "queue-scorer", "weight": 1},
                ],
            }
        ],
    }


def with_token_awareness(picker_config: Values, peak_prefill_rate: int, producer: str | None) -> Values:
    """The token-aware variant's two plugins (llm-d `keda-epp-token-aware` prerequisites): the
    inflight-load-producer (publishes `llm_d_epp_inflight_tokens`, what KEDA divides by the rate) and the
    prefix-cache-affinity-filter (keeps a request on its cache-warm pods unless the wait there, its in-flight tokens
    over `peakPrefillThroughput`, costs more than recomputing elsewhere), first in the default profile. `producer`:
    the prefix-cache producer whose matches both read (None: the chart's approximate one, their default)."""
    if peak_prefill_rate <= 0:
        raise ValueError(f"a peak prefill rate is a positive number of tokens per second, not {peak_prefill_rate}")
    out = copy.deepcopy(picker_config)
    matched = {"prefixMatchInfoProducerName": producer} if producer else {}
    out["plugins"] = [
        *out["plugins"],
        {"type": labels.INFLIGHT_PRODUCER, **({"parameters": dict(matched)} if matched else {})},
        {"type": labels.AFFINITY_FILTER, "parameters": {**matched, "peakPrefillThroughput": peak_prefill_rate}},
    ]
    profiles = [p for p in out["schedulingProfiles"] if p["name"] == "default"]
    if not profiles:
        raise ValueError("the router's plugin config has no default scheduling profile to filter in")
    profiles[0]["plugins"] = [{"pluginRef": labels.AFFINITY_FILTER}, *profiles[0]["plugins"]]
    return out
