"""vLLM on Google TPU with the TPU offload connector: single-host Deployments and the v7 multi-host LeaderWorkerSet."""

from __future__ import annotations

import shlex

from components.catalog import labels, versions
from components.manifest import Container, Manifest, PodSpec, PodTemplateSpec, Service, plain
from components.specs import model_cache
from components.specs.security import NODE_SETUP_COMMAND, NODE_SETUP_CONTAINER
from components.specs.servers.base import (
    INIT_RESOURCES,
    ServerSpec,
    add_probes,
    deployment,
    env_var,
    hf_token_env,
    http_probes,
    memory_volume,
    metadata,
    model_cache_volumes,
    model_load_args,
    pod_template,
    server_port,
    service_account,
    serving_container,
    workload_metadata,
)
from components.specs.servers.limits import fraction_text, limit_args, limits
from components.specs.servers.shutdown import drained, vllm_drain_args

PROMETHEUS_DIR = "/tmp/prometheus_multiproc"
MULTI_HOST_TOPOLOGY = "2x2x2"  # two tpu7x hosts of 4 chips per replica
RAY_GCS_PORT = 6379


def _node_setup() -> Container:
    return {
        "name": NODE_SETUP_CONTAINER,
        "image": versions.BUSYBOX_IMAGE,
        "command": list(NODE_SETUP_COMMAND),
        "securityContext": {"privileged": True},
        "resources": INIT_RESOURCES,
    }


def _node_selector(spec: ServerSpec, topology: str | None = None) -> dict[str, str]:
    return {
        labels.GKE_TPU_ACCELERATOR_LABEL: str(spec.accelerator.tpu_accelerator),
        labels.GKE_TPU_TOPOLOGY_LABEL: topology or str(spec.accelerator.tpu_topology),
    }


def _resources(spec: ServerSpec) -> Manifest:
    memory = spec.sizing.pod_memory.quantity()
    # A quantity is a string as the API server returns it: a custom resource (the LeaderWorkerSet) is diffed as
    # stored, so an integer here was a perpetual diff under the real engine (`./run e2e`, the TPU v7 preset).
    tpu = {"google.com/tpu": str(spec.devices)}
    return {
        "requests": {"cpu": spec.accelerator.cpu_request, "memory": memory, **tpu},
        "limits": {"memory": memory, **tpu},
    }


def _cache_env(spec: ServerSpec) -> list[Manifest]:
    return model_cache.server_env(spec.model_cache, "tpu") if spec.model_cache else []


def tpu_args(spec: ServerSpec) -> list[str]:
    return [
        *model_load_args(spec),
        "--kv-transfer-config",
        spec.connector.kv_transfer_flag(spec),
        "--port",
        str(labels.MODEL_SERVER_PORT),
        "--tensor-parallel-size",
        str(spec.tensor_parallelism),
        *limit_args(spec),
        *vllm_drain_args(spec),
    ]


def tpu_manifests(spec: ServerSpec) -> list[Manifest]:
    env = [
        hf_token_env(),
        env_var("PROMETHEUS_MULTIPROC_DIR", PROMETHEUS_DIR),
        env_var("SKIP_JAX_PRECOMPILE", "0"),
        *spec.connector.env(spec),
        *_cache_env(spec),
    ]
    container = serving_container(spec, ["vllm", "serve"], tpu_args(spec), env, _resources(spec), None)
    pod: PodSpec = {
        "serviceAccountName": spec.service_account_name,
        "initContainers": [_node_setup()],
        "containers": [container],
        "nodeSelector": _node_selector(spec),
    }
    drained(spec, pod, container)
    volumes, mounts = model_cache_volumes(spec, [])
    if volumes:
        container["volumeMounts"] = mounts
        pod["volumes"] = volumes
    template_labels = {**spec.pod_labels, labels.INFERENCE_SERVING_LABEL: "true"}
    return [service_account(spec), deployment(spec, pod, template_labels)]


# --- multi-host (TPU v7, LeaderWorkerSet) -------------------------------------------------------

# The recipe's device-memory share and context (Qwen3-Coder-480B over two hosts).
MULTIHOST_MEMORY_FRACTION = 0.8
MULTIHOST_MAX_MODEL_LEN = 71_200

