"""What the stack runs, as the rules find it in resource inputs: the model servers and their
connector configs, the router charts, LMCache's clients and servers, the accelerator a pod holds (by the
profile key it carries) and the devices it requests, the connectors it runs (by what each writes: its
`kv_connector` class or engine flag), the node pools the stack creates, and what its workload is stamped with
(the transfer block, the CPU tier). The rule that holds these together is `identity.py`'s."""

from __future__ import annotations

import json
from typing import Any

from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile
from components.catalog.geometry_stamp import FIELDS, StampError, model_from_stamp
from components.catalog.labels import (
    ACCELERATOR_PROFILE_LABEL,
    CPU_TIER_BYTES_ANNOTATION,
    KV_TRANSFER_BLOCK_ANNOTATION,
    MODEL_GEOMETRY_ANNOTATION,
    NODE_POOL_LABEL,
)
from components.catalog.machines import MACHINES
from components.catalog.models import MODELS, ModelSpec
from components.specs.connectors import IMPLEMENTATIONS, Connector
from policies.resources import (
    CHART_TYPE,
    Pod,
    Props,
    Resource,
    args,
    chart_values,
    connectors,
    env,
    kv_transfer_config,
    local_engines,
    offload_bytes,
    pods,
)

# The connectors by key (`llm-d.ai/kv-connector`), from the registry: what each writes is its own module's.
CONNECTORS: dict[str, Connector] = {c.key: c for c in IMPLEMENTATIONS}


def model_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any], dict[str, Any]]]:
    """(pod, container, kv-transfer-config) for every container started with a connector config."""
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            config = kv_transfer_config(container)
            if config is not None:
                out.append((pod, container, config))
    return out


def router_charts(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if r.type == CHART_TYPE and "router" in chart_values(r)]


def lmcache_clients(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            kinds = {c.get("kv_connector") for c in connectors(kv_transfer_config(container))}
            if kinds & {"LMCacheConnectorV1", "LMCacheMPConnector"} or "LMCACHE_KV_CONFIG" in env(container):
                out.append((pod, container))
    return out


def lmcache_servers(resources: list[Resource]) -> list[tuple[Pod, dict[str, Any]]]:
    return [
        (pod, c)
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if args(c)[:2] in (["lmcache", "server"], ["/opt/venv/bin/lmcache", "server"])
    ]


def devices_of(resources: list[Resource], pod: Pod, container: dict[str, Any], profile: AcceleratorProfile) -> int:
    """How many of a profile's devices a container requests: its extended resource (`nvidia.com/gpu: N`) or a
    DRA claim of its device class (the catalog's `device_resource`, `dra_device_class`); 0: none."""
    limits = ((container.get("resources") or {}).get("limits")) or {}
    if profile.device_resource and profile.device_resource in limits:
        return _count(limits[profile.device_resource])
    if profile.dra_device_class and _claims(container):
        return sum(
            int(request.get("count") or 1)
            for request in _dra_requests(resources, pod)
            if request.get("deviceClassName") == profile.dra_device_class
        )
    return 0


def _count(value: object) -> int:
    """A device count as a quantity: a whole number, its string, or a whole float (the engine's protobuf
    Struct carries every number as one); 0 for anything else."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return max(value, 0)
    text = str(value)
    return int(text) if text.isascii() and text.isdigit() else 0


def _claims(container: dict[str, Any]) -> bool:
    """Whether the container uses the pod's resource claims (DRA devices are the containers' that name them)."""
    return bool(((container.get("resources") or {}).get("claims")) or [])


def accelerator_of(resources: list[Resource], pod: Pod, container: dict[str, Any]) -> tuple[str, int] | None:
    """The catalog accelerator a model-server pod runs on, by the profile key it carries
    (`llm-d.ai/accelerator-profile`), and how many of that profile's devices it holds. None: it carries no
    profile the catalog knows, or holds none of its devices (`identity_labels` reports both; never guessed
    from the device resource, which two profiles of one vendor share)."""
    profile = ACCELERATORS.get(pod.labels.get(ACCELERATOR_PROFILE_LABEL, ""))
    if profile is None:
        return None
    count = devices_of(resources, pod, container, profile)
    return (profile.key, count) if count > 0 else None


def holds_profile_devices(resources: list[Resource], pod: Pod, key: str) -> bool:
    """Whether any container of the pod requests the devices of profile `key` (its label aside)."""
    profile = ACCELERATORS.get(key)
    return profile is not None and any(devices_of(resources, pod, c, profile) for c in pod.containers())


def _stamp(pod: Pod, key: str) -> object:
    """The value of one annotation on the workload's own metadata (None: it has none)."""
    return ((pod.owner.props.get("metadata") or {}).get("annotations") or {}).get(key)


