"""What every model-server family shares: the resolved spec, names, labels, probes, volumes, env."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from components.catalog import labels, versions
from components.catalog.accelerators import AcceleratorProfile
from components.catalog.engines import EngineKey as EngineKey  # named here too, beside Variant and HostType
from components.catalog.geometry_stamp import geometry_stamp
from components.catalog.models import ModelSpec
from components.catalog.platforms import PLATFORMS
from components.formulas.drain import Drain
from components.manifest import (
    Container,
    Deployment,
    Manifest,
    ObjectMeta,
    PodSpec,
    PodTemplateSpec,
    Probes,
    plain,
)
from components.specs import kv_events, model_cache
from components.specs.model_cache import TIER_SUBPATH, ModelCache
from components.specs.security import LUSTRE_PERMISSIONS_CONTAINER
from components.specs.servers.scheduling import Scheduling, scheduled
from components.specs.sizing import TierSizing
from components.specs.startup import probe_failure_threshold
from components.specs.tier_namespace import TierIdentity, identity_text, tier_namespace

# The config's Literals for what a model server runs (stacks/config/cache_section.py types its fields with them).
Variant = Literal["cpu", "fs"]
HostType = Literal["single-host", "multi-host"]

FILES_STORAGE = labels.FILES_STORAGE_MOUNT

# Probe timings of the guide's model-server patches (a 32B model can take most of an hour to load).
STARTUP_PROBE = {"initialDelaySeconds": 15, "periodSeconds": 30, "timeoutSeconds": 5, "failureThreshold": 120}
LIVENESS_PROBE = {"periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3}
READINESS_PROBE = {"periodSeconds": 5, "timeoutSeconds": 2, "failureThreshold": 3}
# Writable caches vLLM, torch.compile and Triton expect in the (non-root) home directory.
CACHE_MOUNTS = (("torch-compile-cache", "/.cache"), ("triton-cache", "/.triton"), ("vllm-config", "/.config"))
FILES_STORAGE_CLAIM = "llm-d-kv-cache-storage"
# Small init containers still declare what they use.
INIT_RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}


@dataclass(frozen=True)
class GuideLimits:
    """What a guide's layout writes itself (value, where it comes from); None: it writes nothing."""

    memory_fraction: tuple[float, str] | None = None
    max_model_len: tuple[int, str] | None = None
    # KV blocks its connector stages in HBM per replica, taken from the KV pool (the TPU offload connector's).
    hbm_staging_blocks: tuple[int, str] | None = None


class ServerConnector(Protocol):
    """What a model-server family asks of the spec's connector (components/specs/connectors/interface.py
    `Connector` answers it): the families build on these hooks and never import a connector."""

    @property
    def key(self) -> str: ...
    def pod_labels(self, accelerator: AcceleratorProfile) -> dict[str, str]: ...
    def manifests(self, spec: ServerSpec) -> list[Manifest]: ...
    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]: ...
    def kv_transfer_flag(self, spec: ServerSpec) -> str: ...
    def guide_limits(self, spec: ServerSpec) -> GuideLimits: ...
    def vllm_args(self, spec: ServerSpec, model: list[str], tp: str, kv: list[str]) -> list[str]: ...
    def sglang_args(self, spec: ServerSpec, engine: list[str], limits: list[str]) -> list[str]: ...
    def command(self, spec: ServerSpec, args: list[str]) -> tuple[list[str], list[str]]: ...
    def env(self, spec: ServerSpec) -> list[Manifest]: ...
    def volumes(self, spec: ServerSpec) -> tuple[list[Manifest], list[Manifest]]: ...
    def devices(self, spec: ServerSpec) -> Manifest: ...
    def extra_manifests(self, spec: ServerSpec) -> list[Manifest]: ...


