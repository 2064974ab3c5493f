"""StackConfig: the typed, frozen description of one stack. Unknown keys are rejected.

Defaults are the seed's default deployment (Qwen/Qwen3-32B on NVIDIA GPUs, vLLM, CONNECTOR=native,
VARIANT=cpu, 2 replicas x TP=2, 300 GiB CPU tier per replica); presets and stack config override them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from components.catalog import labels, versions
from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.specs.units import ByteSize, GiB

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _dns_label(value: str) -> str:
    if not _DNS_LABEL.match(value):
        raise ValueError("must be a DNS label: lower-case letters, digits and '-', at most 63 characters")
    return value


class ClusterConfig(_Section):
    """How the program reaches the cluster. `existing`: a cluster the user already has."""

    provider: Literal["existing"] = "existing"
    platform: Literal["base", "gke", "amd-ci"] = Field(
        default="base", description="the seed's INFRA_PROVIDER: what the cluster's platform needs from the pods"
    )
    kubeconfig: str | None = Field(default=None, description="path to a kubeconfig; default: the ambient one")
    context: str | None = Field(default=None, description="kubeconfig context; default: the current one")


class Taint(_Section):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class NodePoolConfig(_Section):
    """An accelerator node pool as the scheduler sees it (on an existing cluster: described, not created)."""

    labels: dict[str, str] = Field(default_factory=dict, description="node labels the model servers select")
    taints: list[Taint] = Field(default_factory=list, description="taints the model servers tolerate")


class TierConfig(_Section):
    variant: Literal["cpu", "fs"] = "cpu"
    cpu: ByteSize | None = Field(
        default=None,
        description="CPU tier per model-server pod (MooncakeStore fs: Mooncake Client DRAM per node);"
        " default: the seed's size for the combination",
    )
    disk: ByteSize | None = Field(
        default=None, description="LMCache local disk / Mooncake Client SSD budget of the filesystem tier"
    )

    @field_validator("cpu")
    @classmethod
    def _at_least_a_gib(cls, value: ByteSize | None) -> ByteSize | None:
        if value is not None and value.bytes < GiB:
            raise ValueError("the CPU tier must be at least 1GiB")
        return value


class CacheConfig(_Section):
    """What serves and how it caches. Unset sizes and counts take the combination's defaults."""

    accelerator: str = "gpu"
    server: Literal["vllm", "sglang"] = "vllm"
    connector: Literal["native", "lmcache-connector", "mooncake-store", "lmcache-server"] = "native"
    host_type: Literal["single-host", "multi-host"] = "single-host"
    tier: TierConfig = TierConfig()
    model: str | None = None
    replicas: int | None = Field(default=None, ge=1, le=256)
    tensor_parallelism: int | None = Field(default=None, ge=1, le=64)
    node_pool: str | None = Field(default=None, description="key of `node_pools` the model servers run on")
    image: str | None = Field(default=None, description="model-server image; default: the pinned one")

    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, value: str) -> str:
        if value not in ACCELERATORS:
            raise ValueError(f"allowed: {', '.join(sorted(ACCELERATORS))}")
        return value

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str | None) -> str | None:
        if value is not None and value not in MODELS:
            raise ValueError(f"allowed: {', '.join(sorted(MODELS))}")
        return value


class StorageConfig(_Section):
    """The filesystem tier's ReadWriteMany claim (`llm-d-kv-cache-storage`, mounted at /mnt/files-storage)."""

    storage_class: str = Field(default="", description="StorageClass of the claim; empty: the cluster default")
    size: ByteSize = Field(default=ByteSize(9000 * GiB), description="requested capacity of the claim")


