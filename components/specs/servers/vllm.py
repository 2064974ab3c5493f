"""vLLM on NVIDIA, AMD and Intel XPU: one Deployment per stack, shaped by the connector and tier."""

from __future__ import annotations

import json
import shlex

from components.catalog import labels, versions
from components.manifest import Manifest
from components.specs import connectors, model_cache, mooncake
from components.specs.servers.base import (
    CACHE_MOUNTS,
    TERMINATION_GRACE_SECONDS,
    ServerSpec,
    deployment,
    empty_dir,
    env_var,
    files_storage_mount,
    files_storage_volume,
    hf_token_env,
    http_probes,
    lustre_permissions_init,
    memory_resources,
    memory_volume,
    metadata,
    model_cache_volumes,
    model_load_args,
    platform_env,
    server_port,
    service_account,
)

MOONCAKE_CONFIG_MAP = "mooncake-store-config"
MOONCAKE_CONFIG_DIR = "/etc/mooncake"
LMCACHE_METRICS_DIR = "/tmp/lmcache_prometheus"
# ROCm: CPU->GPU loads of native offloading take the fast Triton path below this many bytes per
# block; the guide raises it from 28 KiB to 40 KiB for Qwen3-32B's blocks.
ROCM_SWAP_KERNEL = "/usr/local/lib/python3.12/dist-packages/vllm/v1/kv_offload/cpu/swap_blocks_triton.py"
ROCM_SWAP_THRESHOLD = ("28 * 1024", "40 * 1024")
# Intel XPU serving flags of the guide's overlays.
XPU_DTYPE_ARGS = ["--dtype", "bfloat16", "--block-size", "64"]
XPU_TAIL_ARGS = ["--max-num-seqs", "128"]
XPU_LOG_ARGS = ["--uvicorn-log-level", "warning"]
XPU_CLAIM = "intel-decode-claim"


def _kv_config(spec: ServerSpec) -> str:
    if spec.connector == "native":
        return connectors.to_json(connectors.offloading_connector(spec.sizing, spec.filesystem_tier))
    if spec.connector == "lmcache-connector":
        return connectors.to_json(connectors.lmcache_connector())
    return connectors.to_json(connectors.mooncake_store_connector(standalone=spec.filesystem_tier))


def vllm_args(spec: ServerSpec) -> list[str]:
    model, tp = model_load_args(spec), f"--tensor-parallel-size={spec.tensor_parallelism}"
    kv = ["--kv-transfer-config", _kv_config(spec)]
    extra = ["--disable-hybrid-kv-cache-manager"] if spec.model.hybrid_attention and spec.connector == "native" else []
    if spec.accelerator.key == "xpu":
        if spec.connector == "lmcache-connector":
            return [*model, *XPU_DTYPE_ARGS, tp, *XPU_TAIL_ARGS, "--max-model-len", "20480", *XPU_LOG_ARGS, *kv]
        return [
            *model,
            *XPU_DTYPE_ARGS,
            tp,
            "--gpu-memory-utilization",
            "0.85",
            *kv,
            *extra,
            *XPU_TAIL_ARGS,
            *XPU_LOG_ARGS,
        ]
    port = f"--port={labels.MODEL_SERVER_PORT}"
    if spec.connector == "lmcache-connector":
        return [*model, port, tp, *kv, "--max-num-seqs=1024"]
    return [*model, port, tp, *kv, *extra]


def _command(spec: ServerSpec) -> tuple[list[str], list[str]]:
    args = vllm_args(spec)
    if spec.accelerator.key == "amd" and spec.connector == "native" and not spec.filesystem_tier:
        old, new = ROCM_SWAP_THRESHOLD
        pattern = old.replace("*", "\\*")  # a literal `*` in the sed pattern
        patch = (
            f"sed -i 's/THRESHOLD_BYTES = {pattern}/THRESHOLD_BYTES = {new}/' {ROCM_SWAP_KERNEL}"
            ' || echo "WARNING: Triton threshold patch skipped; the fast CPU-to-GPU load path may not engage"'
        )
        return ["/bin/bash", "-c"], [f"{patch}; exec vllm serve {shlex.join(args)}"]
    return ["vllm", "serve"], args


def _connector_env(spec: ServerSpec) -> list[Manifest]:
    knobs = spec.sizing.knobs
    if spec.connector == "lmcache-connector":
        env = [
            env_var("LMCACHE_MAX_LOCAL_CPU_SIZE", knobs["LMCACHE_MAX_LOCAL_CPU_SIZE"]),
            env_var("PYTHONHASHSEED", "123"),
            env_var("PROMETHEUS_MULTIPROC_DIR", LMCACHE_METRICS_DIR),
        ]
        if spec.filesystem_tier:
            env += [
                env_var("LMCACHE_LOCAL_DISK", f"file://{connectors.FILES_STORAGE}/kv-cache/"),
                env_var("LMCACHE_EXTRA_CONFIG", '{"use_odirect":true}'),
                env_var("LMCACHE_MAX_LOCAL_DISK_SIZE", knobs["LMCACHE_MAX_LOCAL_DISK_SIZE"]),
            ]
        return env
    if spec.connector == "mooncake-store":
        return [
            env_var("MOONCAKE_CONFIG_PATH", f"{MOONCAKE_CONFIG_DIR}/mooncake_config.json"),
            env_var("PYTHONHASHSEED", "0"),
        ]
    if spec.filesystem_tier:  # every pod must hash blocks alike to share the filesystem tier
        return [env_var("PYTHONHASHSEED", "42")]
    return []