@dataclass(frozen=True)
class ServerSpec:
    """Everything one model-server role is rendered from, with every default resolved."""

    namespace: str
    accelerator: AcceleratorProfile
    server: EngineKey
    connector: ServerConnector  # the resolved implementation (components/specs/connectors), by its hooks
    variant: Variant
    host_type: HostType
    platform: str
    model: ModelSpec
    replicas: int
    tensor_parallelism: int
    devices: int  # accelerator devices (TPU chips) per pod
    group_size: int  # pods per replica (multi-host)
    image: str
    sizing: TierSizing
    # Tokens per block the CPU tier moves to the accelerator: the connector's `transfer_block` for the stack's
    # choice (a family cannot ask it: the choice is not the spec's), stamped on the workload (`workload_metadata`).
    transfer_block_tokens: int
    # Bytes of the CPU tier one pod holds in its own memory: the connector's `pod_cpu_tier` (its own figure,
    # from its `Sizes`), stamped on the workload beside the transfer block (`workload_metadata`).
    cpu_tier_bytes: int
    scheduling: Scheduling = field(default_factory=Scheduling)
    role: str = "decode"
    guide: str = labels.GUIDE  # the `llm-d.ai/guide` value the router selects
    disaggregated: bool = False  # P/D: a prefill and a decode role
    data_parallelism: int = 1  # engines in one pod (P/D pools: --data-parallel-size), `devices` = TP x this
    test_mode: bool = False  # LMCache: `--no-enable-prefix-caching`, so a repeat goes to LMCache
    sidecar_image: str | None = None  # P/D decode: the router's routing sidecar
    startup_seconds: int = 0  # what the startup probe must allow (the plan's cold-start budget of one pod)
    model_cache: ModelCache | None = None  # weights from the stack's model cache (None: each pod downloads)
    # The stack's own device-memory share and context length (None: the guide's or the engine's; servers/limits.py).
    memory_fraction: float | None = None
    max_model_len: int | None = None
    # What the KV its servers persist depends on (None: no persistent tier); the plan sets it from the spec.
    tier_identity: TierIdentity | None = None
    drain: Drain | None = None  # its drain before it stops (servers/shutdown.py); None: the family's own grace
    publisher: kv_events.Publisher | None = None  # its KV-cache events for the precise index (None: approximate)

    @property
    def filesystem_tier(self) -> bool:
        return self.variant == "fs"

    @property
    def tier_namespace(self) -> str:
        """The persistent tier's directory under the connector's root (components/specs/tier_namespace.py)."""
        assert self.tier_identity is not None, "the plan derives the tier's identity for a persistent tier"
        return tier_namespace(self.tier_identity)

    @property
    def name_prefix(self) -> str:
        return f"{self.accelerator.key}-{self.server}"

    @property
    def workload_name(self) -> str:
        return f"{self.name_prefix}-{self.role}"

    @property
    def service_account_name(self) -> str:
        return f"{self.name_prefix}-sa"

    @property
    def pod_labels(self) -> dict[str, str]:
        out = {
            labels.GUIDE_LABEL: self.guide,
            labels.MODEL_LABEL: self.model.short_name,
            labels.ACCELERATOR_VARIANT_LABEL: self.accelerator.variant,
            labels.ACCELERATOR_VENDOR_LABEL: self.accelerator.vendor,
            labels.ACCELERATOR_PROFILE_LABEL: self.accelerator.key,
            labels.KV_CONNECTOR_LABEL: self.connector.key,
            labels.ROLE_LABEL: self.role,
            labels.WORKLOAD_LABEL: self.workload_name,
        }
        return out | self.connector.pod_labels(self.accelerator)

    @property
    def serving_pod_labels(self) -> dict[str, str]:
        """The labels the pods that serve :8000 carry at run time (multi-host: the LeaderWorkerSet leaders,
        which the LWS controller also labels with the set's name)."""
        out = dict(self.pod_labels)
        if self.accelerator.is_tpu:
            out[labels.INFERENCE_SERVING_LABEL] = "true"
        if self.host_type == "multi-host":
            out |= {labels.LWS_ROLE_LABEL: labels.LWS_LEADER, labels.LWS_NAME_LABEL: self.workload_name}
        return out


def model_load_args(spec: ServerSpec, flag: str | None = None) -> list[str]:
    """The model (a local path from the model cache, served under its Hub id) and how to load it."""
    cache = spec.model_cache
    args = model_cache.model_args(cache, spec.model.name, flag)
    if cache is not None and cache.load_format:
        args.append(f"--load-format={cache.load_format}")
    return args


def model_cache_volumes(spec: ServerSpec, volumes: list[Manifest]) -> tuple[list[Manifest], list[Manifest]]:
    """The model cache's volumes (none when it shares the pod's tier volume) and the server's mounts."""
    if spec.model_cache is None:
        return [], []
    tier = "files-storage" if any(v["name"] == "files-storage" for v in volumes) else None
    return model_cache.server_volumes(spec.model_cache, tier)


