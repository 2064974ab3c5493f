"""The least CPU and memory the router's two containers can be given, each from a source.

Envoy: Istio injects the same Envoy as a sidecar and requests `cpu: 100m, memory: 128Mi` for it by default
(istio/istio `manifests/charts/istio-control/istio-discovery/values.yaml`, `global.proxy.resources.requests`);
a proxy given less is below what the mesh that ships Envoy at the largest scale starts it with.

The EPP: the same base (a Go process beside its informers), plus its prefix index, which grows with
`lruCapacityPerServer` x the endpoints it tracks at about 60-70 bytes an entry (llm-d/llm-d-router#1158,
"EPP memory blow-up from small block sizes"); the upper figure is taken.
"""

from __future__ import annotations

from components.units import ByteSize, MiB

MIN_MILLICORES = 100
BASE_MEMORY = ByteSize(128 * MiB)
INDEX_ENTRY_BYTES = 70
FLOOR_FROM = {
    "proxy_resources": "Istio's default request for the same Envoy as a sidecar (cpu 100m, memory 128Mi)",
    "epp_resources": "the EPP's base, a Go process's, held to the Envoy sidecar's (cpu 100m, memory 128Mi)",
}
INDEX_FROM = "llm-d/llm-d-router#1158"


def epp_memory_floor(lru_capacity_per_server: int, endpoints: int) -> ByteSize:
    return BASE_MEMORY + ByteSize(lru_capacity_per_server * endpoints * INDEX_ENTRY_BYTES)
