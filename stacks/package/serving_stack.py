"""ServingStack: a model served with its tiered prefix cache on a cluster, as a component any Pulumi language uses.

Its inputs are the stack config's keys (stacks/package/args.py, generated from the config model), planned and
composed by the very code `pulumi up` of the Python program runs, under this component: the same objects, the same
checks, the same error lines (in the consumer's property names).
"""

# No `from __future__ import annotations`: Pulumi infers the schema from these annotations at run time.

import pulumi

from stacks.deploy.compose import compose
from stacks.deploy.program import live_cluster_outputs
from stacks.deploy.protection import lifecycle_transform
from stacks.package.args import ServingStackArgs
from stacks.package.inputs import COMPONENT, planned

PACKAGE = "llmd"  # the package's name: its resources' type tokens are `llmd:index:<Component>`


class ServingStack(pulumi.ComponentResource):
    """A model served with its tiered prefix cache (HBM -> CPU RAM -> shared filesystem) on a cluster that exists."""

    # The llm-d router and its InferencePool, the model servers with their KV connector, sized from the model, the
    # accelerators, the node pool and the workload. One per Pulumi stack, as one serving stack of the Python program
    # (its children's names are the program's own).

    namespace: pulumi.Output[str]
    """the namespace of the whole cache stack"""
    router_endpoint: pulumi.Output[str]
    """the router's in-cluster URL (the endpoint picker's Service in front of the InferencePool)"""
    inference_pool: pulumi.Output[str]
    """the InferencePool the router chart creates"""
    replicas: pulumi.Output[int]
    """model-server replicas, as planned (cache.replicas, or what `auto` chose)"""
    cpu_tier_per_pod: pulumi.Output[str]
    """the CPU tier each model-server pod holds, as sized"""
    pod_memory: pulumi.Output[str]
    """the memory request of a model-server pod (the CPU tier and the engine's own)"""
    metrics_to_watch: pulumi.Output[list[str]]
    """the metrics that say whether the cache pays, by connector"""

    def __init__(self, name: str, args: ServingStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        stack_plan = planned(args, name, live_cluster_outputs)  # raises InputError: provider.py reports it
        own = pulumi.ResourceOptions(transforms=[lifecycle_transform(stack_plan.config.protect)])
        super().__init__(f"{PACKAGE}:index:{COMPONENT}", name, {}, pulumi.ResourceOptions.merge(opts, own))
        outputs = compose(stack_plan, pulumi.Output.secret(args["hf_token"]), parent=self)
        sizing, pool = stack_plan.sizing, stack_plan.inference_pool
        self.namespace = outputs.namespace
        self.router_endpoint = outputs.router_endpoint
        self.inference_pool = pulumi.Output.from_input(str((pool or {}).get("metadata", {}).get("name", "")))
        self.replicas = pulumi.Output.from_input(stack_plan.stack.replicas)
        self.cpu_tier_per_pod = pulumi.Output.from_input(sizing.cpu_tier_per_pod.human())
        self.pod_memory = pulumi.Output.from_input(sizing.pod_memory.quantity())
        self.metrics_to_watch = pulumi.Output.from_input(list(stack_plan.metrics_to_watch))
        self.register_outputs(
            {
                "namespace": self.namespace,
                "routerEndpoint": self.router_endpoint,
                "inferencePool": self.inference_pool,
                "replicas": self.replicas,
                "cpuTierPerPod": self.cpu_tier_per_pod,
                "podMemory": self.pod_memory,
                "metricsToWatch": self.metrics_to_watch,
            }
        )
