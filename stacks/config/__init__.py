"""StackConfig: the typed, frozen description of one stack. Unknown keys are rejected.

Defaults are the seed's default deployment (Qwen/Qwen3-32B on NVIDIA GPUs, vLLM, CONNECTOR=native,
VARIANT=cpu, 2 replicas x TP=2, 300 GiB CPU tier per replica); presets and stack config override them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from components.catalog import labels
from stacks.config.autoscaling_section import AutoscalingConfig
from stacks.config.cache_section import CacheConfig, LMCacheConfig
from stacks.config.cluster_section import ClusterConfig, NodePoolConfig, Taint
from stacks.config.fields import MAX_NODE_MEMORY, DnsLabel, Section
from stacks.config.gateway_section import GatewayConfig
from stacks.config.images_section import ImagesConfig
from stacks.config.observability_section import MonitoringConfig, NetworkPoliciesConfig, VerificationConfig
from stacks.config.pricing_section import PricingConfig
from stacks.config.provider_kinds import PROVIDER_KINDS
from stacks.config.router_section import RouterConfig
from stacks.config.storage_section import ModelCacheConfig, StorageConfig
from stacks.config.workload_section import WorkloadConfig


class StackConfig(Section):
    description: str = ""
    """one line on what the stack is (presets set it; `python -m stacks list` prints it); default empty"""
    layer: Literal["all", "cluster", "serving"] | None = None
    """all: the cluster and one model's cache stack in one stack; cluster: the cluster, its pools, shared file
    system, mirrors, add-ons and Gateway, exported (`llmdCluster`) for serving stacks; serving: one model's
    cache stack on a cluster stack's cluster; default: serving with cluster.provider stack, else all"""
    namespace: DnsLabel = labels.DEFAULT_NAMESPACE
    """namespace of the whole cache stack, a DNS label; default llm-d-tiered-prefix-cache, the guide's"""
    cluster: ClusterConfig = ClusterConfig()
    """where the stack runs: an existing cluster, or one created on GKE or EKS"""
    node_pools: dict[str, NodePoolConfig] = Field(default_factory=dict)
    """accelerator node pools by key: created with the cluster, or described on an existing one; default none"""
    cache: CacheConfig = CacheConfig()
    """what serves and how it caches: accelerator, server, connector, tiers, model, replicas"""
    storage: StorageConfig = StorageConfig()
    """the filesystem tier's ReadWriteMany claim and its backend"""
    lmcache: LMCacheConfig = LMCacheConfig()
    """the per-node LMCache server (cache.connector lmcache-server only)"""
    router: RouterConfig = RouterConfig()
    """the llm-d router (EPP and Envoy) Helm release"""
    monitoring: MonitoringConfig = MonitoringConfig()
    """monitors, alert rules and a dashboard"""
    verification: VerificationConfig = VerificationConfig()
    """the post-deploy verification Job"""
    model_cache: ModelCacheConfig = ModelCacheConfig()
    """model weights fetched once per stack into a ReadWriteMany volume"""
    protect: bool = Field(
        default=True,
        description="protect the state a destroy or rename would lose (Lustre, EFS, the tier's claim, a created"
        " cluster, GKE deletion protection); false removes them on purpose",
    )
    images: ImagesConfig = ImagesConfig()
    """how images reach the nodes: a registry mirror on created GKE and EKS clusters (images.mirror)"""
    network_policies: NetworkPoliciesConfig = NetworkPoliciesConfig()
    """NetworkPolicies admitting only the traffic serving needs, and the metrics scraper they admit"""
    autoscaling: AutoscalingConfig = AutoscalingConfig()
    """KEDA scaling the model servers on the router's queue or saturation; off by default"""
    gateway: GatewayConfig = GatewayConfig()
    """a cluster stack's Gateway in front of its serving stacks (layer cluster); off by default"""
    pricing: PricingConfig = PricingConfig()
    """prices of what the stack creates (the catalog's on-demand prices, overrides) and its monthly budget"""
    workload: WorkloadConfig | None = None
    """the workload the stack is sized for: a Mooncake-format trace (workload.trace) or a synthetic shared-prefix
    workload (workload.shared_prefix); default: none"""

    @property
    def effective_layer(self) -> Literal["all", "cluster", "serving"]:
        if self.layer is not None:
            return self.layer
        return PROVIDER_KINDS[self.cluster.provider].layer


SECTIONS: tuple[str, ...] = tuple(StackConfig.model_fields)

__all__ = ["MAX_NODE_MEMORY", "SECTIONS", "StackConfig", "Taint"]
