"""The LMCache server (one per GPU node) and the connector configs its clients use, from one source.

The server's flags and the `lmcache.mp.*` settings of every client are built from the same
`LMCacheServerSettings` (the config's `lmcache` section as one record, `LMCacheSettings`, with where the
server runs and its L1), so `lmcache.mp.isolated_ipc` always agrees with `--isolated-ipc`, the host
is the Service's in-cluster name, and server and clients share one image tag.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from components.catalog import labels, versions
from components.manifest import Manifest
from components.specs import security
from components.specs.workload_type import WorkloadType
from components.units import ByteSize, GiB

SERVER_WORKLOAD = WorkloadType("llmd:lmcache_server:LMCacheServer", "lmcache-server")

NAME = "lmcache-engine"  # DaemonSet, Service; the ConfigMap is `<NAME>-connection`
CONNECTION_CONFIG_MAP = f"{NAME}-connection"
MP_CONNECTOR_CLASS = "LMCacheMPConnector"  # vLLM's connector to the server (its kv-transfer config names it)
SERVER_PORT, HTTP_PORT, METRICS_PORT = 5555, 8080, 9090
REUSE_KEY = "kv-transfer-config.json"
PREFILLER_KEY = "kv-transfer-config-prefiller.json"
DECODER_KEY = "kv-transfer-config-decoder.json"
LABELS = {"app.kubernetes.io/name": "lmcache", "app.kubernetes.io/instance": NAME}
SERVER_OVERHEAD = ByteSize(5 * GiB)  # the server process beside its L1 pool: request = L1 + overhead
SERVER_LIMIT_FACTOR = (3, 2)  # limit = request x 3/2: room for transfer buffers under eviction pressure


@dataclass(frozen=True)
class LMCacheSettings:
    """The config's `lmcache` section, as the LMCache connectors and the server read it (one record)."""

    version: str
    mode: str
    test_mode: bool
    chunk_size: int
    hash_algorithm: str
    isolated_ipc: bool
    eviction_policy: str
    eviction_trigger_watermark: float
    eviction_ratio: float
    max_workers: int
    privileged: bool


@dataclass(frozen=True)
class LMCacheServerSettings:
    """The server as deployed: the stack's settings, its namespace and its L1 (`cache.tier.cpu`)."""

    lmcache: LMCacheSettings
    namespace: str
    l1_size: ByteSize

    @property
    def image(self) -> str:
        return versions.lmcache_image(self.lmcache.version)

    @property
    def host(self) -> str:
        return f"tcp://{NAME}.{self.namespace}.svc.cluster.local"

    @property
    def memory_request(self) -> ByteSize:
        return server_memory(self.l1_size)[0]

    @property
    def memory_limit(self) -> ByteSize:
        return server_memory(self.l1_size)[1]


def server_memory(l1_size: ByteSize) -> tuple[ByteSize, ByteSize]:
    """Request: the L1 pool plus the server process; limit: half again the request, room for the
    server's transfer buffers under eviction pressure."""
    request = (l1_size + SERVER_OVERHEAD).ceil_to(GiB)
    numerator, denominator = SERVER_LIMIT_FACTOR
    return request, ByteSize(request.bytes * numerator // denominator).ceil_to(GiB)


def server_memory_formula() -> str:
    """How `server_memory` sizes the server, for the summary's derivations."""
    numerator, denominator = SERVER_LIMIT_FACTOR
    return f"L1 + {SERVER_OVERHEAD.human()}; limit {numerator / denominator:g} x request"


def mp_connector(settings: LMCacheServerSettings) -> Manifest:
    return {
        "kv_connector": MP_CONNECTOR_CLASS,
        "kv_connector_module_path": "lmcache.integration.vllm.lmcache_mp_connector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {
            "lmcache.mp.host": settings.host,
            "lmcache.mp.port": SERVER_PORT,
            "lmcache.mp.isolated_ipc": settings.lmcache.isolated_ipc,
        },
    }


