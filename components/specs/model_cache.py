"""The model cache: weights fetched once per stack into a ReadWriteMany volume, compile caches kept beside them.

Layout of the volume (the filesystem tier's claim, or a dedicated one):

    kv-cache/                                   the filesystem tier (the tier's mount has this subPath)
    models/<hf id>/                             the weights: written by the fetch Job, read-only in model servers
    compile-cache/<accelerator>/<image>/<model>/  vLLM cache root, Inductor and Triton (GPUs), XLA (TPU)

The tier's mount sees only `kv-cache/`, so a tier cleanup cannot reach the weights. Model servers load
`--model <path>` and serve it as `--served-model-name <hf id>`, the name clients and the router use.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from components.catalog import labels
from components.manifest import Manifest
from components.specs.security import MODEL_FETCH_CONTAINER, harden
from components.specs.startup import timeout_annotation
from components.specs.workload_type import WorkloadType

WORKLOAD = WorkloadType("llmd:model_cache:ModelCache", "model-cache")  # a dedicated claim, the fetch script and its Job

MODEL_CACHE_CLAIM = "llm-d-model-cache"  # the dedicated claim, where the stack has no filesystem tier
VOLUME = "model-cache"
WEIGHTS_DIR = "/mnt/model-cache"  # the volume's models/ in model servers (read-only)
COMPILE_DIR = "/mnt/compile-cache"  # the volume's compile-cache/<key>/ in model servers
JOB_ROOT = "/mnt/cache-volume"  # the volume's root in the fetch Job
TIER_SUBPATH = "kv-cache"
MODELS_SUBPATH = "models"
COMPILE_SUBPATH = "compile-cache"
FETCH_NAME = "model-fetch"
SCRIPT = Path(__file__).resolve().parents[1] / "model_fetch" / "fetch_model.py"
# Not the guide label: the InferencePool selects on it, and the EPP would route requests to this pod.
LABELS = {"app.kubernetes.io/name": FETCH_NAME, "app.kubernetes.io/part-of": labels.GUIDE}
FETCH_RESOURCES = {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
# The Hub's redirects and each file resume on retry, so a failed pod's successor continues its work.
FETCH_BACKOFF_LIMIT = 4


@dataclass(frozen=True)
class ModelCache:
    """Where one stack's model servers find their weights and keep their compile caches."""

    claim: str
    shared_with_tier: bool  # on the filesystem tier's claim (else: a dedicated one)
    model: str  # Hugging Face id: the directory under models/ and the served model name
    compile_key: str  # the directory under compile-cache/
    load_format: str | None  # `runai_streamer` where the image's engine streams weights
    compile_cache: bool

    @property
    def model_path(self) -> str:
        return f"{WEIGHTS_DIR}/{self.model}"

    @property
    def compile_subpath(self) -> str:
        return f"{COMPILE_SUBPATH}/{self.compile_key}"


@dataclass(frozen=True)
class FetchSpec:
    namespace: str
    cache: ModelCache
    revision: str
    image: str
    timeout_seconds: int  # how long `pulumi up` waits for the Job (from the cold-start model)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def compile_key(accelerator: str, image: str, model: str) -> str:
    """Compiled graphs and kernels are only valid for one accelerator, engine build (image) and model."""
    return f"{accelerator}/{_slug(image)}/{_slug(model)}"


def model_args(cache: ModelCache | None, model: str, flag: str | None) -> list[str]:
    """How a server is told its model: the local path and the Hub id as served name, or the Hub id alone.

    `flag` None: vLLM's positional model (`vllm serve MODEL`) when nothing is cached.
    """
    if cache is None:
        return [model] if flag is None else [f"{flag}={model}"]
    return [f"{flag or '--model'}={cache.model_path}", f"--served-model-name={model}"]


def server_volumes(cache: ModelCache, tier_volume: str | None) -> tuple[list[Manifest], list[Manifest]]:
    """The pod's volumes and the model server's mounts: the weights read-only, its compile cache writable.

    On the tier's claim the pod's tier volume is mounted again with other subPaths (one volume, one claim).
    """
    name = tier_volume if cache.shared_with_tier and tier_volume else VOLUME
    volumes = [] if name == tier_volume else [{"name": VOLUME, "persistentVolumeClaim": {"claimName": cache.claim}}]
    mounts: list[Manifest] = [{"name": name, "mountPath": WEIGHTS_DIR, "subPath": MODELS_SUBPATH, "readOnly": True}]
    if cache.compile_cache:
        mounts.append({"name": name, "mountPath": COMPILE_DIR, "subPath": cache.compile_subpath})
    return volumes, mounts


