"""SGLang with HiCache on NVIDIA GPUs: host-memory KV tier, optionally backed by the shared filesystem."""

from __future__ import annotations

from components.catalog import labels
from components.manifest import Manifest, PodSpec
from components.specs import model_cache
from components.specs.servers.base import (
    ServerSpec,
    deployment,
    field_env,
    files_storage_mount,
    files_storage_volume,
    hf_token_env,
    lustre_permissions_init,
    memory_resources,
    memory_volume,
    model_cache_volumes,
    model_load_args,
    platform_env,
    service_account,
    serving_container,
)
from components.specs.servers.kv_event_env import kv_events_env, with_kv_event_ports
from components.specs.servers.limits import fraction_text, limit_args, limits
from components.specs.servers.shutdown import drained
from components.units import ByteSize, GiB

# Tokens per KV page; HiCache moves pages between HBM and host memory.
PAGE_TOKENS = 64
# The guide's `--mem-fraction-static`: the share of device memory for weights and the KV pool.
MEMORY_FRACTION = 0.9
# SGLang's /dev/shm, as upstream sizes it (its HiCache host pool is pinned memory, not tmpfs).
SGLANG_SHM = ByteSize(20 * GiB)


def sglang_args(spec: ServerSpec) -> list[str]:
    """SGLang's own flags, laid out by the connector around its cache flags (`Connector.sglang_args`)."""
    head = [
        *model_load_args(spec, "--model-path"),
        "--host=0.0.0.0",
        f"--port={labels.MODEL_SERVER_PORT}",
        f"--tensor-parallel-size={spec.tensor_parallelism}",
        f"--page-size={PAGE_TOKENS}",
        f"--mem-fraction-static={fraction_text(limits(spec).memory_fraction)}",
        "--enable-metrics",
    ]
    args = spec.connector.sglang_args(spec, head, limit_args(spec, context_flag="--context-length"))
    return args if spec.publisher is None else [*args, "--kv-events-config", spec.publisher.sglang_config()]


def _env(spec: ServerSpec) -> list[Manifest]:
    env = [
        *spec.connector.env(spec),
        field_env("NAMESPACE", "metadata.namespace"),
        field_env("POD_IP", "status.podIP"),
        hf_token_env(),
        *platform_env(spec),
        *(model_cache.server_env(spec.model_cache, "sglang") if spec.model_cache else []),
    ]
    return [*env, *kv_events_env(spec, env)]


def _devices(spec: ServerSpec) -> Manifest:
    return {str(spec.accelerator.device_resource): spec.devices}


def sglang_manifests(spec: ServerSpec) -> list[Manifest]:
    shm = spec.sizing.shm_size_limit
    volumes = [{"name": "metrics-volume", "emptyDir": {}}, memory_volume("dshm", shm.quantity() if shm else None)]
    mounts: list[Manifest] = [
        {"name": "metrics-volume", "mountPath": "/.config"},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]
    if spec.filesystem_tier:
        volumes.append(files_storage_volume())
        mounts.append(files_storage_mount(spec))
    cache_volumes, cache_mounts = model_cache_volumes(spec, volumes)
    volumes += cache_volumes
    mounts += cache_mounts
    command, resources = ["python3", "-m", "sglang.launch_server"], memory_resources(spec, _devices(spec))
    container = serving_container(spec, command, sglang_args(spec), _env(spec), resources, mounts)
    with_kv_event_ports(spec, container)
    pod: PodSpec = {"serviceAccountName": spec.service_account_name, "containers": [container], "volumes": volumes}
    drained(spec, pod, container)  # SGLang drains on SIGTERM itself (SGLANG_FORCE_SHUTDOWN unset): no flag
    init = lustre_permissions_init(spec)
    if init:
        pod["initContainers"] = init
    return [service_account(spec), deployment(spec, pod)]