class LMCacheConfig(_Section):
    """The LMCache server of `cache.connector: lmcache-server` (its L1 size is `cache.tier.cpu`)."""

    version: str = Field(
        default=versions.LMCACHE_VERSION,
        pattern=r"^v\d+\.\d+\.\d+$",
        description="tag of lmcache/vllm-openai, for the server and every vLLM pod",
    )
    mode: Literal["prefix-reuse", "pd"] = Field(default="prefix-reuse", description="pd: P/D disaggregation")
    test_mode: bool = Field(
        default=False, description="--no-enable-prefix-caching, so a repeated prompt goes to LMCache (tests only)"
    )
    chunk_size: int = Field(default=256, ge=16, le=4096)
    hash_algorithm: Literal["blake3", "sha256", "builtin"] = "blake3"
    isolated_ipc: bool = True
    eviction_policy: Literal["LRU"] = "LRU"
    eviction_trigger_watermark: float = Field(default=0.80, gt=0, le=1)
    eviction_ratio: float = Field(default=0.20, gt=0, le=1)
    max_workers: int = Field(default=1, ge=1, le=64)
    privileged: bool = Field(default=False, description="run the server privileged where NVML cannot see the GPUs")


class ResourceSize(_Section):
    cpu: str = Field(pattern=r"^\d+(\.\d+)?m?$")
    memory: ByteSize


class RouterConfig(_Section):
    release: str = Field(default=labels.GUIDE, description="Helm release name; objects are named after it")
    chart: str = versions.ROUTER_CHART
    version: str = Field(default=versions.ROUTER_VERSION, pattern=r"^v\d+\.\d+\.\d+$")
    gaie_version: str = Field(default=versions.GAIE_VERSION, pattern=r"^v\d+\.\d+\.\d+$")
    epp_replicas: int = Field(default=1, ge=1, le=8)
    match_labels: dict[str, str] | None = Field(
        default=None, description="labels the router selects model servers by; default: derived from the pods"
    )
    epp_resources: ResourceSize = ResourceSize(cpu="4", memory=ByteSize(8 * GiB))
    proxy_resources: ResourceSize = ResourceSize(cpu="4", memory=ByteSize(8 * GiB))

    _release_is_dns_label = field_validator("release")(_dns_label)


class AlertThresholds(_Section):
    """When the tiered-cache alerts fire (each rule's runbook line says what to do)."""

    window: str = Field(default="15m", pattern=r"^\d+[smh]$", description="rate window of every rule")
    offload_hit_rate_floor: float = Field(default=0.01, ge=0, le=1, description="offload hits / queries below this")
    hbm_hit_rate_drop: float = Field(default=0.8, gt=0, le=1, description="HBM hit rate below this x an hour ago")
    loads_per_store: float = Field(default=0.01, ge=0, le=1, description="loaded / stored bytes below this")
    min_load_bandwidth: ByteSize = Field(
        default=ByteSize(2 * 1000**3), description="bytes per second a CPU->HBM load must beat (2GB: PCIe-bound)"
    )
    router_hit_ratio_margin: float = Field(
        default=0.2, ge=0, le=1, description="router CPU index hit ratio above the servers' by more than this"
    )
    lmcache_hit_rate_floor: float = Field(default=0.01, ge=0, le=1)


class MonitoringConfig(_Section):
    enabled: bool = False
    provider: Literal["prometheus-operator", "gke-managed-prometheus"] = "prometheus-operator"
    alerts: AlertThresholds = AlertThresholds()
    dashboard: bool = Field(default=True, description="a Grafana dashboard ConfigMap (sidecar label grafana_dashboard)")


class VerificationConfig(_Section):
    """A Job `pulumi up` waits on: the seed's verification steps, failing with the seed's messages."""

    enabled: bool = False
    image: str = Field(default=versions.VERIFICATION_IMAGE, description="a Python image; the script uses the stdlib")
    requests: int = Field(default=10, ge=1, le=100, description="requests of the shared-prefix burst")


class StackConfig(_Section):
    description: str = ""
    namespace: str = labels.DEFAULT_NAMESPACE
    cluster: ClusterConfig = ClusterConfig()
    node_pools: dict[str, NodePoolConfig] = Field(default_factory=dict)
    cache: CacheConfig = CacheConfig()
    storage: StorageConfig = StorageConfig()
    lmcache: LMCacheConfig = LMCacheConfig()
    router: RouterConfig = RouterConfig()
    monitoring: MonitoringConfig = MonitoringConfig()
    verification: VerificationConfig = VerificationConfig()

    _namespace_is_dns_label = field_validator("namespace")(_dns_label)


SECTIONS: tuple[str, ...] = tuple(StackConfig.model_fields)
