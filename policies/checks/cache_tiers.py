"""Rules over the offload tiers and their connectors: memory limits hold the CPU tier, a filesystem
tier sits on a shared claim, MooncakeStore has RDMA, LMCache's clients and servers agree, prefix
caching stays on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from components.catalog import labels
from components.tier_evictor import evict_tier
from policies.checks.inventory import (
    cpu_tier_of,
    lmcache_clients,
    lmcache_servers,
)
from policies.checks.rule_types import NoConfig, Settings, Violation, setting
from policies.resources import (
    CLAIM_TYPE,
    Pod,
    Resource,
    args,
    connectors,
    env,
    image_tag,
    kv_transfer_config,
    local_engines,
    memory_volumes,
    offload_bytes,
    pods,
    quantity,
    rwx_claims,
)


def _native_tier(container: dict[str, Any]) -> int | None:
    """The native connector's own `cpu_bytes_to_use` (a whole number), where its kv-transfer config says it, alone
    or inside a MultiConnector, times the engines the pod runs (each engine has its own connector)."""
    value = ((kv_transfer_config(container) or {}).get("kv_connector_extra_config") or {}).get("cpu_bytes_to_use")
    if isinstance(value, int) and not isinstance(value, bool):
        return value * local_engines(container)
    return offload_bytes(container) or None


def memory_limit_covers_tier(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """tmpfs pages count toward the pod's memory limit: the limit must hold the CPU tier and every memory volume.
    The tier is what the workload is stamped with (`llm-d.ai/cpu-tier-bytes`: every connector's figure, and a
    per-node daemon's that holds the tier), or the native connector's own config where that says more; the
    container that holds it is the pod's with the largest limit."""
    out = []
    for pod in pods(resources):
        containers = list(pod.containers(init=False))
        configured = [t for c in containers if (t := _native_tier(c)) is not None]
        stamped = cpu_tier_of(pod)
        if stamped is None and not configured:
            continue
        tier = max([stamped or 0, *configured])
        volumes = memory_volumes(pod)
        unbounded = [v["name"] for v in volumes if not (v.get("emptyDir") or {}).get("sizeLimit")]
        sizes = [quantity(v["emptyDir"].get("sizeLimit")) for v in volumes]
        shm = sum(size.bytes for size in sizes if size is not None)
        if unbounded:
            out.append(Violation(pod.owner, f"memory-backed volume {unbounded} has no sizeLimit beside a CPU tier"))
        limits = [(quantity(((c.get("resources") or {}).get("limits") or {}).get("memory")), c) for c in containers]
        limit, container = max(limits, key=lambda lc: lc[0].bytes if lc[0] is not None else -1)
        if limit is None or limit.bytes < max(tier, shm):
            out.append(
                Violation(
                    pod.owner,
                    f"container {container.get('name')} memory limit {limit.quantity() if limit else 'unset'} is"
                    f" below its CPU tier ({tier} bytes) or its memory-backed volumes ({shm} bytes)",
                )
            )
    return out


def _writes_tier(resources: list[Resource], pod: Pod) -> bool:
    """Whether a pod writes the shared filesystem tier: the native connector's `fs` secondary tier, or (any
    connector, by its workload's CPU-tier stamp) a path under the tier's mount in its arguments, environment or
    mounts."""
    root = labels.FILES_STORAGE_MOUNT
    for container in pod.containers(init=False):
        tiers = ((kv_transfer_config(container) or {}).get("kv_connector_extra_config") or {}).get("secondary_tiers")
        if any(isinstance(t, dict) and t.get("type") == "fs" for t in tiers or []):
            return True
        if cpu_tier_of(pod) is None:
            continue
        values = [*args(container), *(str(e.get("value", "")) for e in env(container).values())]
        values += [str(m.get("mountPath", "")) for m in container.get("volumeMounts") or []]
        if any(v == root or root + "/" in v for v in values):
            return True
    return False


def filesystem_tier_needs_rwx(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """Every pod that writes the shared filesystem tier mounts it from a ReadWriteMany claim (the other pods
    write the same files)."""
    shared = rwx_claims(resources)
    out = []
    for pod in pods(resources):
        if not _writes_tier(resources, pod):
            continue
        volumes = {v.get("name"): v for v in pod.spec.get("volumes") or []}
        root = labels.FILES_STORAGE_MOUNT
        mounted = {
            m.get("name")
            for c in pod.containers()
            for m in c.get("volumeMounts") or []
            if str(m.get("mountPath", "")) == root or str(m.get("mountPath", "")).startswith(root + "/")
        }
        tier = [volumes.get(name) or {} for name in mounted] or list(volumes.values())  # mounted there, else any
        claims = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in tier]
        if not (all(c in shared for c in claims) if mounted else shared & set(claims)):
            out.append(Violation(pod.owner, "filesystem tier without a ReadWriteMany PersistentVolumeClaim"))
    return out


def _tier_claims(pod: Pod) -> set[str]:
    """The claims a pod mounts where the shared filesystem tier lives."""
    volumes = {
        v.get("name"): (v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.spec.get("volumes") or []
    }
    return {
        str(volumes[m.get("name")])
        for c in pod.containers()
        for m in c.get("volumeMounts") or []
        if m.get("mountPath") == labels.FILES_STORAGE_MOUNT and volumes.get(m.get("name"))
    }


def _evictor_problem(resources: list[Resource], pod: Pod) -> str | None:
    """Why an evictor pod cannot keep its claim below the high watermark, or None: it runs no replica, mounts
    the tier read-only, or its settings are ones the evictor refuses at start (read by the evictor's own
    parser, components/tier_evictor/evict_tier.py `Settings.from_env`)."""
    replicas = (pod.owner.props.get("spec") or {}).get("replicas", 1)  # a float through the engine's Struct
    if isinstance(replicas, bool) or not isinstance(replicas, int | float) or replicas < 1:
        return f"it runs {replicas!r} replicas"
    volumes = {v.get("name"): v for v in pod.spec.get("volumes") or []}
    for container in pod.containers(init=False):
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPath") != labels.FILES_STORAGE_MOUNT:
                continue
            claim = volumes.get(mount.get("name")) or {}
            if mount.get("readOnly") or (claim.get("persistentVolumeClaim") or {}).get("readOnly"):
                return f"container {container.get('name')} mounts the tier read-only"
        variables = {k: str(v["value"]) for k, v in env(container).items() if "value" in v}
        try:
            evict_tier.Settings.from_env(variables)
        except KeyError as e:
            return f"container {container.get('name')} sets no {e.args[0]}, which the evictor needs"
        except ValueError as e:
            return f"container {container.get('name')} has settings the evictor refuses at start ({e})"
    return None


def filesystem_tier_capacity(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """The connectors never delete from the shared tier: its claim says how its capacity is managed (the label
    `llm-d.ai/capacity-management`), and `tier-evictor` means an evictor pod that can work mounts it (at least
    one replica, the tier read-write, settings it accepts); `off` is allowed."""
    all_pods = list(pods(resources))
    evictors = [p for p in all_pods if p.labels.get(labels.WORKLOAD_LABEL) == labels.TIER_EVICTOR]
    broken = {id(p): problem for p in evictors if (problem := _evictor_problem(resources, p))}
    evicted = {claim for pod in evictors if id(pod) not in broken for claim in _tier_claims(pod)}
    managed = {
        str((r.props.get("metadata") or {}).get("name")): ((r.props.get("metadata") or {}).get("labels") or {}).get(
            labels.CAPACITY_LABEL
        )
        for r in resources
        if r.type == CLAIM_TYPE
    }
    out = [
        Violation(pod.owner, f"the tier evictor of claim {', '.join(sorted(_tier_claims(pod)))} cannot work: {problem}")
        for pod in evictors
        if (problem := broken.get(id(pod)))
    ]
    for pod in all_pods:
        if pod.labels.get(labels.WORKLOAD_LABEL) == labels.TIER_EVICTOR:
            continue
        for claim in sorted(_tier_claims(pod)):
            how = managed.get(claim)
            if how == "off" or claim in evicted:
                continue
            out.append(
                Violation(
                    pod.owner,
                    f"writes the filesystem tier on claim {claim}, which nothing evicts (no tier-evictor pod that can"
                    " work mounts it,"
                    f" and it is not labeled {labels.CAPACITY_LABEL}: off): it fills, then every store fails",
                )
            )
    return out


def mooncake_requests_rdma(resources: list[Resource], _: NoConfig) -> list[Violation]:
    out = []
    for pod in pods(resources):
        for container in pod.containers(init=False):
            kinds = {c.get("kv_connector") for c in connectors(kv_transfer_config(container))}
            if "MooncakeStoreConnector" in kinds or args(container)[:1] == ["mooncake_client"]:
                requests = (container.get("resources") or {}).get("requests") or {}
                if "rdma/ib" not in requests:
                    out.append(
                        Violation(
                            pod.owner, f"{container.get('name')} uses MooncakeStore over RDMA but requests no rdma/ib"
                        )
                    )
    return out


def lmcache_hash_seed(resources: list[Resource], _: NoConfig) -> list[Violation]:
    return [
        Violation(pod.owner, f"{c.get('name')} uses LMCache without PYTHONHASHSEED: token hashes differ per process")
        for pod, c in lmcache_clients(resources)
        if "PYTHONHASHSEED" not in env(c)
    ]


def lmcache_image_tags_match(resources: list[Resource], _: NoConfig) -> list[Violation]:
    servers = {image_tag(str(c.get("image", ""))) for _, c in lmcache_servers(resources)}
    return [
        Violation(
            pod.owner,
            f"LMCache client image {c.get('image')} does not share the server's tag {sorted(map(str, servers))}",
        )
        for pod, c in lmcache_clients(resources)
        if servers and image_tag(str(c.get("image", ""))) not in servers
    ]


def lmcache_isolated_ipc_agrees(resources: list[Resource], _: NoConfig) -> list[Violation]:
    servers = [("--isolated-ipc" in args(c)) for _, c in lmcache_servers(resources)]
    out = []
    for r in resources:
        if r.type != "kubernetes:core/v1:ConfigMap":
            continue
        for key, text in (r.props.get("data") or {}).items():
            try:
                config = json.loads(text)
            except (TypeError, json.JSONDecodeError):
                continue
            for c in connectors(config if isinstance(config, dict) else None):
                flag = (c.get("kv_connector_extra_config") or {}).get("lmcache.mp.isolated_ipc")
                if flag is not None and servers and any(bool(flag) != s for s in servers):
                    out.append(
                        Violation(
                            r, f"{key}: lmcache.mp.isolated_ipc={flag} disagrees with the server's --isolated-ipc"
                        )
                    )
    return out


@dataclass(frozen=True)
class PrefixCachingConfig(Settings):
    test_mode: bool = setting("testMode", False, "the stack runs in test mode: prefix caching may be off")


def prefix_caching_only_in_test_mode(resources: list[Resource], config: PrefixCachingConfig) -> list[Violation]:
    if config.test_mode:
        return []
    return [
        Violation(pod.owner, f"{c.get('name')} runs with --no-enable-prefix-caching outside test mode")
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if "--no-enable-prefix-caching" in args(c)
    ]
