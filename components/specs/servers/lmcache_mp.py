"""vLLM pods that use the node's LMCache server (LMCacheMPConnector): prefix reuse, and P/D disaggregation."""

from __future__ import annotations

from components.manifest import Container, Manifest, PodSpec
from components.specs import lmcache, model_cache
from components.specs.servers.base import (
    ServerSpec,
    deployment,
    memory_volume,
    model_cache_volumes,
    model_load_args,
    service_account,
)
from components.specs.servers.pd import (
    behind_sidecar,
    engine_port,
    engine_port_name,
    nixl_env,
    nixl_ports,
    routing_sidecar,
)
from components.specs.servers.shutdown import drained, vllm_drain_args

# vLLM unregisters its KV cache from the LMCache server before it stops.
GRACE_SECONDS = 120
READINESS = {"initialDelaySeconds": 60, "periodSeconds": 15, "failureThreshold": 60}


def _env(spec: ServerSpec, key: str) -> list[Manifest]:
    env: list[Manifest] = [
        {"name": "PYTHONHASHSEED", "value": "0"},  # one token hash in every process
        {
            "name": "LMCACHE_KV_CONFIG",
            "valueFrom": {"configMapKeyRef": {"name": lmcache.CONNECTION_CONFIG_MAP, "key": key}},
        },
    ]
    if spec.model_cache is not None:
        env += model_cache.server_env(spec.model_cache, "vllm")
    if spec.disaggregated:
        env += nixl_env()
    return env


def lmcache_mp_args(spec: ServerSpec) -> list[str]:
    """`--no-enable-prefix-caching` only in test mode: it sends a repeated prompt to LMCache so the
    server log shows the retrieve; production keeps both cache layers."""
    args = [*model_load_args(spec), f"--port={engine_port(spec)}"]
    if spec.test_mode and (spec.role == "prefill" or not spec.disaggregated):
        args.append("--no-enable-prefix-caching")
    if behind_sidecar(spec):
        args.append("--enable-prompt-tokens-details")  # responses show cached_tokens
    if spec.disaggregated:
        args.append("--disable-hybrid-kv-cache-manager")  # needed by LMCacheMPConnector beside NIXL
    if spec.tensor_parallelism > 1:
        args.append(f"--tensor-parallel-size={spec.tensor_parallelism}")
    return [*args, "--kv-transfer-config", "$(LMCACHE_KV_CONFIG)", *vllm_drain_args(spec)]


def _config_key(spec: ServerSpec) -> str:
    if not spec.disaggregated:
        return lmcache.REUSE_KEY
    return lmcache.PREFILLER_KEY if spec.role == "prefill" else lmcache.DECODER_KEY


def lmcache_mp_manifests(spec: ServerSpec) -> list[Manifest]:
    vllm_port = engine_port(spec)
    ports: list[Manifest] = [{"name": engine_port_name(spec), "containerPort": vllm_port, "protocol": "TCP"}]
    if spec.disaggregated:
        ports += nixl_ports(1)
    memory = spec.sizing.pod_memory.quantity()
    devices = {str(spec.accelerator.device_resource): spec.devices}
    shm = spec.sizing.shm_size_limit
    volumes = [memory_volume("shm", shm.quantity() if shm else None)]
    cache_volumes, cache_mounts = model_cache_volumes(spec, volumes)
    container: Container = {
        "name": "modelserver",
        "image": spec.image,
        "command": ["vllm", "serve"],
        "args": lmcache_mp_args(spec),
        "env": _env(spec, _config_key(spec)),
        "ports": ports,
        "readinessProbe": {"httpGet": {"path": "/health", "port": vllm_port}, **READINESS},
        "resources": {
            "requests": {"cpu": "4", "memory": memory, **devices},
            "limits": {"memory": memory, **devices},
        },
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}, *cache_mounts],
    }
    pod: PodSpec = {
        "serviceAccountName": spec.service_account_name,
        "terminationGracePeriodSeconds": GRACE_SECONDS,
        "containers": [container],
        "volumes": volumes + cache_volumes,
    }
    drained(spec, pod, container)  # its grace (GRACE_SECONDS) becomes the drain's
    if behind_sidecar(spec):
        pod["initContainers"] = [routing_sidecar(spec, "nixlv2")]
    out = [deployment(spec, pod)]
    if spec.role == "decode":  # one ServiceAccount for both roles
        out.insert(0, service_account(spec))
    return out