def pd_connector(settings: LMCacheServerSettings, role: str) -> Manifest:
    """NIXL moves the prefill's KV to the decode pod; LMCache stores and reuses prefixes behind it."""
    kv_role = "kv_producer" if role == "prefill" else "kv_consumer"
    nixl = {"kv_connector": "NixlConnector", "kv_role": kv_role, "kv_load_failure_policy": "fail"}
    return {
        "kv_connector": "MultiConnector",
        "kv_role": kv_role,
        "kv_connector_extra_config": {"connectors": [nixl, mp_connector(settings)]},
    }


def _json(config: Manifest) -> str:
    return json.dumps(config, separators=(",", ":")) + "\n"


def server_args(settings: LMCacheServerSettings) -> list[str]:
    args = [
        "--host=0.0.0.0",
        f"--port={SERVER_PORT}",
        f"--http-port={HTTP_PORT}",
        f"--l1-size-gb={settings.l1_size.bytes / GiB:g}",
        f"--chunk-size={settings.lmcache.chunk_size}",
        f"--max-workers={settings.lmcache.max_workers}",
        f"--hash-algorithm={settings.lmcache.hash_algorithm}",
    ]
    if settings.lmcache.isolated_ipc:
        args.append("--isolated-ipc")  # KV over driver-level CUDA IPC; no hostIPC
    return [
        *args,
        f"--eviction-policy={settings.lmcache.eviction_policy}",
        f"--eviction-trigger-watermark={_fraction(settings.lmcache.eviction_trigger_watermark)}",
        f"--eviction-ratio={_fraction(settings.lmcache.eviction_ratio)}",
        f"--prometheus-port={METRICS_PORT}",
    ]


def _fraction(value: float) -> str:
    """Two decimals as the guide writes them (0.80), more where the value has more (0.001): never rounded."""
    text = f"{value:.2f}"
    return text if float(text) == value else repr(value)


def _server_container(settings: LMCacheServerSettings) -> Manifest:
    container: Manifest = {
        "name": security.LMCACHE_SERVER_CONTAINER,
        "image": settings.image,
        "command": ["/opt/venv/bin/lmcache", "server"],
        "args": server_args(settings),
        # The server opens vLLM's KV cache through CUDA IPC: it sees every GPU of its node and requests none.
        "env": [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"},
        ],
        "ports": [
            {"name": "server", "containerPort": SERVER_PORT, "protocol": "TCP"},
            {"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        "startupProbe": {"tcpSocket": {"port": SERVER_PORT}, "periodSeconds": 10, "failureThreshold": 30},
        "resources": {
            "requests": {"cpu": "2", "memory": settings.memory_request.quantity()},
            "limits": {"memory": settings.memory_limit.quantity()},
        },
    }
    if settings.lmcache.privileged:  # where `nvidia-smi -L` fails in the pod (NVML cannot see the devices)
        container["securityContext"] = {"privileged": True}
    return container


def server_manifests(settings: LMCacheServerSettings) -> list[Manifest]:
    meta = {"name": NAME, "namespace": settings.namespace, "labels": LABELS}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta, "name": CONNECTION_CONFIG_MAP},
            "data": {
                REUSE_KEY: _json(mp_connector(settings)),
                PREFILLER_KEY: _json(pd_connector(settings, "prefill")),
                DECODER_KEY: _json(pd_connector(settings, "decode")),
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "selector": LABELS,
                "internalTrafficPolicy": "Local",  # each vLLM pod reaches the server on its own node
                "ports": [
                    {"name": "server", "port": SERVER_PORT, "protocol": "TCP"},
                    {"name": "http", "port": HTTP_PORT, "protocol": "TCP"},
                ],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            # The L1 each server holds (the CPU tier of the node's pods), as the model servers' workloads say
            # theirs: the policy rule `memory-limit-covers-tier` reads it.
            "metadata": {**meta, "annotations": {labels.CPU_TIER_BYTES_ANNOTATION: str(settings.l1_size.bytes)}},
            "spec": {
                "selector": {"matchLabels": LABELS},
                "template": {
                    "metadata": {"labels": LABELS},
                    "spec": {
                        "runtimeClassName": "nvidia",
                        "nodeSelector": {"nvidia.com/gpu.present": "true"},  # GPU nodes only
                        "containers": [_server_container(settings)],
                    },
                },
            },
        },
    ]