def identity_selector(spec: ServerSpec) -> dict[str, str]:
    """A workload's selector is immutable: only labels that never change for a stack (guide, role, workload
    name), so changing the model, accelerator or sizes is a rolling update, not a replacement."""
    return {labels.GUIDE_LABEL: spec.guide, labels.ROLE_LABEL: spec.role, labels.WORKLOAD_LABEL: spec.workload_name}


def router_selector(spec: ServerSpec) -> dict[str, str]:
    """What the router (and its InferencePool) select: the guide label, and on multi-host only the leaders."""
    selector = {labels.GUIDE_LABEL: spec.guide}
    if spec.host_type == "multi-host":
        selector |= {labels.LWS_NAME_LABEL: spec.workload_name, labels.LWS_ROLE_LABEL: labels.LWS_LEADER}
    return selector


def metadata(spec: ServerSpec, name: str, with_labels: bool = True) -> ObjectMeta:
    meta: ObjectMeta = {"name": name, "namespace": spec.namespace}
    if with_labels:
        meta["labels"] = spec.pod_labels
    return meta


def workload_metadata(spec: ServerSpec, annotations: dict[str, str] | None = None) -> ObjectMeta:
    """The model-server workload's own metadata (a Deployment's, a LeaderWorkerSet's): its labels, the transfer
    block its connector moves (`labels.KV_TRANSFER_BLOCK_ANNOTATION`), the CPU tier one pod holds
    (`labels.CPU_TIER_BYTES_ANNOTATION`), the model's geometry as the plan sized it (`MODEL_GEOMETRY_ANNOTATION`)
    and, with a persistent tier, its namespace and the fields it comes from.
    Here, not on the pod template: a workload's annotations change in place and restart no pod."""
    stamp = {
        labels.KV_TRANSFER_BLOCK_ANNOTATION: str(spec.transfer_block_tokens),
        labels.CPU_TIER_BYTES_ANNOTATION: str(spec.cpu_tier_bytes),
        labels.MODEL_GEOMETRY_ANNOTATION: geometry_stamp(spec.model),
    }
    if spec.tier_identity is not None:
        stamp[labels.KV_TIER_NAMESPACE_ANNOTATION] = spec.tier_namespace
        stamp[labels.KV_TIER_IDENTITY_ANNOTATION] = identity_text(spec.tier_identity)
    return {**metadata(spec, spec.workload_name), "annotations": {**(annotations or {}), **stamp}}


