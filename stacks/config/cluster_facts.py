"""The facts a cluster stack exports (`llmdCluster`), as typed data: stacks/config/cluster_outputs.py derives
them and reads them back, and the cluster section carries a serving stack's resolved copy.

The one model both sides read: its fields take the grammar of the config fields they come from (names,
namespaces the cluster does not own, private CIDRs, regions, classes the platform has, sizes), so that
outputs a cluster stack could never have exported (a hand-edited file, another program's stack) are refused
where they are read (cluster_outputs.read_outputs names the source). The node pools are checked as the
serving stack's described `node_pools` (cluster_outputs.read_outputs), which they become."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from components.catalog import versions
from components.catalog.key_lists import spoken
from components.catalog.platforms import PlatformKey
from components.catalog.storage_backends import CREATED_BACKENDS, CreatedBackendKey, CreatedClass
from components.specs import images
from components.specs.connectors import OWN_IMAGES
from components.specs.gateway import gateway_class_for
from components.units import ByteSize, MiB
from stacks.config import formats
from stacks.config.fields import MAX_STORAGE, DnsLabel, OwnNamespace, Section, check_with
from stacks.config.provider_kinds import MIRROR_CLOUDS, ClusterStackProviderKey, MirrorCloudKey

_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?([KMGTPE]i?)?", re.ASCII)
_PULUMI_NAME = r"[A-Za-z0-9_.-]{1,100}"
# What a cluster stack ever mirrors: the registries of the pinned images, and those ECR caches.
_PINNED = (*versions.PINNED_IMAGES, *(i.reference for i in OWN_IMAGES))
_MIRRORED_REGISTRIES = sorted({images.split_image(i)[0] for i in _PINNED} | set(images.ECR_UPSTREAMS))


def _storage_size(value: str) -> str:
    """A quantity (JSON has no ByteSize) of the storage section's range."""
    if not _QUANTITY.fullmatch(value):
        raise ValueError("must be a Kubernetes quantity, e.g. 9000Gi")
    size = ByteSize.parse(value)
    if not ByteSize(MiB) <= size <= MAX_STORAGE:
        raise ValueError(f"must be between {ByteSize(MiB).human()} and {MAX_STORAGE.human()}")
    return value


def _reason(value: str) -> str:
    if len(value) > 200 or not value.isprintable():
        raise ValueError("must be one printable line of at most 200 characters")
    return value


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
    """The shared file system the serving stacks' filesystem tier claims (its backend's record:
    components/catalog/storage_backends.py)."""

    backend: CreatedBackendKey
    storage_class: CreatedClass  # the class the cluster stack created (its backend's)
    size: Annotated[str, check_with(_storage_size)]  # a quantity
    lustre_throughput: Literal[125, 250, 500, 1000] | None = None  # MB/s per TiB (a backend of per-TiB tiers)
    claim_namespace: OwnNamespace | None = None  # a backend whose volume binds one claim: that claim's namespace
    throughput_mode: str | None = None  # its throughput mode, where it has more than one
    provisioned_mibps: int | None = Field(default=None, ge=1)  # a provisioned mode's MiB/s

    @model_validator(mode="after")
    def _of_its_backend(self) -> StorageFacts:
        backend = CREATED_BACKENDS[self.backend]
        if self.storage_class != backend.storage_class:
            raise ValueError(f"storage_class = {self.storage_class!r}: not the class of backend {self.backend}")
        if not backend.one_claim_per_volume and (
            self.lustre_throughput is not None or self.claim_namespace is not None
        ):
            owners = spoken(k for k, b in CREATED_BACKENDS.items() if b.one_claim_per_volume)
            raise ValueError(f"lustre_throughput = (set): belongs to backend {owners}, with claim_namespace")
        if self.throughput_mode is not None and self.throughput_mode not in backend.modes:
            allowed = spoken(backend.modes)
            raise ValueError(f"throughput_mode = {self.throughput_mode!r}: backend {self.backend} has {allowed}")
        return self


