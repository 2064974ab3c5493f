"""The cluster and its node pools: created on GKE or EKS, or an existing one described."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator

from components.catalog import versions
from components.catalog.accelerators import ACCELERATORS
from components.catalog.machines import MACHINES
from components.catalog.platforms import PlatformKey
from components.units import ByteSize, GiB
from stacks.config import formats
from stacks.config.cluster_facts import ClusterOutputs
from stacks.config.fields import (
    MAX_NODE_MEMORY,
    Labels,
    Section,
    check_with,
    key_of,
    size_between,
    system_machine,
)
from stacks.config.provider_kinds import PROVIDER_KINDS, ProviderKey, provider_description


class GkeSettings(Section):
    """A GKE cluster this stack creates: regional control plane, private nodes, Workload Identity."""

    project: Annotated[str, check_with(formats.gcp_project)]
    """GCP project id the cluster, its pools and the Lustre instance are created in; required"""
    region: Annotated[str, check_with(formats.gcp_region)] = Field(
        description="the control plane's region, e.g. us-central1; required"
    )
    zone: str = Field(
        description="zone of the accelerator node pools and the Lustre instance, e.g. us-central1-a; required"
    )
    network: Annotated[str, check_with(formats.gcp_network)] = "default"
    """VPC network of the cluster and the Lustre instance (a name, or projects/P/global/networks/NAME for a
    Shared VPC); default: the project's `default` network"""
    subnetwork: Annotated[str, check_with(formats.gcp_subnetwork)] | None = None
    """subnetwork of the nodes (a name, or projects/P/regions/REGION/subnetworks/NAME); default: GKE picks the
    network's subnet in the region"""
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = "REGULAR"
    """GKE release channel (upgrade cadence); default REGULAR, GKE's own default"""
    master_ipv4_cidr: Annotated[str, check_with(lambda v: formats.ipv4_network(v, 28))] = "172.16.0.0/28"
    """private control plane's /28 range, unused elsewhere in the VPC; default 172.16.0.0/28, GKE's documented
    example"""
    system_machine_type: Annotated[str, check_with(system_machine("gke"))] = "e2-standard-8"
    """machine type of the system pool (router, monitoring, system pods); default e2-standard-8: fits the router's
    4+4 CPU default"""
    system_node_count: int = Field(default=1, ge=1, le=10)
    """nodes of the system pool (per zone of the region); default 1"""
    cloud_nat: bool = Field(default=True, description="private nodes pull public images through Cloud NAT")
    deletion_protection: bool = False
    """GKE deletion protection: `pulumi destroy` fails until it is off; default off, so a stack can be destroyed"""

    @field_validator("zone")
    @classmethod
    def _zone_in_region(cls, zone: str, info: ValidationInfo) -> str:
        region = info.data.get("region")
        if region and not formats.zone_in(zone, region, "-"):
            raise ValueError(f"must be a zone of region {region}: {region}-a to {region}-f")
        return zone

    @field_validator("subnetwork")
    @classmethod
    def _subnetwork_in_region(cls, subnetwork: str | None, info: ValidationInfo) -> str | None:
        region = info.data.get("region")
        parts = (subnetwork or "").split("/")
        if region and len(parts) == 6 and parts[3] != region:
            raise ValueError(f"must be a subnetwork of region {region}, the cluster's")
        return subnetwork


class EksSettings(Section):
    """An EKS cluster this stack creates, with its VPC (public subnets for NAT, private ones for nodes)."""

    region: Annotated[str, check_with(formats.aws_region)]
    """AWS region of the VPC and the cluster, e.g. us-east-1; required"""
    version: str = "1.33"
    """Kubernetes minor version of the control plane (1.N), one of components/catalog/versions.py EKS_VERSIONS;
    default 1.33"""
    vpc_cidr: Annotated[str, check_with(lambda v: formats.ipv4_network(v, 16))] = "10.0.0.0/16"
    """the VPC's private /16; public /20 and private /18 subnets are cut from it per zone; default 10.0.0.0/16"""
    availability_zones: list[str] = Field(min_length=2, max_length=3)
    """2 or 3 zones of the region, one subnet pair each; accelerator node groups use the first; required"""
    system_instance_type: Annotated[str, check_with(system_machine("eks"))] = "m6i.2xlarge"
    """instance type of the system node group; default m6i.2xlarge (8 vCPU, 32 GiB)"""
    system_node_count: int = Field(default=2, ge=1, le=10)
    """nodes of the system node group; default 2, one per zone of the first two"""
    account_id: str | None = Field(default=None, pattern=r"^[0-9]{12}$")
    """12-digit AWS account of the cluster, which ECR pull-through cache image references name
    (images.mirror auto); unset: images pulled from upstream"""

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if value not in versions.EKS_VERSIONS:
            raise ValueError(
                f"allowed: {', '.join(versions.EKS_VERSIONS)} (a version EKS offers later is added to"
                " components/catalog/versions.py EKS_VERSIONS)"
            )
        return value

    @field_validator("availability_zones")
    @classmethod
    def _zones_in_region(cls, zones: list[str], info: ValidationInfo) -> list[str]:
        region = info.data.get("region")
        if region and not all(formats.zone_in(zone, region, "") for zone in zones):
            raise ValueError(f"must be zones of region {region}: {region}a to {region}f")
        if len(set(zones)) != len(zones):
            raise ValueError("must be different zones (each gets its own subnets)")
        return zones