def service_account(spec: ServerSpec) -> Manifest:
    """Model servers never call the Kubernetes API, so no token is mounted."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(spec, spec.service_account_name),
        "automountServiceAccountToken": False,
    }


def startup_probe(spec: ServerSpec) -> dict[str, int]:
    """The guide's startup timings, allowing at least the pod's cold-start budget (upstream's hour as the floor)."""
    threshold = probe_failure_threshold(
        spec.startup_seconds,
        STARTUP_PROBE["initialDelaySeconds"],
        STARTUP_PROBE["periodSeconds"],
        STARTUP_PROBE["failureThreshold"],
    )
    return {**STARTUP_PROBE, "failureThreshold": threshold}


def http_probes(spec: ServerSpec, port: str | int = labels.MODEL_SERVER_PORT_NAME) -> Probes:
    def probe(path: str, timings: dict[str, int]) -> Manifest:
        return {"httpGet": {"path": path, "port": port}, **timings}

    return {
        "startupProbe": probe("/v1/models", startup_probe(spec)),
        "livenessProbe": probe("/health", LIVENESS_PROBE),
        "readinessProbe": probe("/v1/models", READINESS_PROBE),
    }


def serving_container(
    spec: ServerSpec,
    command: list[str],
    args: list[str],
    env: list[Manifest],
    resources: Manifest,
    mounts: list[Manifest] | None,
) -> Container:
    """The model-server container: the image, the port and the three probes every server family sets alike."""
    container: Container = {
        "name": "modelserver",
        "image": spec.image,
        "command": command,
        "args": args,
        "env": env,
        "ports": server_port(),
    }
    add_probes(container, http_probes(spec))
    container["resources"] = resources
    if mounts is not None:
        container["volumeMounts"] = mounts
    return container


def add_probes(container: Container, probes: Probes) -> None:
    container["startupProbe"] = probes["startupProbe"]
    container["livenessProbe"] = probes["livenessProbe"]
    container["readinessProbe"] = probes["readinessProbe"]


def server_port() -> list[Manifest]:
    return [{"name": labels.MODEL_SERVER_PORT_NAME, "containerPort": labels.MODEL_SERVER_PORT, "protocol": "TCP"}]


def hf_token_env(optional: bool = False) -> Manifest:
    ref: Manifest = {"name": labels.HF_TOKEN_SECRET, "key": labels.HF_TOKEN_KEY}
    if optional:
        ref["optional"] = True
    return {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": ref}}


def env_var(name: str, value: str) -> Manifest:
    return {"name": name, "value": value}


def field_env(name: str, path: str) -> Manifest:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def platform_env(spec: ServerSpec) -> list[Manifest]:
    """GKE's NCCL tuner and net plugins misbehave in these pods; the guide's gke overlays turn them off."""
    if spec.accelerator.vendor in PLATFORMS[spec.platform].nccl_plugins_off:
        return [env_var("NCCL_TUNER_PLUGIN", "none"), env_var("NCCL_NET_PLUGIN", "")]
    return []


def memory_volume(name: str, size_limit: str | None) -> Manifest:
    empty_dir: Manifest = {"medium": "Memory"}
    if size_limit:
        empty_dir["sizeLimit"] = size_limit
    return {"name": name, "emptyDir": empty_dir}


def empty_dir(name: str) -> Manifest:
    return {"name": name, "emptyDir": {}}


def files_storage_volume() -> Manifest:
    return {"name": "files-storage", "persistentVolumeClaim": {"claimName": FILES_STORAGE_CLAIM}}


def tier_dir(spec: ServerSpec) -> str:
    """Where the connector keeps its files on the shared tier: the stack's namespace under the tier's mount."""
    return f"{FILES_STORAGE}/{spec.tier_namespace}"


def files_storage_mount(spec: ServerSpec) -> Manifest:
    """The tier's mount; beside the model cache, only its own directory of the claim."""
    mount: Manifest = {"name": "files-storage", "mountPath": FILES_STORAGE}
    if spec.model_cache is not None and spec.model_cache.shared_with_tier:
        mount["subPath"] = TIER_SUBPATH
    return mount


def lustre_permissions_init(spec: ServerSpec) -> list[Container]:
    """On GKE the Lustre mount is root-owned; the guide's gke overlays open it to the pod's group first."""
    if not (PLATFORMS[spec.platform].root_owned_lustre and spec.filesystem_tier):
        return []
    return [
        {
            "name": LUSTRE_PERMISSIONS_CONTAINER,
            "image": versions.BUSYBOX_IMAGE,
            "command": ["sh", "-c", f"chmod -R g+w {FILES_STORAGE}/"],
            "volumeMounts": [files_storage_mount(spec)],
            "resources": INIT_RESOURCES,
        }
    ]


def memory_resources(spec: ServerSpec, devices: Manifest) -> Manifest:
    memory = spec.sizing.pod_memory.quantity()
    cpu = spec.accelerator
    return {
        "requests": {"cpu": cpu.cpu_request, "memory": memory, **devices},
        "limits": {"cpu": cpu.cpu_limit, "memory": memory, **devices},
    }


def pod_template(spec: ServerSpec, pod: PodSpec, template_labels: dict[str, str] | None = None) -> PodTemplateSpec:
    return {"metadata": {"labels": template_labels or spec.pod_labels}, "spec": scheduled(pod, spec.scheduling)}


def deployment(spec: ServerSpec, pod: PodSpec, template_labels: dict[str, str] | None = None) -> Manifest:
    record: Deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": workload_metadata(spec),
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": identity_selector(spec)},
            "template": pod_template(spec, pod, template_labels),
        },
    }
    return plain(record)


def files_storage_claim(namespace: str, storage_class: str, size: str, volume_name: str | None = None) -> Manifest:
    """The filesystem tier's shared claim. An empty StorageClass means the cluster default, so it is omitted;
    `volume_name` binds a volume made for this claim (a managed Lustre instance)."""
    claim_spec: Manifest = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        claim_spec["storageClassName"] = storage_class
    if volume_name:
        claim_spec["volumeName"] = volume_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": FILES_STORAGE_CLAIM, "namespace": namespace, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
        "spec": claim_spec,
    }
