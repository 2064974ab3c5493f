"""StackConfig -> Pulumi resources: the Kubernetes provider, then the cache stack on it."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.cache_stack import CacheStack, CacheStackArgs
from stacks.plan import StackPlan

STACK_NAME = "llmd"


@dataclass(frozen=True)
class StackOutputs:
    namespace: pulumi.Output[str]
    router_endpoint: pulumi.Output[str]


def compose(stack_plan: StackPlan, hf_token: pulumi.Input[str]) -> StackOutputs:
    config = stack_plan.config
    provider = k8s.Provider(
        "k8s",
        kubeconfig=config.cluster.kubeconfig,
        context=config.cluster.context,
    )
    stack = CacheStack(
        STACK_NAME,
        CacheStackArgs(
            namespace=config.namespace,
            hf_token=hf_token,
            gaie_version=config.router.gaie_version,
            router_release=config.router.release,
            router_chart=config.router.chart,
            router_version=config.router.version,
            router_values=stack_plan.router_values,
            model_servers={role.spec.role: role.manifests for role in stack_plan.roles},
            lmcache_server=stack_plan.lmcache_server,
            storage_claim=stack_plan.storage_manifests[0] if stack_plan.storage_manifests else None,
            mooncake_master=stack_plan.mooncake_master,
            mooncake_client=stack_plan.mooncake_client,
            monitoring=stack_plan.monitoring,
            verification=stack_plan.verification,
        ),
        pulumi.ResourceOptions(providers=[provider]),
    )
    return StackOutputs(namespace=stack.namespace, router_endpoint=stack.router_endpoint)
