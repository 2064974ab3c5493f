"""A cluster stack's ClusterPlan -> Pulumi resources: the cluster and its pools (when created), the registry
caches, the InferencePool CRDs once for every serving stack, the device plugin, KEDA, the shared file
system and the Gateway; exported for the serving stacks as `llmdCluster` and `kubeconfig` (a secret)."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.cluster.addons import NvidiaDevicePlugin
from components.cluster.eks import EksCluster
from components.cluster.gke import GkeCluster
from components.gateway_front import GatewayFront, GatewayFrontArgs
from components.inference_pool import InferencePoolCrds, InferencePoolCrdsArgs
from components.specs.device_plugin import nvidia_device_plugin_pools, nvidia_device_plugin_values
from stacks.config.backend_choice import configured_mibps
from stacks.config.cluster_facts import CLUSTER_OUTPUT, KUBECONFIG_OUTPUT
from stacks.deploy.compose import STACK_NAME, autoscalers, cluster_side, file_system
from stacks.deploy.protection import lifecycle_transform
from stacks.planning.cluster_plan import ClusterPlan


def compose_cluster(cluster_plan: ClusterPlan) -> pulumi.Output[str] | None:
    """Every resource of the cluster layer; returns the kubeconfig its serving stacks use (None: they use
    their own, for an existing cluster reached through the ambient kubeconfig)."""
    config = cluster_plan.config
    pulumi.runtime.register_resource_transform(lifecycle_transform(config.protect))
    side = cluster_side(config, cluster_plan.pools, cluster_plan.mirror)
    cluster, provider = side.cluster, side.provider
    opts = pulumi.ResourceOptions(providers=[provider], depends_on=[cluster] if cluster else [])
    InferencePoolCrds(
        f"{STACK_NAME}-gaie-crds",
        InferencePoolCrdsArgs(version=config.router.gaie_version, file=config.router.gaie_crds_file),
        opts,
    )
    gpu_pools = nvidia_device_plugin_pools(cluster_plan.pools)
    if cluster is not None and gpu_pools:
        NvidiaDevicePlugin(f"{STACK_NAME}-nvidia-device-plugin", nvidia_device_plugin_values(gpu_pools), opts)
    if cluster is not None and config.autoscaling.enabled:
        autoscalers(config, cluster_plan.pools, cluster_plan.mirror, cluster, opts)
    file_system(config, cluster, configured_mibps(config), opts)
    front = cluster_plan.gateway
    if front is not None:
        needs: list[pulumi.Resource] = []
        gke = config.cluster.gke
        if front.proxy_subnet_cidr is not None and gke is not None:
            needs.append(
                gcp.compute.Subnetwork(  # the regional load balancer's proxies (purpose REGIONAL_MANAGED_PROXY)
                    f"{STACK_NAME}-gateway-proxy-subnet",
                    name=f"{config.cluster.name}-gateway-proxies",
                    project=gke.project,
                    region=gke.region,
                    network=gke.network,
                    ip_cidr_range=front.proxy_subnet_cidr,
                    purpose="REGIONAL_MANAGED_PROXY",
                    role="ACTIVE",
                )
            )
        GatewayFront(
            f"{STACK_NAME}-gateway",
            GatewayFrontArgs(
                namespace=front.namespace,
                gateway=front.gateway,
                bbr_values=front.bbr_values,
                bbr_policy=front.bbr_policy,
                bbr_chart_file=config.gateway.bbr_chart_file,
            ),
            pulumi.ResourceOptions(providers=[provider], depends_on=[*([cluster] if cluster else []), *needs]),
        )
    pulumi.export(CLUSTER_OUTPUT, cluster_plan.outputs.exported())
    kubeconfig = _kubeconfig(cluster_plan, cluster)
    if kubeconfig is not None:
        pulumi.export(KUBECONFIG_OUTPUT, kubeconfig)
    return kubeconfig


def _kubeconfig(cluster_plan: ClusterPlan, cluster: GkeCluster | EksCluster | None) -> pulumi.Output[str] | None:
    if cluster is not None:
        return cluster.kubeconfig
    given = cluster_plan.config.cluster.kubeconfig
    return pulumi.Output.secret(given) if given else None