class MirrorFacts(Section):
    """The cluster's pull-through caches: the registries they serve and where (GCP project or AWS account)."""

    cloud: MirrorCloudKey
    region: str
    project: str
    registries: list[Annotated[str, check_with(formats.registry_host)]]
    direct: dict[Annotated[str, check_with(formats.registry_host)], Annotated[str, check_with(_reason)]] = Field(
        default_factory=dict
    )  # registry -> why it is pulled directly
    credentials: dict[str, str] = Field(default_factory=dict)  # ECR: registry -> Secrets Manager ARN

    @field_validator("registries")
    @classmethod
    def _mirrored(cls, value: list[str]) -> list[str]:
        for registry in value:
            if registry not in _MIRRORED_REGISTRIES:
                raise ValueError(f"{registry}: allowed: {', '.join(_MIRRORED_REGISTRIES)}")
        return value

    @field_validator("credentials")
    @classmethod
    def _secret_arns(cls, value: dict[str, str]) -> dict[str, str]:
        for registry, arn in value.items():
            if registry not in ("docker.io", "ghcr.io"):  # images_section.ImagesConfig.ecr_credentials
                raise ValueError(f"{registry}: allowed: docker.io, ghcr.io")
            formats.ecr_credential_arn(registry, arn)
        return value

    @field_validator("region")
    @classmethod
    def _region_of_its_cloud(cls, value: str, info: ValidationInfo) -> str:
        cloud = MIRROR_CLOUDS.get(info.data.get("cloud", ""))
        return value if cloud is None else cloud.region(value)  # an unknown cloud: refused by its own field

    @field_validator("project")
    @classmethod
    def _project_of_its_cloud(cls, value: str, info: ValidationInfo) -> str:
        cloud = MIRROR_CLOUDS.get(info.data.get("cloud", ""))
        return value if cloud is None else cloud.project(value)

    @model_validator(mode="after")
    def _of_its_cloud(self) -> MirrorFacts:
        if MIRROR_CLOUDS[self.cloud].artifact_registry and (self.direct or self.credentials):
            raise ValueError("direct = (set): belongs to an ECR mirror (cloud eks)")
        return self


class GatewayFacts(Section):
    name: DnsLabel
    namespace: OwnNamespace
    class_name: Literal["gke-l7-regional-external-managed", "gke-l7-rilb", "kgateway", "istio"]
    body_routing: bool
    # GKE: where the load balancer's proxies reach the serving pods from
    proxy_subnet_cidr: Annotated[str, check_with(lambda v: formats.ipv4_network(v, 23))] | None = None


class ClusterOutputs(Section):
    """`llmdCluster`: everything a serving stack needs of its cluster, none of it secret."""

    schema_version: Literal[1] = 1  # a change a serving stack cannot read bumps it
    stack: str = Field(pattern=rf"^{_PULUMI_NAME}$")  # the cluster stack's name, as its render names it
    provider: ClusterStackProviderKey
    platform: PlatformKey
    name: Annotated[str, check_with(formats.dns_1035_label)]
    gaie_version: str = Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")  # the InferencePool CRDs the cluster stack applied
    node_pools: dict[str, PoolFacts] = Field(default_factory=dict)
    storage: StorageFacts | None = None
    mirror: MirrorFacts | None = None
    gateway: GatewayFacts | None = None
    keda: bool = False  # KEDA runs on the cluster (serving stacks may autoscale)
    # Whether it exports `kubeconfig`: a created cluster's, or the one an existing cluster was given; False:
    # an existing cluster reached through the ambient kubeconfig, which its serving stacks use too.
    kubeconfig_exported: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> ClusterOutputs:
        """What one cluster stack exports together: a mirror of the cloud it created, a Gateway of a class
        its platform has (a proxy subnet only where the proxies sit outside the cluster)."""
        if self.mirror is not None and self.mirror.cloud != self.provider:
            raise ValueError(f"mirror.cloud = {self.mirror.cloud!r}: a mirror of the cloud of provider {self.provider}")
        gateway = self.gateway
        if gateway is not None:
            try:
                choice = gateway_class_for(self.platform, gateway.class_name)
            except ValueError as error:
                raise ValueError(f"gateway.class_name = {gateway.class_name!r}: {error}") from None
            if choice.data_plane_in_cluster != (gateway.proxy_subnet_cidr is None):
                where = (
                    "runs its proxies in the cluster" if choice.data_plane_in_cluster else "needs its proxies' range"
                )
                raise ValueError(
                    f"gateway.proxy_subnet_cidr = {gateway.proxy_subnet_cidr!r}: class {gateway.class_name} {where}"
                )
        return self

    def exported(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