def _whole(value: object) -> int | None:
    """An annotation's value as a whole number (ASCII digits in a string), else None."""
    text = value if isinstance(value, str) else ""
    return int(text) if text.isascii() and text.isdigit() else None


def transfer_block_of(pod: Pod) -> int | None:
    """Tokens per block a model-server pod's connector moves between host memory and the accelerator, as its
    workload is stamped (`llm-d.ai/kv-transfer-block-tokens` on the workload's own metadata; the connector's
    `transfer_block`). None: no stamp, or not a positive whole number (`identity_labels` reports both; never
    re-derived from the server's arguments)."""
    block = _whole(_stamp(pod, KV_TRANSFER_BLOCK_ANNOTATION))
    return block if block else None


def cpu_tier_of(pod: Pod) -> int | None:
    """Bytes of the CPU tier one pod of its workload holds in its own memory, as the workload is stamped
    (`llm-d.ai/cpu-tier-bytes`: the connector's `pod_cpu_tier`, or the L1 or DRAM share of a per-node daemon;
    0: a daemon holds the pod's tier). None: no stamp, or not a whole number (`identity_labels` reports it
    on a connector's workload)."""
    return _whole(_stamp(pod, CPU_TIER_BYTES_ANNOTATION))


def pods_per_replica(pod: Pod) -> int:
    """Pods one replica of the pod's workload runs: a LeaderWorkerSet's group size (its leader and workers serve
    as one endpoint), else 1."""
    lws = ((pod.owner.props.get("spec") or {}).get("leaderWorkerTemplate")) or {}
    return _count(lws.get("size")) or 1


def replicas_of(pod: Pod) -> int:
    """Replicas of the pod's workload as declared (`spec.replicas`; 1 where it declares none or no number)."""
    return _count((pod.owner.props.get("spec") or {}).get("replicas")) or 1


def model_of(pod: Pod, served: str) -> ModelSpec | str:
    """The model a model-server pod serves (`served`: the name it serves under), with the geometry its workload
    is stamped with (`llm-d.ai/model-geometry`: what the plan sized it by, a `cache.model_file`'s too); else why
    the stamp cannot be judged by: missing, not a geometry, or not the catalog's for a model the catalog holds."""
    value = _stamp(pod, MODEL_GEOMETRY_ANNOTATION)
    try:
        model = model_from_stamp(served, value)
    except StampError as error:
        return (
            f"its {MODEL_GEOMETRY_ANNOTATION} stamp is {error}"
            if value is not None
            else (f"it carries no {MODEL_GEOMETRY_ANNOTATION} stamp (the geometry the plan sized {served} by)")
        )
    known = MODELS.get(served)
    differs = [f for f in FIELDS if known is not None and getattr(known, f) != getattr(model, f)]
    if known is not None and differs:
        field = differs[0]
        return (
            f"its {MODEL_GEOMETRY_ANNOTATION} stamp says {field} {getattr(model, field)!r} where the catalog's"
            f" {served} has {getattr(known, field)!r}"
        )
    return model


def native_cpu_tier(container: dict[str, Any]) -> int | None:
    """The native connector's own `cpu_bytes_to_use` (a whole number), where its kv-transfer config says it, alone
    or inside a MultiConnector, times the engines the pod runs (each engine has its own connector)."""
    value = ((kv_transfer_config(container) or {}).get("kv_connector_extra_config") or {}).get("cpu_bytes_to_use")
    if isinstance(value, int) and not isinstance(value, bool):
        return value * local_engines(container)
    return offload_bytes(container) or None


