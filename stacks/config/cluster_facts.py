"""The facts a cluster stack exports (`llmdCluster`), as typed data: no logic here (stacks/config/cluster_outputs.py
derives them and reads them back), so the cluster section can carry a serving stack's resolved copy."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from stacks.config.fields import Section

CLUSTER_OUTPUT = "llmdCluster"  # the stack output a serving stack plans from
KUBECONFIG_OUTPUT = "kubeconfig"  # the secret stack output its Kubernetes provider reads


class PoolFacts(Section):
    """A node pool as a serving stack describes it (stacks/config/cluster_section.py NodePoolConfig)."""

    accelerator: str | None = None
    accelerators_per_node: int | None = None
    host_memory: str | None = None  # a quantity (e.g. 1872G): JSON has no ByteSize
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[dict[str, str]] = Field(default_factory=list)  # key, value (optional), effect
    node_count: int = 1
    slices: int = 1
    tpu_topology: str | None = None
    machine_type: str | None = None  # what the cluster stack created it from (shown, not planned from)


class StorageFacts(Section):
    """The shared file system the serving stacks' filesystem tier claims."""

    backend: Literal["gcp-lustre", "aws-efs"]
    storage_class: str
    size: str  # a quantity
    lustre_throughput: int | None = None  # MB/s per TiB (gcp-lustre)
    claim_namespace: str | None = None  # gcp-lustre: the one namespace its volume binds a claim in


class MirrorFacts(Section):
    """The cluster's pull-through caches: the registries they serve and where (GCP project or AWS account)."""

    cloud: Literal["gke", "eks"]
    region: str
    project: str
    registries: list[str]
    direct: dict[str, str] = Field(default_factory=dict)  # registry -> why it is pulled directly
    credentials: dict[str, str] = Field(default_factory=dict)  # ECR: registry -> Secrets Manager ARN


class GatewayFacts(Section):
    name: str
    namespace: str
    class_name: str
    body_routing: bool
    proxy_subnet_cidr: str | None = None  # GKE: where the load balancer's proxies reach the serving pods from


class ClusterOutputs(Section):
    """`llmdCluster`: everything a serving stack needs of its cluster, none of it secret."""

    schema_version: Literal[1] = 1  # a change a serving stack cannot read bumps it
    stack: str  # the cluster stack's name, as its render names it
    provider: Literal["existing", "gke", "eks"]
    platform: Literal["base", "gke", "amd-ci"]
    name: str
    gaie_version: str  # the InferencePool CRDs the cluster stack applied
    node_pools: dict[str, PoolFacts] = Field(default_factory=dict)
    storage: StorageFacts | None = None
    mirror: MirrorFacts | None = None
    gateway: GatewayFacts | None = None
    keda: bool = False  # KEDA runs on the cluster (serving stacks may autoscale)
    # Whether it exports `kubeconfig`: a created cluster's, or the one an existing cluster was given; False:
    # an existing cluster reached through the ambient kubeconfig, which its serving stacks use too.
    kubeconfig_exported: bool = True

    def exported(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