# Where each engine keeps what it compiles (engine contract: VLLM_CACHE_ROOT, VLLM_XLA_CACHE_PATH in
# vLLM 0.26's envs; SGLANG_CACHE_DIR, SGLANG_DG_CACHE_DIR in SGLang 0.5.16's; TRITON_CACHE_DIR and
# TORCHINDUCTOR_CACHE_DIR are Triton's and PyTorch's own).
_COMPILE_ENV = {
    "vllm": (("VLLM_CACHE_ROOT", "vllm"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")),
    "sglang": (
        ("SGLANG_CACHE_DIR", "sglang"),
        ("SGLANG_DG_CACHE_DIR", "deep_gemm"),
        ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
        ("TRITON_CACHE_DIR", "triton"),
    ),
    # vLLM on TPU keeps XLA's compiled graphs under VLLM_XLA_CACHE_PATH ("write to shareable storage
    # for future deployed nodes", vLLM docs/configuration/tpu.md).
    "tpu": (("VLLM_CACHE_ROOT", "vllm"), ("VLLM_XLA_CACHE_PATH", "xla")),
}


def server_env(cache: ModelCache, family: str) -> list[Manifest]:
    """No pod talks to the Hub (the weights are local), and the compile caches point at the volume."""
    env: list[Manifest] = [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    if cache.compile_cache:
        env += [{"name": name, "value": f"{COMPILE_DIR}/{sub}"} for name, sub in _COMPILE_ENV[family]]
    return env


def dedicated_claim(namespace: str, storage_class: str, size: str) -> Manifest:
    spec: Manifest = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": MODEL_CACHE_CLAIM, "namespace": namespace, "labels": dict(LABELS)},
        "spec": spec,
    }


def _fetch_env(spec: FetchSpec) -> dict[str, str]:
    cache = spec.cache
    writable = [f"{JOB_ROOT}/{cache.compile_subpath}"] if cache.compile_cache else []
    if cache.shared_with_tier:
        writable.append(f"{JOB_ROOT}/{TIER_SUBPATH}")
    return {
        "MODEL": cache.model,
        "REVISION": spec.revision,
        "CACHE_ROOT": JOB_ROOT,
        "TARGET": f"{JOB_ROOT}/{MODELS_SUBPATH}/{cache.model}",
        "WRITABLE_DIRS": ":".join(writable),
    }


def _job_name(job_spec: Manifest, script: str) -> str:
    """A Job's pod template is immutable: everything the Job runs is in its name, so a change creates a
    new Job (which `pulumi up` awaits before the model servers move) and retires the old one, instead of
    replacing a Job in place. An unchanged stack keeps the name, and its next `pulumi up` does nothing."""
    identity = json.dumps({"spec": job_spec, "script": script}, sort_keys=True)
    return f"{FETCH_NAME}-{hashlib.sha256(identity.encode()).hexdigest()[:10]}"


def _fetch_container(spec: FetchSpec) -> Manifest:
    token = {"name": labels.HF_TOKEN_SECRET, "key": labels.HF_TOKEN_KEY, "optional": True}
    return {
        "name": MODEL_FETCH_CONTAINER,
        "image": spec.image,
        "command": ["python3", f"/fetch/{SCRIPT.name}"],
        "env": [
            *({"name": k, "value": v} for k, v in _fetch_env(spec).items()),
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": token}},
        ],
        "resources": FETCH_RESOURCES,
        "volumeMounts": [
            {"name": "script", "mountPath": "/fetch", "readOnly": True},
            {"name": VOLUME, "mountPath": JOB_ROOT},
        ],
    }


def _job_spec(spec: FetchSpec) -> Manifest:
    """Hardened like every pod, with the fetch's exemption (root, to write into the backend's tree)."""
    pod = {
        "restartPolicy": "Never",
        "enableServiceLinks": False,
        "containers": [_fetch_container(spec)],
        "volumes": [
            {"name": "script", "configMap": {"name": f"{FETCH_NAME}-script"}},
            {"name": VOLUME, "persistentVolumeClaim": {"claimName": spec.cache.claim}},
        ],
    }
    template = {"metadata": {"labels": dict(LABELS)}, "spec": pod}
    # Hardened here as well as by the plan's pass (idempotent): the Job's name hashes this spec, as rendered.
    job_spec: Manifest = harden({"kind": "Job", "spec": {"backoffLimit": FETCH_BACKOFF_LIMIT, "template": template}})
    return dict(job_spec["spec"])


def fetch_manifests(spec: FetchSpec) -> list[Manifest]:
    """The script's ConfigMap and the Job that runs it (no TTL: a completed Job stays, so an unchanged
    stack's next `pulumi up` finds it and does nothing)."""
    meta = {"namespace": spec.namespace, "labels": dict(LABELS)}
    job_spec, script = _job_spec(spec), SCRIPT.read_text(encoding="utf-8")
    # pulumi-kubernetes waits this long for the Job (its default, 10 minutes, is less than most downloads).
    job_meta = {**meta, "name": _job_name(job_spec, script), "annotations": timeout_annotation(spec.timeout_seconds)}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta, "name": f"{FETCH_NAME}-script"},
            "data": {SCRIPT.name: script},
        },
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": job_spec},
    ]
