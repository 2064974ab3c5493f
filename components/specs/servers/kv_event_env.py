"""What a model server that publishes its KV-cache events adds to its container (precise prefix routing): the pod's
IP for the topic, the stack's hash seed, and one port per rank. The flags are its family's (`Publisher`)."""

from __future__ import annotations

from components.catalog import labels
from components.manifest import Container, Manifest
from components.specs.servers.base import ServerSpec, env_var, field_env


def kv_events_env(spec: ServerSpec, env: list[Manifest]) -> list[Manifest]:
    """What the event publisher needs besides its flag: the pod's IP for its topic, and the stack's hash seed
    (unless the connector's env sets one already; a different one is the plan's error)."""
    if spec.publisher is None:
        return []
    names = {e["name"] for e in env}
    out = [] if "POD_IP" in names else [field_env("POD_IP", "status.podIP")]
    if labels.HASH_SEED_ENV not in names:
        out.append(env_var(labels.HASH_SEED_ENV, spec.publisher.hash_seed))
    return out


def with_kv_event_ports(spec: ServerSpec, container: Container) -> None:
    """The publisher's ports (one per rank) beside the serving port."""
    if spec.publisher is not None:
        container["ports"] = [*container["ports"], *spec.publisher.container_ports()]