def _env(spec: ServerSpec) -> list[Manifest]:
    # USER: vLLM v0.26 with torch 2.11 needs a user name when run as a UID without a passwd entry
    # (vllm-project/vllm#44548); the guide's CUDA and XPU image components append it.
    user = [] if spec.accelerator.key == "amd" else [env_var("USER", "llm-d")]
    accelerator = [env_var(k, v) for k, v in spec.accelerator.extra_env]
    cache = model_cache.server_env(spec.model_cache, "vllm") if spec.model_cache else []
    return [
        *_connector_env(spec),
        hf_token_env(optional=spec.accelerator.key == "amd"),
        *accelerator,
        *user,
        *platform_env(spec),
        *cache,
    ]


def _volumes(spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]:
    shm = spec.sizing.shm_size_limit
    volumes = [memory_volume("shm", shm.quantity() if shm else None)]
    mounts: list[Manifest] = [{"name": "shm", "mountPath": "/dev/shm"}]
    for name, path in CACHE_MOUNTS:
        volumes.append(empty_dir(name))
        mounts.append({"name": name, "mountPath": path})
    if spec.connector == "native" and spec.filesystem_tier:
        volumes += [empty_dir("workspace"), empty_dir("pip-user-site")]
        mounts += [{"name": "workspace", "mountPath": "/workspace"}, {"name": "pip-user-site", "mountPath": "/.local"}]
    if spec.connector == "lmcache-connector":
        volumes.append(empty_dir("lmcache-prometheus-metrics"))
        mounts.append({"name": "lmcache-prometheus-metrics", "mountPath": LMCACHE_METRICS_DIR})
    if spec.connector == "mooncake-store":
        volumes.append({"name": "mooncake-config", "configMap": {"name": MOONCAKE_CONFIG_MAP}})
        mounts.append({"name": "mooncake-config", "mountPath": MOONCAKE_CONFIG_DIR, "readOnly": True})
        if spec.filesystem_tier:  # the client library checks that the master's root_fs_dir exists
            volumes.append(empty_dir("mooncake-offload-stub"))
            mounts.append({"name": "mooncake-offload-stub", "mountPath": "/data/mooncake-offload"})
    elif spec.filesystem_tier:
        volumes.append(files_storage_volume())
        mounts.append(files_storage_mount(spec))
    cache_volumes, cache_mounts = model_cache_volumes(spec, volumes)
    return volumes + cache_volumes, mounts + cache_mounts


def _claim_template_name(spec: ServerSpec) -> str:
    return f"{spec.name_prefix}-tiered-prefix-cache-intel-claim-template-{spec.role}"


def _devices(spec: ServerSpec) -> Manifest:
    if spec.accelerator.device_resource is None:
        return {}
    devices: Manifest = {spec.accelerator.device_resource: spec.devices}
    if spec.connector == "mooncake-store":
        devices["rdma/ib"] = "1"  # MooncakeStore moves KV over RDMA
    return devices


def vllm_manifests(spec: ServerSpec) -> list[Manifest]:
    command, args = _command(spec)
    volumes, mounts = _volumes(spec)
    resources = memory_resources(spec, _devices(spec))
    container: Manifest = {
        "name": "modelserver",
        "image": spec.image,
        "command": command,
        "args": args,
        "env": _env(spec),
        "ports": server_port(),
        **http_probes(spec),
        "resources": resources,
        "volumeMounts": mounts,
    }
    pod: Manifest = {
        "serviceAccountName": spec.service_account_name,
        "restartPolicy": "Always",
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "containers": [container],
        "volumes": volumes,
    }
    init = lustre_permissions_init(spec)
    if init:
        pod["initContainers"] = init
    out: list[Manifest] = [service_account(spec)]
    if spec.accelerator.dra_device_class:
        container["imagePullPolicy"] = "IfNotPresent"
        resources["claims"] = [{"name": XPU_CLAIM}]
        pod["securityContext"] = {"fsGroup": 107, "supplementalGroups": [107]}  # the render group of the XPU image
        pod["resourceClaims"] = [{"name": XPU_CLAIM, "resourceClaimTemplateName": _claim_template_name(spec)}]
        out.append(_claim_template(spec))
    if spec.connector == "mooncake-store":
        out.append(_mooncake_config(spec))
    out.append(deployment(spec, pod))
    return out


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


def _mooncake_config(spec: ServerSpec) -> Manifest:
    knobs = spec.sizing.knobs
    standalone = spec.filesystem_tier
    config = {
        "mode": "standalone-store" if standalone else "embedded",
        "metadata_server": "P2PHANDSHAKE",
        "master_server_address": mooncake.MASTER_ADDRESS,
        "global_segment_size": 0 if standalone else knobs["global_segment_size"],
        "local_buffer_size": knobs["local_buffer_size"],
        "protocol": "rdma",
        "device_name": "",
        "enable_offload": standalone,
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": MOONCAKE_CONFIG_MAP, "namespace": spec.namespace},
        "data": {"mooncake_config.json": json.dumps(config, separators=(",", ":"))},
    }


def lmcache_image_for(accelerator_key: str) -> str | None:
    """The guide's image for the LMCache connector where it differs from the accelerator's vLLM image (XPU).

    On NVIDIA the guide runs its own vLLM image, built with the KV connectors (LMCache included), so the
    vLLM version under the connector stays the guide's; LMCache's image is for the LMCache server
    integration only, where client and server must share a tag.
    """
    return {"xpu": versions.XPU_LMCACHE_IMAGE}.get(accelerator_key)