MULTI_HOST_ENV = (
    ("TPU_MULTIHOST_BACKEND", "ray"),
    ("TPU_BACKEND_TYPE", "jax"),
    ("MODEL_IMPL_TYPE", "vllm"),
    ("JAX_PLATFORMS", ""),
    ("PJRT_DEVICE", "TPU"),
    ("NEW_MODEL_DESIGN", "0"),
    ("SKIP_JAX_PRECOMPILE", "0"),
    ("PROMETHEUS_MULTIPROC_DIR", PROMETHEUS_DIR),
    ("RAY_RESERVE_CPU_FOR_RAYLET", "1"),
)


def multihost_serve_args(spec: ServerSpec) -> list[str]:
    served = limits(spec)
    return [
        "--port", str(labels.MODEL_SERVER_PORT),
        "--load-format=runai_streamer",  # upstream's, from the Hub or from the model cache alike
        *model_cache.model_args(spec.model_cache, spec.model.name, "--model"),
        "--enable-prefix-caching",
        "--async-scheduling",
        "--enable-chunked-prefill",
        "--enable-expert-parallel",
        "--seed", "42",
        "--tensor-parallel-size", str(spec.tensor_parallelism),
        f"--gpu-memory-utilization={fraction_text(served.memory_fraction)}",
        f"--max-model-len={served.max_model_len}",
        "--kv-transfer-config", spec.connector.kv_transfer_flag(spec),
    ]  # fmt: skip


def _multihost_container(spec: ServerSpec, leader: bool) -> Container:
    if leader:
        serve = " ".join(shlex.quote(a) for a in multihost_serve_args(spec))
        script = (
            "multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE) && "
            f"exec env VLLM_DISABLE_SHARED_EXPERTS_STREAM=1 vllm serve {serve}"
        )
    else:
        script = "multi-node-serving.sh worker --ray_address=$(LWS_LEADER_ADDRESS)"
    container: Container = {
        "name": "modelserver" if leader else "worker",
        "image": spec.image,
        "command": ["/bin/bash", "-c", script],
        "env": [
            hf_token_env(),
            *(env_var(k, v) for k, v in MULTI_HOST_ENV),
            *spec.connector.env(spec),
            *_cache_env(spec),
        ],
        "resources": _resources(spec),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, *model_cache_volumes(spec, [])[1]],
    }
    if leader:
        container["ports"] = server_port()
        add_probes(container, http_probes(spec))
    return container


def _multihost_pod(spec: ServerSpec, leader: bool) -> PodTemplateSpec:
    pod: PodSpec = {
        "serviceAccountName": spec.service_account_name,
        "initContainers": [_node_setup()],
        "containers": [_multihost_container(spec, leader)],
        "nodeSelector": _node_selector(spec, MULTI_HOST_TOPOLOGY),
        "volumes": [
            memory_volume("dshm", spec.sizing.shm_size_limit.quantity() if spec.sizing.shm_size_limit else None),
            *model_cache_volumes(spec, [])[0],
        ],
    }
    template_labels = dict(spec.pod_labels)
    if leader:
        template_labels |= {labels.LWS_ROLE_LABEL: labels.LWS_LEADER, labels.INFERENCE_SERVING_LABEL: "true"}
    return pod_template(spec, pod, template_labels)


def tpu_multihost_manifests(spec: ServerSpec) -> list[Manifest]:
    """One Ray cluster per replica: a leader that serves :8000 and workers on the other hosts."""
    lws: Manifest = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        # One replica per GKE node pool slice: a group never straddles two slices.
        "metadata": workload_metadata(
            spec, {"leaderworkerset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
        ),
        "spec": {
            "replicas": spec.replicas,
            "leaderWorkerTemplate": {
                "size": spec.group_size,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _multihost_pod(spec, leader=True),
                "workerTemplate": _multihost_pod(spec, leader=False),
            },
        },
    }
    service: Service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(spec, spec.workload_name),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {labels.LWS_NAME_LABEL: spec.workload_name},
            "ports": [
                {"name": "vllm", "port": labels.MODEL_SERVER_PORT, "protocol": "TCP"},
                {"name": "ray-gcs", "port": RAY_GCS_PORT, "protocol": "TCP"},
            ],
        },
    }
    return [service_account(spec), plain(service), lws]