def stamp_problems(pod: Pod) -> list[tuple[str, object, str, str]]:
    """(annotation, its value, what it is not, what it says) for each stamp of a connector's workload that is
    missing or not what it must be (a whole number; the model's geometry)."""
    out: list[tuple[str, object, str, str]] = []
    if transfer_block_of(pod) is None:
        what = "the tokens per block its connector moves between host memory and the accelerator (the connector's"
        what += " transfer block)"
        value = _stamp(pod, KV_TRANSFER_BLOCK_ANNOTATION)
        out.append((KV_TRANSFER_BLOCK_ANNOTATION, value, "not a positive whole number as a string", what))
    if cpu_tier_of(pod) is None:
        what = "the bytes of the CPU tier one of its pods holds in its own memory (the connector's pod_cpu_tier)"
        out.append(
            (CPU_TIER_BYTES_ANNOTATION, _stamp(pod, CPU_TIER_BYTES_ANNOTATION), "not a whole number as a string", what)
        )
    geometry = _stamp(pod, MODEL_GEOMETRY_ANNOTATION)
    try:
        model_from_stamp("", geometry)
    except StampError as error:
        what = "the geometry the plan sized its model by (components/catalog/geometry_stamp.py)"
        out.append((MODEL_GEOMETRY_ANNOTATION, geometry, f"not a model's geometry ({error})", what))
    return out


def holds_devices(resources: list[Resource], pod: Pod) -> bool:
    """Whether any container of the pod requests a catalog accelerator's devices (whichever profile's)."""
    return any(devices_of(resources, pod, c, p) for c in pod.containers() for p in ACCELERATORS.values())


def kv_connectors_run(resources: list[Resource], container: dict[str, Any]) -> set[str]:
    """The `kv_connector` classes a container's kv-transfer config names (a MultiConnector's too), where the
    flag names it inline or as `$(VAR)` from a ConfigMap key (the LMCache server's clients)."""
    config = kv_transfer_config(container) or _config_from_env(resources, container)
    return {str(c["kv_connector"]) for c in connectors(config) if c.get("kv_connector")}


def _config_from_env(resources: list[Resource], container: dict[str, Any]) -> Props | None:
    argv = args(container)
    value = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--kv-transfer-config"), "")
    if not (value.startswith("$(") and value.endswith(")")):
        return None
    ref = (env(container).get(value[2:-1], {}).get("valueFrom") or {}).get("configMapKeyRef") or {}
    for r in resources:
        if r.type == "kubernetes:core/v1:ConfigMap" and (r.props.get("metadata") or {}).get("name") == ref.get("name"):
            text = (r.props.get("data") or {}).get(ref.get("key"))
            try:
                parsed = json.loads(text) if isinstance(text, str) else None
            except json.JSONDecodeError:
                return None
            return parsed if isinstance(parsed, dict) else None
    return None


def connectors_run(resources: list[Resource], pod: Pod) -> set[str]:
    """The keys of the registry's connectors whose mark a pod's containers show: the `kv_connector` class its
    kv-transfer config names, or its engine flag on the command line (HiCache takes no kv-transfer config)."""
    out = set()
    for container in pod.containers(init=False):
        classes, argv = kv_connectors_run(resources, container), args(container)
        for c in IMPLEMENTATIONS:
            if (c.kv_connector_class and c.kv_connector_class in classes) or (c.engine_flag and c.engine_flag in argv):
                out.add(c.key)
    return out


def node_pool_accelerators(resources: list[Resource]) -> dict[str, str]:
    """The node pools the stack creates, by the key their nodes carry (`llm-d.ai/node-pool`), to the accelerator
    profile their machine type serves (components/catalog/machines.py); pools of other machines left out."""
    out = {}
    for r in resources:
        node = r.props.get("nodeConfig") or r.props  # GKE's node config, or an EKS node group's own inputs
        key = (node.get("labels") or {}).get(NODE_POOL_LABEL) if isinstance(node, dict) else None
        machine = node.get("machineType") or next(iter(r.props.get("instanceTypes") or []), None) if key else None
        if key and machine in MACHINES:
            out[str(key)] = MACHINES[str(machine)].accelerator
    return out


def _dra_requests(resources: list[Resource], pod: Pod) -> list[dict[str, Any]]:
    names = {c.get("resourceClaimTemplateName") for c in pod.spec.get("resourceClaims") or []}
    return [
        request.get("exactly") or request
        for r in resources
        if r.type.endswith(":ResourceClaimTemplate") and (r.props.get("metadata") or {}).get("name") in names
        for request in ((((r.props.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or [])
    ]


def namespace_of(resource: Resource) -> str:
    return str((resource.props.get("metadata") or {}).get("namespace") or "default")
