"""KV-cache events, the records precise prefix routing is built on (llm-d/llm-d `guides/precise-prefix-cache-routing`).

Each engine publishes what its tiers store and evict over ZMQ; the router's `precise-prefix-cache-producer` dials
every pod it routes to and indexes what each holds. Two records: what a connector's engine publishes for each
tier (`TierEvents`, read from the engines' sources at their pinned versions and kept in each connector's module),
and what one model server is rendered to publish (`Publisher`, on the `ServerSpec`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from components.catalog import labels

Tier = Literal["hbm", "cpu", "fs"]
TIER_NAMES: dict[Tier, str] = {"hbm": "HBM", "cpu": "CPU", "fs": "filesystem"}


@dataclass(frozen=True)
class TierEvents:
    """What an engine tells a subscriber about one tier: the medium its events carry, whether it reports stores
    and evictions, and whether an event names the pod that holds the blocks (a pooled tier that any pod loads
    from is reported by the pod that stored, not by the pods that can load). `source`: where it was read."""

    tier: Tier
    medium: str | None  # the `medium` field of its BlockStored / BlockRemoved events (None: no events)
    stores: bool
    evictions: bool
    source: str
    pooled: bool = False

    def lacks(self) -> str | None:
        """What keeps a router from knowing this tier's contents, in a phrase; None: nothing."""
        if not self.stores and not self.evictions:
            return "publishes no KV events"
        if not self.evictions:
            return "publishes its stores but not its evictions (the router would keep scoring blocks that are gone)"
        if not self.stores:
            return "publishes its evictions but not its stores"
        if self.pooled:
            return "is one pool every pod loads from, but its events name only the pod that stored a block"
        return None


def refusal(connector: str, tiers: tuple[TierEvents, ...]) -> str | None:
    """The one line that refuses precise routing for a connector whose engine leaves a tier unreported."""
    if not tiers:
        return (
            f"cache.connector {connector}: what its engine publishes about its tiers is not recorded;"
            " keep router.prefix_routing approximate"
        )
    for tier in tiers:
        lacking = tier.lacks()
        if lacking is not None:
            return (
                f"cache.connector {connector}: its {TIER_NAMES[tier.tier]} tier {lacking} ({tier.source});"
                " precise routing needs every tier's stores and evictions: keep router.prefix_routing approximate"
            )
    return None


@dataclass(frozen=True)
class MediumWeight:
    """How much a block held on one medium counts in the precise score, relative to HBM's 1, and why."""

    medium: str  # lower-cased, as the router keys its weights (llm-d-router `kvevents/pool.go` normalizeDeviceTier)
    weight: float
    formula: str


@dataclass(frozen=True)
class PreciseIndex:
    """What the router's precise-prefix-cache-producer is configured with: the same block size and hash seed as the
    engines, the port it dials on each pod, the engines' event format and each medium's weight."""

    block_tokens: int
    hash_seed: str
    port: int
    engine: str  # `kvEventsConfig.engineType`: vllm or sglang (the connector's engine)
    weights: tuple[MediumWeight, ...]


@dataclass(frozen=True)
class Publisher:
    """What one model server publishes for the router's precise index; the plan fills it from the stack, so the
    engines and the router read the same block size, hash seed and port."""

    block_tokens: int  # the engine's KV block (vLLM `--block-size`, SGLang `--page-size`) = the router's
    hash_seed: str  # PYTHONHASHSEED on every engine = the router's `hashSeed`
    model: str  # the served model, the topic's last part
    port: int = labels.KV_EVENTS_PORT  # rank 0's; rank r publishes on port + r
    ranks: int = 1  # data-parallel ranks in the pod, one publisher each

    @property
    def ports(self) -> list[int]:
        return [self.port + rank for rank in range(self.ranks)]

    @property
    def topic(self) -> str:
        """`kv@<pod ip>:<serving port>@<model>`: the pod by its inference endpoint, as the guide writes it (the
        kubelet expands `$(POD_IP)` from the container's env)."""
        return f"{labels.KV_EVENTS_TOPIC_PREFIX}$(POD_IP):{labels.MODEL_SERVER_PORT}@{self.model}"

    @property
    def endpoint(self) -> str:
        """Bound in the pod, so every endpoint picker dials each pod (the guide's pod-discovery mode)."""
        return f"tcp://*:{self.port}"

    def vllm_args(self, args: list[str]) -> list[str]:
        """vLLM's: its block size (where the layout does not write it) and the publisher."""
        written = any(a == "--block-size" or a.startswith("--block-size=") for a in args)
        block = [] if written else [f"--block-size={self.block_tokens}"]
        return [*block, "--kv-events-config", self.vllm_config()]

    def vllm_config(self) -> str:
        """vLLM's `--kv-events-config` (`KVEventsConfig`)."""
        config = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": self.endpoint, "topic": self.topic}
        return json.dumps(config, separators=(",", ":"))

    def sglang_config(self) -> str:
        """SGLang's `--kv-events-config`: no `enable_kv_cache_events` (the guide's SGLang overlay: its presence
        turns the config into vLLM's shape)."""
        config = {"publisher": "zmq", "endpoint": self.endpoint, "topic": self.topic}
        return json.dumps(config, separators=(",", ":"))

    def container_ports(self) -> list[dict[str, Any]]:
        """One port per rank: rank 0's named `kv-events`, the others after their rank."""
        return [
            {
                "name": labels.KV_EVENTS_PORT_NAME if rank == 0 else f"{labels.KV_EVENTS_PORT_NAME}-{rank}",
                "containerPort": port,
                "protocol": "TCP",
            }
            for rank, port in enumerate(self.ports)
        ]
