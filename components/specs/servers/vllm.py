"""vLLM on NVIDIA, AMD and Intel XPU: one Deployment per stack; its connector (spec.connector) adds its
kv-transfer config, arguments, env, volumes, devices and objects."""

from __future__ import annotations

from components.manifest import Container, Manifest, PodSpec
from components.specs import model_cache
from components.specs.servers.base import (
    CACHE_MOUNTS,
    ServerSpec,
    deployment,
    empty_dir,
    env_var,
    hf_token_env,
    lustre_permissions_init,
    memory_resources,
    memory_volume,
    metadata,
    model_cache_volumes,
    model_load_args,
    platform_env,
    service_account,
    serving_container,
)
from components.specs.servers.kv_event_env import kv_events_env, with_kv_event_ports
from components.specs.servers.pd import behind_sidecar, engine_port, engine_port_name, nixl_ports, routing_sidecar
from components.specs.servers.shutdown import TERMINATION_GRACE_SECONDS, drained, vllm_drain_args

XPU_CLAIM = "intel-decode-claim"


def vllm_args(spec: ServerSpec) -> list[str]:
    model, tp = model_load_args(spec), f"--tensor-parallel-size={spec.tensor_parallelism}"
    args = spec.connector.vllm_args(spec, model, tp, ["--kv-transfer-config", spec.connector.kv_transfer_flag(spec)])
    args = args if spec.publisher is None else [*args, *spec.publisher.vllm_args(args)]
    return [*args, *vllm_drain_args(spec)]


def _env(spec: ServerSpec) -> list[Manifest]:
    # USER: vLLM v0.26 with torch 2.11 needs a user name when run as a UID without a passwd entry
    # (vllm-project/vllm#44548); the guide's CUDA and XPU image components append it.
    user = [env_var("USER", "llm-d")] if spec.accelerator.sets_user_env else []
    accelerator = [env_var(k, v) for k, v in spec.accelerator.extra_env]
    cache = model_cache.server_env(spec.model_cache, "vllm") if spec.model_cache else []
    env = [
        *spec.connector.env(spec),
        hf_token_env(optional=spec.accelerator.hf_token_optional),
        *accelerator,
        *user,
        *platform_env(spec),
        *cache,
    ]
    return [*env, *kv_events_env(spec, env)]


def _volumes(spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
    shm = spec.sizing.shm_size_limit
    volumes = [memory_volume("shm", shm.quantity() if shm else None)]
    mounts: list[Manifest] = [{"name": "shm", "mountPath": "/dev/shm"}]
    for name, path in CACHE_MOUNTS:
        volumes.append(empty_dir(name))
        mounts.append({"name": name, "mountPath": path})
    own_volumes, own_mounts = spec.connector.volumes(spec)
    volumes += own_volumes
    mounts += own_mounts
    cache_volumes, cache_mounts = model_cache_volumes(spec, volumes)
    return volumes + cache_volumes, mounts + cache_mounts


def _claim_template_name(spec: ServerSpec) -> str:
    return f"{spec.name_prefix}-tiered-prefix-cache-intel-claim-template-{spec.role}"


def _devices(spec: ServerSpec) -> Manifest:
    if spec.accelerator.device_resource is None:
        return {}
    return {spec.accelerator.device_resource: spec.devices, **spec.connector.devices(spec)}


def vllm_manifests(spec: ServerSpec) -> list[Manifest]:
    command, args = spec.connector.command(spec, vllm_args(spec))
    volumes, mounts = _volumes(spec)
    resources = memory_resources(spec, _devices(spec))
    container = serving_container(spec, command, args, _env(spec), resources, mounts)
    if spec.disaggregated:
        _disaggregated(spec, container)
    with_kv_event_ports(spec, container)
    pod: PodSpec = {
        "serviceAccountName": spec.service_account_name,
        "restartPolicy": "Always",
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "containers": [container],
        "volumes": volumes,
    }
    drained(spec, pod, container)
    init = lustre_permissions_init(spec)
    if behind_sidecar(spec):
        transport = spec.accelerator.kv_transport
        assert transport is not None, "a P/D pool's accelerator carries its transport (the config's checks)"
        init = [*init, routing_sidecar(spec, transport.sidecar_connector)]
    if init:
        pod["initContainers"] = init
    # One ServiceAccount for both P/D roles, with the decode role (the last; the only role otherwise).
    out: list[Manifest] = [service_account(spec)] if spec.role == "decode" else []
    if spec.accelerator.dra_device_class:
        container["imagePullPolicy"] = "IfNotPresent"
        resources["claims"] = [{"name": XPU_CLAIM}]
        pod["securityContext"] = {"fsGroup": 107, "supplementalGroups": [107]}  # the render group of the XPU image
        pod["resourceClaims"] = [{"name": XPU_CLAIM, "resourceClaimTemplateName": _claim_template_name(spec)}]
        out.append(_claim_template(spec))
    out += spec.connector.extra_manifests(spec)
    out.append(deployment(spec, pod))
    return out


def _disaggregated(spec: ServerSpec, container: Container) -> None:
    """A P/D engine: its API port (behind the routing sidecar on decode, and probed there), and one NIXL handshake
    port per local engine."""
    name = engine_port_name(spec)
    port = {"name": name, "containerPort": engine_port(spec), "protocol": "TCP"}
    container["ports"] = [port, *nixl_ports(spec.data_parallelism)]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        container[probe]["httpGet"]["port"] = name


def _claim_template(spec: ServerSpec) -> Manifest:
    request = {
        "name": "gpu",
        "exactly": {
            "deviceClassName": spec.accelerator.dra_device_class,
            "allocationMode": "ExactCount",
            "count": spec.devices,
        },
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": metadata(spec, _claim_template_name(spec)),
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }
