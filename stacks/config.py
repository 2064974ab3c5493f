"""StackConfig: the typed, frozen description of one stack. Unknown keys are rejected.

Defaults are the seed's default deployment (Qwen/Qwen3-32B on NVIDIA GPUs, vLLM, CONNECTOR=native,
VARIANT=cpu, 2 replicas x TP=2, 300 GiB CPU tier per replica); presets and stack config override them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from components.catalog import labels, versions
from components.catalog.accelerators import ACCELERATORS
from components.catalog.machines import MACHINES, SYSTEM_MACHINES
from components.catalog.models import MODELS
from components.formulas import payoff
from components.specs.connectors import ConnectorKey
from components.specs.connectors.base import EngineKey, HostType, Variant
from components.units import ByteSize, GiB, MiB, TiB
from stacks import formats

# Bounds of sizes no node pool bounds: no node holds more memory (AWS u7in-32tb: 32 TiB), and a
# Kubernetes quantity is an int64 of bytes (8 EiB).
MAX_NODE_MEMORY = ByteSize(32 * TiB)
MAX_STORAGE = ByteSize(1024**4 * 1024**2)  # 1 EiB, well within an int64 quantity
HELM_RELEASE_MAX = 53  # Helm's limit on release names
# Bandwidths are bytes per second: below 1 MiB/s no storage or host link moves data (a bare `1` is a
# unit left out, and reading weights at it would take centuries).
MIN_BANDWIDTH = ByteSize(MiB)


def _is_number(annotation: Any) -> bool:
    return annotation in (int, float) or any(a in (int, float) for a in get_args(annotation))


class _Section(BaseModel):
    # Numbers are accepted for strings (`pulumi config set --path` stores `123` as a number), but
    # booleans are never numbers (`replicas: true` is a mistake, not 1).
    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True, use_attribute_docstrings=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name and _is_number(cls.model_fields[info.field_name].annotation):
            raise ValueError("must be a number, not a boolean")
        return value


def _size_between(low: ByteSize, high: ByteSize) -> AfterValidator:
    def check(value: ByteSize | str | None) -> ByteSize | str | None:
        if isinstance(value, ByteSize) and not low <= value <= high:
            raise ValueError(f"must be between {low.human()} and {high.human()}")
        return value

    return AfterValidator(check)


def _check(rule: Callable[[str], str]) -> AfterValidator:
    return AfterValidator(rule)


def _system_machine(cloud: str) -> Callable[[str], str]:
    """A machine type of the system pool from the catalog (components/catalog/machines.py SYSTEM_MACHINES)."""

    def check(value: str) -> str:
        machine = SYSTEM_MACHINES.get(value)
        if machine is None or machine.cloud != cloud:
            known = ", ".join(sorted(k for k, m in SYSTEM_MACHINES.items() if m.cloud == cloud))
            raise ValueError(
                f"allowed: {known}; another machine type is added to components/catalog/machines.py SYSTEM_MACHINES"
                " with its vCPUs and memory"
            )
        return value

    return check


DnsLabel = Annotated[str, _check(formats.dns_label)]
ImageReference = Annotated[str, _check(formats.image_reference)]
StorageClassName = Annotated[str, _check(lambda v: v and formats.dns_subdomain(v))]  # empty: the default
Labels = Annotated[dict[str, str], AfterValidator(formats.labels)]
Memory = Annotated[ByteSize, _size_between(ByteSize(MiB), MAX_NODE_MEMORY)]


class GkeSettings(_Section):
    """A GKE cluster this stack creates: regional control plane, private nodes, Workload Identity."""

    project: Annotated[str, _check(formats.gcp_project)]
    """GCP project id the cluster, its pools and the Lustre instance are created in; required"""
    region: Annotated[str, _check(formats.gcp_region)] = Field(
        description="the control plane's region, e.g. us-central1; required"
    )
    zone: str = Field(
        description="zone of the accelerator node pools and the Lustre instance, e.g. us-central1-a; required"
    )
    network: Annotated[str, _check(formats.gcp_network)] = "default"
    """VPC network of the cluster and the Lustre instance (a name, or projects/P/global/networks/NAME for a
    Shared VPC); default: the project's `default` network"""
    subnetwork: Annotated[str, _check(formats.gcp_subnetwork)] | None = None
    """subnetwork of the nodes (a name, or projects/P/regions/REGION/subnetworks/NAME); default: GKE picks the
    network's subnet in the region"""
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = "REGULAR"
    """GKE release channel (upgrade cadence); default REGULAR, GKE's own default"""
    master_ipv4_cidr: Annotated[str, _check(lambda v: formats.ipv4_network(v, 28))] = "172.16.0.0/28"
    """private control plane's /28 range, unused elsewhere in the VPC; default 172.16.0.0/28, GKE's documented
    example"""
    system_machine_type: Annotated[str, _check(_system_machine("gke"))] = "e2-standard-8"
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
            raise ValueError(f"must be a zone of region {region}, e.g. {region}-a")
        return zone

    @field_validator("subnetwork")
    @classmethod
    def _subnetwork_in_region(cls, subnetwork: str | None, info: ValidationInfo) -> str | None:
        region = info.data.get("region")
        parts = (subnetwork or "").split("/")
        if region and len(parts) == 6 and parts[3] != region:
            raise ValueError(f"must be a subnetwork of region {region}, the cluster's")
        return subnetwork


class EksSettings(_Section):
    """An EKS cluster this stack creates, with its VPC (public subnets for NAT, private ones for nodes)."""

    region: Annotated[str, _check(formats.aws_region)]
    """AWS region of the VPC and the cluster, e.g. us-east-1; required"""
    version: str = "1.33"
    """Kubernetes minor version of the control plane (1.N), one of components/catalog/versions.py EKS_VERSIONS;
    default 1.33"""
    vpc_cidr: Annotated[str, _check(lambda v: formats.ipv4_network(v, 16))] = "10.0.0.0/16"
    """the VPC's private /16; public /20 and private /18 subnets are cut from it per zone; default 10.0.0.0/16"""
    availability_zones: list[str] = Field(min_length=2, max_length=3)
    """2 or 3 zones of the region, one subnet pair each; accelerator node groups use the first; required"""
    system_instance_type: Annotated[str, _check(_system_machine("eks"))] = "m6i.2xlarge"
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
            raise ValueError(f"must be zones of region {region}, e.g. {region}a")
        if len(set(zones)) != len(zones):
            raise ValueError("must be different zones (each gets its own subnets)")
        return zones


class ClusterConfig(_Section):
    """How the program reaches the cluster: one it creates (GKE, EKS), or one the user already has."""

    provider: Literal["existing", "gke", "eks"] = "existing"
    """existing: deploy to a cluster you have; gke or eks: create the cluster too; default existing"""
    name: str = Field(default="llmd", description="name of a created cluster (and prefix of its node pools)")
    platform: Literal["base", "gke", "amd-ci"] | None = Field(
        default=None,
        description="the seed's INFRA_PROVIDER: what the platform needs from the pods; default: gke on GKE, else base",
    )
    kubeconfig: str | None = Field(default=None, description="existing: path to a kubeconfig; default: the ambient one")
    context: str | None = Field(default=None, description="existing: kubeconfig context; default: the current one")
    gke: GkeSettings | None = None
    """settings of the GKE cluster to create; required with provider gke"""
    eks: EksSettings | None = None
    """settings of the EKS cluster and VPC to create; required with provider eks"""

    _name_is_dns_label = field_validator("name")(formats.dns_1035_label)

    @property
    def effective_platform(self) -> str:
        return self.platform or ("gke" if self.provider == "gke" else "base")


class Taint(_Section):
    key: Annotated[str, _check(formats.label_key)]
    """taint key, a Kubernetes label key; required"""
    value: Annotated[str, _check(formats.label_value)] | None = None
    """taint value, a Kubernetes label value; unset: the pods tolerate the key with any value (Exists)"""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """NoSchedule, PreferNoSchedule or NoExecute; default NoSchedule, as kubectl taint"""


class NodePoolConfig(_Section):
    """An accelerator node pool: created on GKE/EKS from a machine type, described on an existing cluster.

    Its hardware (devices and host memory per node) feeds scheduling and the config-time fit checks.
    """

    machine_type: str | None = Field(
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
    accelerator: str | None = Field(
        default=None,
        description="existing pools: the accelerator they carry; default: the machine type's, or unchecked",
    )
    accelerators_per_node: int | None = Field(default=None, ge=1, le=64)
    """existing pools: devices per node; default: the machine type's from the catalog, or unchecked"""
    host_memory: Annotated[ByteSize | None, _size_between(ByteSize(GiB), MAX_NODE_MEMORY)] = Field(
        default=None,
        description="memory of one node (e.g. 2TiB), for the fit checks and tier auto; default: the machine type's",
    )

    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, value: str | None) -> str | None:
        if value is not None and value not in ACCELERATORS:
            raise ValueError(f"allowed: {', '.join(sorted(ACCELERATORS))}")
        return value

    @field_validator("machine_type")
    @classmethod
    def _known_machine(cls, value: str | None) -> str | None:
        if value is not None and value not in MACHINES:
            raise ValueError(f"allowed: {', '.join(sorted(MACHINES))}")
        return value


class TierConfig(_Section):
    variant: Variant = "cpu"
    """cpu: HBM -> CPU RAM; fs: also a shared filesystem tier (ReadWriteMany claim); default cpu, the seed's default"""
    cpu: Annotated[ByteSize | Literal["auto"] | None, _size_between(ByteSize(GiB), MAX_NODE_MEMORY)] = Field(
        default=None,
        description="CPU tier per model-server pod (MooncakeStore fs: Mooncake Client DRAM per node);"
        " default: the seed's size for the combination; auto: the largest that fits the node pool",
    )
    disk: Annotated[ByteSize | None, _size_between(ByteSize(GiB), ByteSize(1024 * TiB))] = Field(
        default=None,
        description="LMCache local disk / Mooncake Client SSD budget of the filesystem tier, per pod / per node;"
        " default: the combination's from the seed",
    )


class CacheConfig(_Section):
    """What serves and how it caches. Unset sizes and counts take the combination's defaults."""

    accelerator: str = "gpu"
    """accelerator family of the model servers (gpu, amd, xpu, tpu-v5p, tpu-v6, tpu-v7); default gpu (NVIDIA), the
    seed's default"""
    server: EngineKey = "vllm"
    """model server: vllm or sglang; default vllm, the seed's default"""
    connector: ConnectorKey = Field(
        default="native",
        description=f"how KV blocks are offloaded (components/specs/connectors): {', '.join(get_args(ConnectorKey))};"
        " default native",
    )
    host_type: HostType = "single-host"
    """single-host, or multi-host (TPU v7 slices on a LeaderWorkerSet); default single-host"""
    tier: TierConfig = TierConfig()
    """the offload tiers: variant, CPU tier size, disk size"""
    model: str | None = None
    """model served, a catalog key (Hugging Face id); default: the combination's from the seed (Qwen/Qwen3-32B on
    GPUs)"""
    replicas: int | None = Field(default=None, ge=1, le=256)
    """model-server replicas (pods, or LeaderWorkerSet groups); default: the combination's from the seed (2 on GPUs)"""
    tensor_parallelism: int | None = Field(default=None, ge=1, le=64)
    """devices one replica shards the model over (--tensor-parallel-size); default: the combination's from the seed"""
    node_pool: str | None = Field(
        default=None,
        description="key of `node_pools` the model servers run on; default: none (required on a created cluster)",
    )
    image: ImageReference | None = Field(default=None, description="model-server image; default: the pinned one")

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


class LustreSettings(_Section):
    """GCP Managed Lustre: capacity is `storage.size`; throughput per TiB sets its minimum and step."""

    per_unit_storage_throughput: Literal[125, 250, 500, 1000] = 1000
    """MB/s per TiB: 125, 250, 500 or 1000; sets the minimum capacity and its step; default 1000, the seed's"""
    filesystem: str = Field(default="kvcache", pattern=r"^[A-Za-z][A-Za-z0-9]{0,7}$")
    """Lustre file system name, 1-8 letters or digits; default kvcache"""


class StorageConfig(_Section):
    """The filesystem tier's ReadWriteMany claim (`llm-d-kv-cache-storage`, mounted at /mnt/files-storage)."""

    backend: Literal["existing", "gcp-lustre", "aws-efs"] = Field(
        default="existing", description="existing: a StorageClass the cluster has; else created with the stack"
    )
    storage_class: StorageClassName = Field(
        default="", description="existing: the claim's StorageClass; empty: the cluster default"
    )
    size: Annotated[ByteSize, _size_between(ByteSize(MiB), MAX_STORAGE)] = Field(
        default=ByteSize(9000 * GiB), description="requested capacity of the claim"
    )
    read_bandwidth: Annotated[ByteSize | None, _size_between(MIN_BANDWIDTH, MAX_STORAGE)] = Field(
        default=None,
        description="existing: aggregate read bytes per second of the StorageClass, shared by the pods"
        " (the payoff table's filesystem tier); unset: not derived",
    )
    lustre: LustreSettings = LustreSettings()
    """GCP Managed Lustre settings (storage.backend gcp-lustre)"""


class LMCacheConfig(_Section):
    """The LMCache server of `cache.connector: lmcache-server` (its L1 size is `cache.tier.cpu`)."""

    version: str = Field(
        default=versions.LMCACHE_VERSION,
        pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$",
        description="tag of lmcache/vllm-openai, for the server and every vLLM pod",
    )
    mode: Literal["prefix-reuse", "pd"] = Field(default="prefix-reuse", description="pd: P/D disaggregation")
    test_mode: bool = Field(
        default=False, description="--no-enable-prefix-caching, so a repeated prompt goes to LMCache (tests only)"
    )
    chunk_size: int = Field(default=256, ge=16, le=4096)
    """tokens per LMCache chunk, a multiple of the model server's KV block; default 256, the LMCache integration's"""
    hash_algorithm: Literal["blake3", "sha256", "builtin"] = "blake3"
    """chunk hash: blake3, sha256 or builtin; default blake3, LMCache's default"""
    isolated_ipc: bool = True
    """move KV over CUDA IPC without hostIPC (--isolated-ipc); default on, as the integration guide"""
    eviction_policy: Literal["LRU"] = "LRU"
    """the server's eviction policy; LRU, the only one it has"""
    eviction_trigger_watermark: float = Field(default=0.80, gt=0, le=1)
    """fraction of L1 in use (0-1] that starts eviction; default 0.80, LMCache's"""
    eviction_ratio: float = Field(default=0.20, gt=0, le=1)
    """fraction of L1 (0-1] one eviction frees; default 0.20, LMCache's"""
    max_workers: int = Field(default=1, ge=1, le=64)
    """the server's worker threads; default 1, as the integration guide"""
    privileged: bool = Field(default=False, description="run the server privileged where NVML cannot see the GPUs")


class ResourceSize(_Section):
    """Requests and limits of a router container; each field overridable on its own."""

    cpu: Annotated[str, _check(formats.cpu_quantity)] = "4"
    """CPU request and limit: cores (4, 0.5) or millicores (500m); default 4, the guide's router values"""
    memory: Memory = ByteSize(8 * GiB)
    """memory request and limit (e.g. 8GiB); default 8 GiB, the guide's router values"""


class RouterConfig(_Section):
    release: Annotated[str, _check(lambda v: formats.dns_1035_label(v, HELM_RELEASE_MAX))] = Field(
        default=labels.GUIDE,
        description="Helm release name; the chart names its objects after its first"
        f" {labels.ROUTER_NAME_BASE} characters (`<release>-epp`), the InferencePool after all of it",
    )
    chart: Annotated[str, _check(formats.oci_chart)] = versions.ROUTER_CHART
    """OCI reference of the llm-d router chart, without tag; default: llm-d-router-standalone on ghcr.io"""
    version: str = Field(default=versions.ROUTER_VERSION, pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")
    """chart version (vX.Y.Z), also the EPP and P/D sidecar image tag; default: the release the seeds tested
    (components/catalog/versions.py)"""
    gaie_version: str = Field(default=versions.GAIE_VERSION, pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")
    """Gateway API Inference Extension release whose InferencePool CRD is applied; default: the seeds' (versions.py)"""
    chart_file: Annotated[str | None, _check(lambda v: v if v is None else formats.local_file(v, (".tgz",)))] = None
    """the router chart packaged (.tgz) on the machine running Pulumi, used instead of pulling `chart`
    (air-gapped clusters, the e2e run); default: none, the chart is pulled"""
    gaie_crds_file: Annotated[
        str | None, _check(lambda v: v if v is None else formats.local_file(v, (".yaml", ".yml")))
    ] = None
    """the Gateway API Inference Extension CRD manifests on the machine running Pulumi, applied instead of
    the `gaie_version` release asset; default: none, the asset is downloaded"""
    epp_replicas: int = Field(default=1, ge=1, le=8)
    """endpoint picker (EPP) replicas; default 1, the chart's"""
    match_labels: Labels | None = Field(
        default=None,
        min_length=1,
        description="labels the router selects model servers by; default: derived from the pods",
    )
    epp_resources: ResourceSize = ResourceSize()
    """the EPP container's CPU and memory; default 4 CPU, 8 GiB (the guide's values)"""
    proxy_resources: ResourceSize = ResourceSize()
    """the Envoy proxy container's CPU and memory; default 4 CPU, 8 GiB (the guide's values)"""


class AlertThresholds(_Section):
    """When the tiered-cache alerts fire (each rule's runbook line says what to do)."""

    window: str = Field(default="15m", pattern=r"^[1-9][0-9]{0,4}[smh]$", description="rate window of every rule")
    offload_hit_rate_floor: float = Field(default=0.01, ge=0, le=1, description="offload hits / queries below this")
    hbm_hit_rate_drop: float = Field(default=0.8, gt=0, le=1, description="HBM hit rate below this x an hour ago")
    loads_per_store: float = Field(default=0.01, ge=0, le=1, description="loaded / stored bytes below this")
    min_load_bandwidth: Annotated[ByteSize | None, _size_between(MIN_BANDWIDTH, MAX_STORAGE)] = Field(
        default=None,
        description="bytes per second one device's CPU->HBM loads must beat (vLLM sums load bytes and load time"
        " over a pod's ranks, so their ratio is per device); default: the stack's derived break-even per device"
        " at prefix_tokens (the summary's payoff table)",
    )
    prefix_tokens: int = Field(
        default=payoff.ALERT_PREFIX_TOKENS,
        ge=1,
        description="the prefix length (tokens) the break-even load bandwidth is derived at: longer prefixes cost"
        " more per token to recompute, so a slower load still pays off; sets min_load_bandwidth's default, the"
        " summary's verdict and `python -m stacks check`'s tiers-beat-recompute (the policy pack's `prefixTokens`);"
        f" default {payoff.ALERT_PREFIX_TOKENS}; at most the model's context less a {payoff.SUFFIX_TOKENS}-token"
        " suffix",
    )
    router_hit_ratio_margin: float = Field(
        default=0.2, ge=0, le=1, description="router CPU index hit ratio above the servers' by more than this"
    )
    lmcache_hit_rate_floor: float = Field(default=0.01, ge=0, le=1)
    """LMCache hit tokens / requested tokens below this (0-1) fires; default 0.01"""


class MonitoringConfig(_Section):
    enabled: bool = False
    """deploy monitors, alert rules and the dashboard; default off (needs the provider's CRDs)"""
    provider: Literal["prometheus-operator", "gke-managed-prometheus"] = "prometheus-operator"
    """prometheus-operator (ServiceMonitor, PodMonitors, PrometheusRule) or gke-managed-prometheus (PodMonitorings);
    default prometheus-operator"""
    alerts: AlertThresholds = AlertThresholds()
    """thresholds of the tiered-cache alert rules"""
    dashboard: bool = Field(default=True, description="a Grafana dashboard ConfigMap (sidecar label grafana_dashboard)")


class VerificationConfig(_Section):
    """A Job `pulumi up` waits on: the seed's verification steps, failing with the seed's messages."""

    enabled: bool = False
    """run the verification Job on `pulumi up`; default off (on in the dev preset)"""
    image: ImageReference = Field(
        default=versions.VERIFICATION_IMAGE, description="a Python image; the script uses the stdlib"
    )
    requests: int = Field(default=10, ge=1, le=100, description="requests of the shared-prefix burst")


class ModelCacheConfig(_Section):
    """Model weights fetched once per stack by a Job into a ReadWriteMany volume: model servers load them
    from there instead of each downloading from Hugging Face, and keep their compile caches beside them."""

    mode: Literal["auto", "shared", "dedicated", "off"] = Field(
        default="auto",
        description="auto: shared where the stack has the filesystem tier's claim, else off; shared: on that"
        " claim; dedicated: on its own ReadWriteMany claim `llm-d-model-cache`; off: every pod downloads",
    )
    revision: str = Field(
        default="main", pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$", description="the model's branch, tag or commit"
    )
    storage_class: StorageClassName = Field(
        default="", description="dedicated: the claim's StorageClass (ReadWriteMany); empty: the cluster default"
    )
    size: Annotated[ByteSize | None, _size_between(ByteSize(MiB), MAX_STORAGE)] = Field(
        default=None, description="dedicated: the claim's size; default: twice the weights (a revision beside another)"
    )
    compile_cache: bool = Field(
        default=True, description="keep vLLM, torch.compile and Triton (GPU) or XLA (TPU) caches on the volume"
    )
    image: ImageReference = Field(
        default=versions.MODEL_FETCH_IMAGE, description="the fetch Job's Python image; its script uses the stdlib"
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML reads a bare `off` as false."""
        return "off" if value is False else value


class ImagesConfig(_Section):
    """How images reach the nodes (see README: images pulled fast and once)."""

    mirror: Literal["auto", "off"] = Field(
        default="auto",
        description="auto: on a created GKE cluster, an Artifact Registry remote repository per upstream registry"
        " (every image referenced through it, image streaming on the accelerator pools); on a created EKS cluster"
        " with cluster.eks.account_id, an ECR pull-through cache rule per upstream registry ECR can cache;"
        " off: pull from upstream",
    )
    prepull: bool = Field(
        default=False,
        description="true: a DaemonSet on the serving pool's nodes pulls every image the serving pods run, on all"
        " nodes at once, and the model servers start after it (for clusters no mirror serves: an existing"
        " cluster, or images.mirror off); needs the serving pods placed (cache.node_pool or the accelerator's"
        " node selector)",
    )
    ecr_credentials: dict[Literal["docker.io", "ghcr.io"], str] = Field(
        default_factory=dict,
        description="ARN of an existing Secrets Manager secret named ecr-pullthroughcache/... per registry that"
        " ECR caches only with a credential (docker.io, ghcr.io); unset: that registry is pulled directly",
    )

    @field_validator("ecr_credentials")
    @classmethod
    def _secret_arns(cls, value: dict[str, str]) -> dict[str, str]:
        for registry, arn in value.items():
            if not re.fullmatch(
                r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:ecr-pullthroughcache/[A-Za-z0-9/_+=.@-]+",
                arn,
                re.ASCII,
            ):
                raise ValueError(
                    f"{registry}: must be a Secrets Manager secret ARN named ecr-pullthroughcache/..., e.g."
                    " arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/docker-hub-AbCdEf"
                )
        return value

    @field_validator("mirror", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML reads a bare `off` as false."""
        return "off" if value is False else value


class ScraperConfig(_Section):
    """The metrics scraper the NetworkPolicies admit to the metrics ports; unset: by `monitoring.provider`
    (prometheus-operator: pods `app.kubernetes.io/name: prometheus` in any namespace; GKE Managed
    Prometheus: pods `app.kubernetes.io/name: collector` in `gmp-system`)."""

    namespace_labels: Labels | None = Field(
        default=None,
        description="labels of the scraper's namespace ({}: any namespace); unset: by monitoring.provider",
    )
    pod_labels: Labels | None = Field(
        default=None, description="labels of the scraper's pods; unset: by monitoring.provider"
    )


class NetworkPoliciesConfig(_Section):
    enabled: bool = Field(
        default=True,
        description="a NetworkPolicy per pod that admits only the traffic serving needs; turn off where the"
        " cluster's network plugin does not enforce NetworkPolicy (or other policies govern the namespace)",
    )
    scraper: ScraperConfig = ScraperConfig()
    """the metrics scraper admitted to the metrics ports; unset fields follow monitoring.provider"""


class StackConfig(_Section):
    description: str = ""
    """one line on what the stack is (presets set it; `python -m stacks list` prints it); default empty"""
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


SECTIONS: tuple[str, ...] = tuple(StackConfig.model_fields)
