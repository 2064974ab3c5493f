"""What a P/D model-server pod adds, whichever connector moves its KV: the decode pod's routing sidecar in front
of the engine, the NIXL side channel's env and one handshake port per local engine."""

from __future__ import annotations

from components.catalog import labels
from components.catalog.kv_transport import NIXL_SIDE_CHANNEL_PORT
from components.manifest import Container, Manifest
from components.specs.servers.base import ServerSpec, env_var, field_env

VLLM_BEHIND_SIDECAR_PORT = 8200  # P/D decode: the routing sidecar takes :8000 and forwards here
# The sidecar keeps idle connections for 90 s; a shorter vLLM keep-alive resets them.
KEEP_ALIVE_SECONDS = "120"


def behind_sidecar(spec: ServerSpec) -> bool:
    return spec.disaggregated and spec.role == "decode"


def engine_port(spec: ServerSpec) -> int:
    """Where vLLM's API listens: behind the sidecar on a decode pod, else the model-server port."""
    return VLLM_BEHIND_SIDECAR_PORT if behind_sidecar(spec) else labels.MODEL_SERVER_PORT


def engine_port_name(spec: ServerSpec) -> str:
    return "vllm" if behind_sidecar(spec) else labels.MODEL_SERVER_PORT_NAME


def nixl_ports(ranks: int) -> list[Manifest]:
    """One NIXL handshake port per local engine: vLLM listens on the side-channel port + its local DP index."""
    return [
        {"name": "nixl" if i == 0 else f"nixl-{i}", "containerPort": NIXL_SIDE_CHANNEL_PORT + i, "protocol": "TCP"}
        for i in range(ranks)
    ]


def nixl_env() -> list[Manifest]:
    """NIXL's side channel on the pod's own address; a keep-alive longer than the sidecar's idle timeout."""
    return [
        field_env("VLLM_NIXL_SIDE_CHANNEL_HOST", "status.podIP"),
        env_var("VLLM_HTTP_TIMEOUT_KEEP_ALIVE", KEEP_ALIVE_SECONDS),
    ]


def routing_sidecar(spec: ServerSpec, kv_connector: str) -> Container:
    """The router's P/D sidecar as a native sidecar (an init container that runs for the life of the pod)."""
    return {
        "name": "routing-proxy",
        "image": str(spec.sidecar_image),
        "restartPolicy": "Always",
        "args": [
            f"--port={labels.MODEL_SERVER_PORT}",
            f"--model-server-port={VLLM_BEHIND_SIDECAR_PORT}",
            f"--kv-connector={kv_connector}",
            "--secure-serving=false",
        ],
        "ports": [{"name": "sidecar", "containerPort": labels.MODEL_SERVER_PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
    }