class ClusterConfig(Section):
    """How the program reaches the cluster: one it creates (GKE, EKS), or one the user already has."""

    provider: ProviderKey = Field(default="existing", description=provider_description("existing"))
    name: str = Field(default="llmd", description="name of a created cluster (and prefix of its node pools)")
    platform: PlatformKey | None = Field(
        default=None,
        description="the seed's INFRA_PROVIDER: what the platform needs from the pods; default: gke on GKE, else base",
    )
    kubeconfig: str | None = Field(
        default=None, min_length=1, description="existing: path to a kubeconfig; default: the ambient one"
    )
    context: str | None = Field(
        default=None, min_length=1, description="existing: kubeconfig context; default: the current one"
    )
    stack: Annotated[str, check_with(formats.pulumi_stack_reference)] | None = None
    """stack: the cluster stack, `<organization>/<project>/<stack>` as `pulumi stack ls --all` names it (the
    local backend's organization is `organization`); required with provider stack"""
    outputs_file: Annotated[str, check_with(formats.relative_json_path)] | None = None
    """stack: the cluster stack's outputs recorded as JSON (its render's cluster-outputs.json, or `pulumi stack
    output llmdCluster --json`), read offline; default: the repo's own Pulumi.<stack>.yaml, planned"""
    # A serving stack's cluster stack outputs, filled in at load (live under `pulumi up`, recorded offline): what
    # the program reads, not a key (a private attribute: not in the schema, `./run keys` or the docs).
    _outputs: ClusterOutputs | None = PrivateAttr(default=None)
    gke: GkeSettings | None = None
    """settings of the GKE cluster to create; required with provider gke"""
    eks: EksSettings | None = None
    """settings of the EKS cluster and VPC to create; required with provider eks"""

    _name_is_dns_label = field_validator("name")(formats.dns_1035_label)

    @property
    def outputs(self) -> ClusterOutputs | None:
        """The cluster stack's `llmdCluster`, on a serving stack (None on every other)."""
        return self._outputs

    def with_outputs(self, outputs: ClusterOutputs) -> ClusterConfig:
        """This section with the cluster stack's outputs the program read at load."""
        copied = self.model_copy()
        copied._outputs = outputs
        return copied

    @property
    def effective_platform(self) -> str:
        return self.platform or PROVIDER_KINDS[self.provider].platform


class Taint(Section):
    key: Annotated[str, check_with(formats.label_key)]
    """taint key, a Kubernetes label key; required"""
    value: Annotated[str, check_with(formats.label_value)] | None = None
    """taint value, a Kubernetes label value; unset: the pods tolerate the key with any value (Exists)"""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """NoSchedule, PreferNoSchedule or NoExecute; default NoSchedule, as kubectl taint"""


class NodePoolConfig(Section):
    """An accelerator node pool: created on GKE/EKS from a machine type, described on an existing cluster.

    Its hardware (devices and host memory per node) feeds scheduling and the config-time fit checks.
    """

    machine_type: Annotated[str | None, key_of(MACHINES)] = Field(
        default=None,
        description="created pools: a catalog machine type (a3-highgpu-8g, p5.48xlarge, ...); required on GKE and EKS",
    )
    node_count: int = Field(default=1, ge=0, le=1000, description="nodes (TPU multi-host: hosts per slice)")
    slices: int = Field(default=1, ge=1, le=64, description="TPU multi-host: one node pool per slice")
    tpu_topology: str | None = Field(default=None, pattern=r"^[0-9]+x[0-9]+(x[0-9]+)?$")
    """TPU slice topology (e.g. 2x2x2); default: the machine type's from the catalog"""
    spot: bool = False
    """created pools: Spot (GKE) or SPOT capacity (EKS) nodes, cheaper and preemptible; default off"""
    reservation: str | None = Field(
        default=None,
        description="created pools: a reservation to consume (GKE reservation name, EC2 capacity reservation id);"
        " default: none",
    )
    labels: Labels = Field(default_factory=dict, description="node labels the model servers select")
    taints: list[Taint] = Field(default_factory=list, description="taints the model servers tolerate")
    accelerator: Annotated[str | None, key_of(ACCELERATORS)] = Field(
        default=None,
        description="existing pools: the accelerator they carry; default: the machine type's, or unchecked",
    )
    accelerators_per_node: int | None = Field(default=None, ge=1, le=64)
    """existing pools: devices per node; default: the machine type's from the catalog, or unchecked"""
    host_memory: Annotated[ByteSize | None, size_between(ByteSize(GiB), MAX_NODE_MEMORY)] = Field(
        default=None,
        description="memory of one node (e.g. 2TiB), for the fit checks and tier auto; default: the machine type's",
    )
