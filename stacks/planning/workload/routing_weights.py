"""The router the capacity plan replays is the one the chart gets: its scorers and weights, read from the rendered
router values (components/specs/router_values.py), not assumed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from components.catalog import labels
from components.catalog.labels import CPU_PRODUCER
from components.formulas.replica_routing import Weights

# The scorer types the replay models, by the field of `Weights` each sets.
MODELLED = {
    "queue-scorer": "queue",
    "kv-cache-utilization-scorer": "kv_utilization",
    "no-hit-lru-scorer": "no_hit_lru",
}
PREFIX_SCORER = "prefix-cache-scorer"
UNLISTED_MEDIUM_WEIGHT = 1.0
ROUTED_PROFILES = ("default", "decode")  # the profile a request's replica is picked in (P/D: its decode pod)


@dataclass(frozen=True)
class Routing:
    weights: Weights
    source: str  # where the weights came from, for the summary
    unmodelled: tuple[str, ...]  # scorers in the profile the replay leaves out
    # `router.prefix_routing: precise`, as rendered: the prefix scorer (its weight as `hbm_prefix`) reads the precise
    # producer's index, what each pod's KV-cache events say its tiers hold, with each medium's weight from the
    # producer's `indexerConfig.backendConfigs`. None: approximate, the router's own LRUs.
    media: tuple[tuple[str, float], ...] | None = None

    @property
    def precise(self) -> bool:
        return self.media is not None

    def medium_weight(self, medium: str | None) -> float | None:
        """What a block held on `medium` counts in the precise score; a medium the producer lists no weight for
        counts 1 (llm-d-kv-cache `kvblock_scorer.go` getMaxWeight). None: a tier with no events (`medium` None),
        which the index never holds."""
        if medium is None:
            return None
        return dict(self.media or ()).get(medium, UNLISTED_MEDIUM_WEIGHT)


def picker_config(values: dict[str, Any]) -> dict[str, Any] | None:
    """The EndpointPickerConfig the chart gets (None: the chart's own default plugins)."""
    epp = values["router"]["epp"]
    if "pluginsConfig" in epp:
        config: dict[str, Any] = epp["pluginsConfig"]
        return config
    if "pluginsCustomConfig" in epp:
        loaded: dict[str, Any] = yaml.safe_load(next(iter(epp["pluginsCustomConfig"].values())))
        return loaded
    return None


def routing_of(values: dict[str, Any], profile: str | None = None) -> Routing:
    """The weights of `profile` (default: the profile a request's serving replica is picked in)."""
    picker = picker_config(values)
    if picker is None:
        return Routing(Weights(), "the chart's default plugins (not in the values): every scorer at weight 1", ())
    plugins = {p.get("name", p["type"]): p for p in picker["plugins"]}
    profiles = {p["name"]: p for p in picker["schedulingProfiles"]}
    name = profile or next((n for n in ROUTED_PROFILES if n in profiles), next(iter(profiles)))
    weights = {"queue": 0.0, "kv_utilization": 0.0, "hbm_prefix": 0.0, "cpu_prefix": 0.0, "no_hit_lru": 0.0}
    unmodelled: list[str] = []
    media: tuple[tuple[str, float], ...] | None = None
    for ref in profiles[name]["plugins"]:
        plugin = plugins.get(ref["pluginRef"], {"type": ref["pluginRef"]})
        weight = float(ref.get("weight", 1))
        kind = plugin["type"]
        if kind == PREFIX_SCORER:
            producer = plugin.get("parameters", {}).get("prefixMatchInfoProducerName")
            weights["cpu_prefix" if producer == CPU_PRODUCER else "hbm_prefix"] += weight
            if producer == labels.PRECISE_PRODUCER:
                media = precise_media(plugins.get(producer, {}))
        elif kind in MODELLED:
            weights[MODELLED[kind]] += weight
        elif not kind.endswith(("-filter", "-picker")):
            unmodelled.append(kind)
    shown = ", ".join(f"{k} {v:g}" for k, v in weights.items())
    source = f"the EPP's scheduling profile `{name}` as rendered (weights: {shown})"
    if media is not None:
        source += "; its prefix scorer on the precise index (" + ", ".join(f"{m} {w:g}" for m, w in media) + ")"
    return Routing(Weights(**weights), source, tuple(unmodelled), media)


def precise_media(producer: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    """The precise producer's medium weights as rendered (its `indexerConfig.backendConfigs`)."""
    configs = producer.get("parameters", {}).get("indexerConfig", {}).get("backendConfigs", [])
    return tuple((str(c["name"]), float(c["weight"])) for c in configs)
