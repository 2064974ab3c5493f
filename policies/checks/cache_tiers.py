"""Rules over the offload tiers and their connectors: memory limits hold the CPU tier, a filesystem
tier sits on a shared claim, MooncakeStore has RDMA, LMCache's clients and servers agree, prefix
caching stays on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.catalog import labels
from policies.checks.inventory import (
    lmcache_clients,
    lmcache_servers,
    model_servers,
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
    memory_volumes,
    pods,
    quantity,
    rwx_claims,
)


def memory_limit_covers_tier(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """tmpfs pages count toward the pod's memory limit: the limit must hold the tier and every memory volume."""
    out = []
    for pod in pods(resources):
        volumes = memory_volumes(pod)
        unbounded = [v["name"] for v in volumes if not (v.get("emptyDir") or {}).get("sizeLimit")]
        sizes = [quantity(v["emptyDir"].get("sizeLimit")) for v in volumes]
        shm = sum(size.bytes for size in sizes if size is not None)
        for container in pod.containers(init=False):
            limit = quantity(((container.get("resources") or {}).get("limits") or {}).get("memory"))
            tier = (kv_transfer_config(container) or {}).get("kv_connector_extra_config", {}).get("cpu_bytes_to_use")
            if tier is None:
                continue
            if unbounded:
                out.append(Violation(pod.owner, f"memory-backed volume {unbounded} has no sizeLimit beside a CPU tier"))
            if limit is None or limit.bytes < max(int(tier), shm):
                out.append(
                    Violation(
                        pod.owner,
                        f"container {container.get('name')} memory limit {limit.quantity() if limit else 'unset'} is"
                        f" below its CPU tier ({int(tier)} bytes) or its memory-backed volumes ({shm} bytes)",
                    )
                )
    return out


def filesystem_tier_needs_rwx(resources: list[Resource], _: NoConfig) -> list[Violation]:
    shared = rwx_claims(resources)
    out = []
    for pod, _container, config in model_servers(resources):
        tiers = (config.get("kv_connector_extra_config") or {}).get("secondary_tiers") or []
        if not any(t.get("type") == "fs" for t in tiers):
            continue
        pvcs = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.spec.get("volumes") or []]
        if not shared & set(pvcs):
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


def filesystem_tier_capacity(resources: list[Resource], _: NoConfig) -> list[Violation]:
    """The connectors never delete from the shared tier: its claim says how its capacity is managed (the label
    `llm-d.ai/capacity-management`), and `tier-evictor` means an evictor pod mounts it; `off` is allowed."""
    all_pods = list(pods(resources))
    evicted = {
        claim
        for pod in all_pods
        if pod.labels.get(labels.WORKLOAD_LABEL) == labels.TIER_EVICTOR
        for claim in _tier_claims(pod)
    }
    managed = {
        str((r.props.get("metadata") or {}).get("name")): ((r.props.get("metadata") or {}).get("labels") or {}).get(
            labels.CAPACITY_LABEL
        )
        for r in resources
        if r.type == CLAIM_TYPE
    }
    out = []
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
                    f"writes the filesystem tier on claim {claim}, which nothing evicts (no tier-evictor pod mounts it,"
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
    test_mode: bool = setting("testMode", False)  # the stack runs in test mode: prefix caching may be off

    @classmethod
    def read(cls, config: Mapping[str, Any]) -> PrefixCachingConfig:
        return cls(bool(config.get("testMode")))


def prefix_caching_only_in_test_mode(resources: list[Resource], config: PrefixCachingConfig) -> list[Violation]:
    if config.test_mode:
        return []
    return [
        Violation(pod.owner, f"{c.get('name')} runs with --no-enable-prefix-caching outside test mode")
        for pod in pods(resources)
        for c in pod.containers(init=False)
        if "--no-enable-prefix-caching" in args(c)
    ]
