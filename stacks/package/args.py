"""ServingStack's inputs, generated from the stack config model (stacks/config/) by
stacks/package/args_codegen.py: do not edit, run `./run golden`. tests/test_package.py fails when this file differs
from a fresh generation."""

# No `from __future__ import annotations`: Pulumi's schema inference reads these annotations at run time.
# ruff: noqa: E501

from enum import Enum
from typing import Any, Required, TypedDict

import pulumi


class Preset(Enum):
    """the preset the stack starts from (stacks/presets/)"""

    AMD_VLLM_LMCACHE_CONNECTOR_CPU = "amd-vllm-lmcache-connector-cpu"
    AMD_VLLM_LMCACHE_CONNECTOR_FS = "amd-vllm-lmcache-connector-fs"
    AMD_VLLM_NATIVE_CPU = "amd-vllm-native-cpu"
    AMD_VLLM_NATIVE_CPU_PRECISE = "amd-vllm-native-cpu-precise"
    AMD_VLLM_NATIVE_FS = "amd-vllm-native-fs"
    AMD_VLLM_NATIVE_PD = "amd-vllm-native-pd"
    DEV = "dev"
    EXISTING_B60 = "existing-b60"
    EXISTING_MI300 = "existing-mi300"
    GPU_SGLANG_NATIVE_CPU = "gpu-sglang-native-cpu"
    GPU_SGLANG_NATIVE_CPU_GKE = "gpu-sglang-native-cpu-gke"
    GPU_SGLANG_NATIVE_FS = "gpu-sglang-native-fs"
    GPU_SGLANG_NATIVE_FS_GKE = "gpu-sglang-native-fs-gke"
    GPU_VLLM_LMCACHE_CONNECTOR_CPU = "gpu-vllm-lmcache-connector-cpu"
    GPU_VLLM_LMCACHE_CONNECTOR_CPU_GKE = "gpu-vllm-lmcache-connector-cpu-gke"
    GPU_VLLM_LMCACHE_CONNECTOR_FS = "gpu-vllm-lmcache-connector-fs"
    GPU_VLLM_LMCACHE_CONNECTOR_FS_GKE = "gpu-vllm-lmcache-connector-fs-gke"
    GPU_VLLM_LMCACHE_SERVER = "gpu-vllm-lmcache-server"
    GPU_VLLM_LMCACHE_SERVER_PD = "gpu-vllm-lmcache-server-pd"
    GPU_VLLM_LMCACHE_SERVER_ROUTING = "gpu-vllm-lmcache-server-routing"
    GPU_VLLM_MOONCAKE_STORE_CPU = "gpu-vllm-mooncake-store-cpu"
    GPU_VLLM_MOONCAKE_STORE_FS = "gpu-vllm-mooncake-store-fs"
    GPU_VLLM_NATIVE_CPU = "gpu-vllm-native-cpu"
    GPU_VLLM_NATIVE_CPU_GKE = "gpu-vllm-native-cpu-gke"
    GPU_VLLM_NATIVE_CPU_PRECISE = "gpu-vllm-native-cpu-precise"
    GPU_VLLM_NATIVE_FS = "gpu-vllm-native-fs"
    GPU_VLLM_NATIVE_FS_AUTOSCALE = "gpu-vllm-native-fs-autoscale"
    GPU_VLLM_NATIVE_FS_GKE = "gpu-vllm-native-fs-gke"
    GPU_VLLM_NATIVE_PD = "gpu-vllm-native-pd"
    TPU_V5P_VLLM_NATIVE_CPU = "tpu-v5p-vllm-native-cpu"
    TPU_V6_VLLM_NATIVE_CPU = "tpu-v6-vllm-native-cpu"
    TPU_V7_VLLM_NATIVE_CPU = "tpu-v7-vllm-native-cpu"
    TPU_V7_VLLM_NATIVE_CPU_MULTI_HOST = "tpu-v7-vllm-native-cpu-multi-host"
    XPU_VLLM_LMCACHE_CONNECTOR_CPU = "xpu-vllm-lmcache-connector-cpu"
    XPU_VLLM_LMCACHE_CONNECTOR_FS = "xpu-vllm-lmcache-connector-fs"
    XPU_VLLM_NATIVE_CPU = "xpu-vllm-native-cpu"
    XPU_VLLM_NATIVE_FS = "xpu-vllm-native-fs"


class ClusterProvider(Enum):
    """existing: deploy to a cluster you have; gke or eks: create the cluster too; stack: serve on the cluster of a cluster stack (`layer: cluster`) named by cluster.stack; default existing"""

    EXISTING = "existing"
    STACK = "stack"


class ClusterPlatform(Enum):
    """the seed's INFRA_PROVIDER: what the platform needs from the pods; default: gke on GKE, else base"""

    BASE = "base"
    GKE = "gke"
    AMD_CI = "amd-ci"


class ClusterArgs(TypedDict, total=False):
    """How the program reaches the cluster: one it creates (GKE, EKS), or one the user already has."""

    provider: ClusterProvider
    """existing: deploy to a cluster you have; gke or eks: create the cluster too; stack: serve on the cluster of a cluster stack (`layer: cluster`) named by cluster.stack; default existing"""
    name: str
    """name of a created cluster (and prefix of its node pools)"""
    platform: ClusterPlatform
    """the seed's INFRA_PROVIDER: what the platform needs from the pods; default: gke on GKE, else base"""
    kubeconfig: str
    """existing: path to a kubeconfig; default: the ambient one"""
    context: str
    """existing: kubeconfig context; default: the current one"""
    stack: str
    """stack: the cluster stack, `<organization>/<project>/<stack>` as `pulumi stack ls --all` names it (the local backend's organization is `organization`); required with provider stack"""
    outputs_file: str
    """stack: the cluster stack's outputs recorded as JSON (its render's cluster-outputs.json, or `pulumi stack output llmdCluster --json`), read offline; default: the repo's own Pulumi.<stack>.yaml, planned"""


class TaintEffect(Enum):
    """NoSchedule, PreferNoSchedule or NoExecute; default NoSchedule, as kubectl taint"""

    NOSCHEDULE = "NoSchedule"
    PREFERNOSCHEDULE = "PreferNoSchedule"
    NOEXECUTE = "NoExecute"


class TaintArgs(TypedDict, total=False):
    """taints the model servers tolerate"""

    key: str
    """taint key, a Kubernetes label key; required"""
    value: str
    """taint value, a Kubernetes label value; unset: the pods tolerate the key with any value (Exists)"""
    effect: TaintEffect
    """NoSchedule, PreferNoSchedule or NoExecute; default NoSchedule, as kubectl taint"""


class NodePoolArgs(TypedDict, total=False):
    """An accelerator node pool: created on GKE/EKS from a machine type, described on an existing cluster. Its hardware (devices and host memory per node) feeds scheduling and the config-time fit checks."""

    machine_type: str
    """created pools: a catalog machine type (a3-highgpu-8g, p5.48xlarge, ...); required on GKE and EKS"""
    node_count: int
    """nodes (TPU multi-host: hosts per slice)"""
    slices: int
    """TPU multi-host: one node pool per slice"""
    tpu_topology: str
    """TPU slice topology (e.g. 2x2x2); default: the machine type's from the catalog"""
    spot: bool
    """created pools: Spot (GKE) or SPOT capacity (EKS) nodes, cheaper and preemptible; default off"""
    reservation: str
    """created pools: a reservation to consume (GKE reservation name, EC2 capacity reservation id); default: none"""
    labels: dict[str, str]
    """node labels the model servers select"""
    taints: list[TaintArgs]
    """taints the model servers tolerate"""
    accelerator: str
    """existing pools: the accelerator they carry; default: the machine type's, or unchecked"""
    accelerators_per_node: int
    """existing pools: devices per node; default: the machine type's from the catalog, or unchecked"""
    host_memory: str
    """memory of one node (e.g. 2TiB), for the fit checks and tier auto; default: the machine type's"""


class CacheAccelerator(Enum):
    """accelerator family of the model servers (gpu, h200, a100, amd, xpu, tpu-v5p, tpu-v6, tpu-v7); default gpu (NVIDIA), the seed's default"""

    GPU = "gpu"
    H200 = "h200"
    A100 = "a100"
    AMD = "amd"
    XPU = "xpu"
    TPU_V5P = "tpu-v5p"
    TPU_V6 = "tpu-v6"
    TPU_V7 = "tpu-v7"


class CacheServer(Enum):
    """model server: vllm or sglang; default vllm, the seed's default"""

    VLLM = "vllm"
    SGLANG = "sglang"


class CacheConnector(Enum):
    """how KV blocks are offloaded (components/specs/connectors): native, lmcache-connector, mooncake-store, lmcache-server; default native"""

    NATIVE = "native"
    LMCACHE_CONNECTOR = "lmcache-connector"
    MOONCAKE_STORE = "mooncake-store"
    LMCACHE_SERVER = "lmcache-server"


class CacheHostType(Enum):
    """single-host, or multi-host (TPU v7 slices on a LeaderWorkerSet); default single-host"""

    SINGLE_HOST = "single-host"
    MULTI_HOST = "multi-host"


class TierVariant(Enum):
    """cpu: HBM -> CPU RAM; fs: also a shared filesystem tier (ReadWriteMany claim); default cpu, the seed's default"""

    CPU = "cpu"
    FS = "fs"


class TierArgs(TypedDict, total=False):
    """the offload tiers: variant, CPU tier size, disk size"""

    variant: TierVariant
    """cpu: HBM -> CPU RAM; fs: also a shared filesystem tier (ReadWriteMany claim); default cpu, the seed's default"""
    cpu: str
    """CPU tier per model-server pod (MooncakeStore fs: Mooncake Client DRAM per node); default: the seed's size for the combination; auto: the largest that fits the node pool"""
    disk: str
    """LMCache local disk / Mooncake Client SSD budget of the filesystem tier, per pod / per node; default: the combination's from the seed"""


class DisaggregationTransport(Enum):
    """the prefill -> decode KV handoff: nixl (vLLM's NixlConnector); default nixl, the llm-d P/D guide's"""

    NIXL = "nixl"


class PoolArgs(TypedDict, total=False):
    """One role's pool: how many pods, and what each runs."""

    replicas: Any
    """pods of this role; auto: the fewest that meet `workload.slo` by the P/D replay (prefill: its TTFT target, decode: its time-per-output-token target); default 1"""
    tensor_parallelism: int
    """devices one engine shards the model over (--tensor-parallel-size); default: `cache.tensor_parallelism`, else the combination's"""
    data_parallelism: int
    """engines in one pod (--data-parallel-size), each with its own connectors: a prefill pod's CPU tier is `cache.tier.cpu` x this; default 1"""
    accelerator: str
    """this pool's accelerator where it differs from `cache.accelerator` (gpu, h200, a100, amd, xpu, tpu-v5p, tpu-v6, tpu-v7); default: `cache.accelerator`"""
    node_pool: str
    """key of `node_pools` this pool runs on; default: `cache.node_pool`"""


class DisaggregationArgs(TypedDict, total=False):
    """Prefill and decode on separate pods: the prefill pods compute prompts into their HBM and CPU tier and hand the KV to a decode pod over the transport; the router picks one of each per request."""

    transport: DisaggregationTransport
    """the prefill -> decode KV handoff: nixl (vLLM's NixlConnector); default nixl, the llm-d P/D guide's"""
    prefill: PoolArgs
    """the prefill pool: it holds the CPU tier (`cache.tier.cpu` per engine)"""
    decode: PoolArgs
    """the decode pool: the handoff only, behind the router's P/D sidecar"""


class CacheArgs(TypedDict, total=False):
    """What serves and how it caches. Unset sizes and counts take the combination's defaults."""

    accelerator: CacheAccelerator
    """accelerator family of the model servers (gpu, h200, a100, amd, xpu, tpu-v5p, tpu-v6, tpu-v7); default gpu (NVIDIA), the seed's default"""
    server: CacheServer
    """model server: vllm or sglang; default vllm, the seed's default"""
    connector: CacheConnector
    """how KV blocks are offloaded (components/specs/connectors): native, lmcache-connector, mooncake-store, lmcache-server; default native"""
    host_type: CacheHostType
    """single-host, or multi-host (TPU v7 slices on a LeaderWorkerSet); default single-host"""
    tier: TierArgs
    """the offload tiers: variant, CPU tier size, disk size"""
    model: str
    """model served, its Hugging Face id: a catalog key, or any id with `cache.model_file`; default: the combination's from the seed (Qwen/Qwen3-32B on GPUs)"""
    model_file: str
    """a model outside the catalog: its Hugging Face config.json, a .json file inside the project relative to its root (read at plan time, never fetched; its geometry sizes the stack as a catalog model's); `cache.model` names the id the servers fetch and serve; unset: the catalog's geometry"""
    replicas: Any
    """model-server replicas (pods, or LeaderWorkerSet groups); default: the combination's from the seed (2 on GPUs); auto: the fewest that keep up with `workload` and meet `workload.slo` (the capacity plan, with the tiers as configured)"""
    tensor_parallelism: int
    """devices one replica shards the model over (--tensor-parallel-size); default: the combination's from the seed"""
    memory_fraction: float
    """share of each device's memory the engine takes for weights, activations and KV (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static); default: the guide's flag, else the engine's 0.9"""
    max_model_len: int
    """longest prompt + output a server accepts (vLLM --max-model-len, SGLang --context-length), at most the model's context; default: the combination's, else the model's context"""
    node_pool: str
    """key of `node_pools` the model servers run on; default: none (required on a created cluster)"""
    image: str
    """model-server image; default: the pinned one"""
    disaggregation: DisaggregationArgs
    """prefill and decode on separate pools (P/D over NIXL, the CPU tier on the prefill pods); vLLM with the native connector; `cache.replicas` then counts nothing (each pool has its own); default: none, one aggregated pool"""


class StorageBackend(Enum):
    """existing: a StorageClass the cluster has (storage.storage_class); gcp-lustre: GCP Managed Lustre, created with a GKE cluster; aws-efs: AWS EFS, created with an EKS cluster (elastic: the claim's size is nominal)"""

    EXISTING = "existing"
    GCP_LUSTRE = "gcp-lustre"
    AWS_EFS = "aws-efs"


class LustrePerUnitStorageThroughput(Enum):
    """MB/s per TiB: 125, 250, 500 or 1000; sets the minimum capacity and its step; default 1000, the seed's"""

    V125 = 125
    V250 = 250
    V500 = 500
    V1000 = 1000


class LustreArgs(TypedDict, total=False):
    """GCP Managed Lustre: capacity is `storage.size`; throughput per TiB sets its minimum and step."""

    per_unit_storage_throughput: LustrePerUnitStorageThroughput
    """MB/s per TiB: 125, 250, 500 or 1000; sets the minimum capacity and its step; default 1000, the seed's"""
    filesystem: str
    """Lustre file system name, 1-8 letters or digits; default kvcache"""


class EfsThroughputMode(Enum):
    """elastic: billed per GB read and written, up to its per-file-system limits; provisioned: a fixed MiB/s billed per month whatever moves (storage.efs.provisioned_mibps, else derived from the workload's replayed rates), with lower caps; default elastic"""

    ELASTIC = "elastic"
    PROVISIONED = "provisioned"


class EfsArgs(TypedDict, total=False):
    """AWS EFS: its throughput mode (its limits and how it is billed: the summary's Cost section shows both)."""

    throughput_mode: EfsThroughputMode
    """elastic: billed per GB read and written, up to its per-file-system limits; provisioned: a fixed MiB/s billed per month whatever moves (storage.efs.provisioned_mibps, else derived from the workload's replayed rates), with lower caps; default elastic"""
    provisioned_mibps: int
    """provisioned: MiB/s the file system is provisioned with; unset: derived from the workload's replayed rates (what the writes and a third of the reads need, up to the region's cap)"""


class EvictorMode(Enum):
    """auto: an evictor beside the filesystem tier's claim; off: none (a Lustre tier fills and its stores fail, an EFS tier grows without bound; the summary says when and how fast)"""

    AUTO = "auto"
    OFF = "off"


class EvictorArgs(TypedDict, total=False):
    """The filesystem tier's evictor: the connectors never delete from the shared claim, so a Deployment beside it deletes the least recently used files above the high watermark, down to the low one."""

    mode: EvictorMode
    """auto: an evictor beside the filesystem tier's claim; off: none (a Lustre tier fills and its stores fail, an EFS tier grows without bound; the summary says when and how fast)"""
    high_watermark: float
    """percent of the claim above which it deletes; unset: derived from the claim's size, the store rate and the scan rate (the summary shows the formula)"""
    low_watermark: float
    """percent of the claim it deletes down to; below high_watermark by more than one scan's stores; unset: derived"""
    scan_rate: int
    """files per second the evictor stats and deletes on the backend (modeled; its metric tier_evictor_scan_seconds measures it)"""
    budget: str
    """aws-efs: the bytes the tier's directory may hold (EFS is elastic, its claim's size nominal); default 9000 GiB, the guide's claim; other backends: storage.size"""
    image: str
    """the evictor's Python image; its script uses the stdlib"""


class StorageArgs(TypedDict, total=False):
    """The filesystem tier's ReadWriteMany claim (`llm-d-kv-cache-storage`, mounted at /mnt/files-storage)."""

    backend: StorageBackend
    """existing: a StorageClass the cluster has (storage.storage_class); gcp-lustre: GCP Managed Lustre, created with a GKE cluster; aws-efs: AWS EFS, created with an EKS cluster (elastic: the claim's size is nominal)"""
    storage_class: str
    """existing: the claim's StorageClass; empty: the cluster default"""
    size: str
    """requested capacity of the claim"""
    read_bandwidth: str
    """existing: aggregate read bytes per second of the StorageClass, shared by the pods (the payoff table's filesystem tier); unset: not derived"""
    lustre: LustreArgs
    """GCP Managed Lustre settings (storage.backend gcp-lustre)"""
    efs: EfsArgs
    """AWS EFS settings (storage.backend aws-efs)"""
    evictor: EvictorArgs
    """the filesystem tier's evictor (capacity management of the shared claim)"""
    claim_namespace: str
    """a cluster stack's Lustre volume: the namespace of the serving stack whose filesystem tier it holds (a volume binds one claim); default llm-d-tiered-prefix-cache"""


class LMCacheMode(Enum):
    """pd: P/D disaggregation"""

    PREFIX_REUSE = "prefix-reuse"
    PD = "pd"


class LMCacheHashAlgorithm(Enum):
    """chunk hash: blake3, sha256 or builtin; default blake3, LMCache's default"""

    BLAKE3 = "blake3"
    SHA256 = "sha256"
    BUILTIN = "builtin"


class LMCacheEvictionPolicy(Enum):
    """the server's eviction policy; LRU, the only one it has"""

    LRU = "LRU"


class LMCacheArgs(TypedDict, total=False):
    """The LMCache server of `cache.connector: lmcache-server` (its L1 size is `cache.tier.cpu`)."""

    version: str
    """tag of lmcache/vllm-openai, for the server and every vLLM pod"""
    mode: LMCacheMode
    """pd: P/D disaggregation"""
    test_mode: bool
    """--no-enable-prefix-caching, so a repeated prompt goes to LMCache (tests only)"""
    chunk_size: int
    """tokens per LMCache chunk, a multiple of the model server's KV block; default 256, the LMCache integration's"""
    hash_algorithm: LMCacheHashAlgorithm
    """chunk hash: blake3, sha256 or builtin; default blake3, LMCache's default"""
    isolated_ipc: bool
    """move KV over CUDA IPC without hostIPC (--isolated-ipc); default on, as the integration guide"""
    eviction_policy: LMCacheEvictionPolicy
    """the server's eviction policy; LRU, the only one it has"""
    eviction_trigger_watermark: float
    """fraction of L1 in use (0-1] that starts eviction; default 0.80, LMCache's"""
    eviction_ratio: float
    """fraction of L1 (0-1] one eviction frees; default 0.20, LMCache's"""
    max_workers: int
    """the server's worker threads; default 1, as the integration guide"""
    privileged: bool
    """run the server privileged where NVML cannot see the GPUs"""


class RouterPrefixRouting(Enum):
    """approximate: the router's own LRU indexes of the prefixes it routed (HBM, and the CPU tier at a capacity derived from its size); precise: every engine publishes its KV-cache events, the router indexes what each pod holds on every tier (llm-d's precise-prefix-cache-routing guide: a tokenizer sidecar, the event port open to the router only); refused for a connector whose engine leaves a tier unreported"""

    APPROXIMATE = "approximate"
    PRECISE = "precise"


class ResourceSizeArgs(TypedDict, total=False):
    """Requests and limits of a router container; each field overridable on its own."""

    cpu: str
    """CPU request and limit: cores (4, 0.5) or millicores (500m); default 4, the guide's router values"""
    memory: str
    """memory request and limit (e.g. 8GiB); default 8 GiB, the guide's router values"""


class RouterArgs(TypedDict, total=False):
    """the llm-d router (EPP and Envoy) Helm release"""

    release: str
    """Helm release name; the chart names its objects after its first 40 characters (`<release>-epp`), the InferencePool after all of it"""
    chart: str
    """OCI reference of the llm-d router chart, without tag; default: llm-d-router-standalone on ghcr.io"""
    version: str
    """chart version (vX.Y.Z), also the EPP and P/D sidecar image tag; default: the release the seeds tested (components/catalog/versions.py)"""
    gaie_version: str
    """Gateway API Inference Extension release whose InferencePool CRD is applied; default: the seeds' (versions.py)"""
    chart_file: str
    """the router chart packaged (.tgz) on the machine running Pulumi, used instead of pulling `chart` (air-gapped clusters, the e2e run); default: none, the chart is pulled"""
    gaie_crds_file: str
    """the Gateway API Inference Extension CRD manifests on the machine running Pulumi, applied instead of the `gaie_version` release asset; default: none, the asset is downloaded"""
    epp_replicas: int
    """endpoint picker (EPP) replicas; default 1, the chart's. Approximate routing: more run active-passive (the chart's leader election); precise: active-active, each indexing every pod's events (llm-d's guide runs 2)"""
    prefix_routing: RouterPrefixRouting
    """approximate: the router's own LRU indexes of the prefixes it routed (HBM, and the CPU tier at a capacity derived from its size); precise: every engine publishes its KV-cache events, the router indexes what each pod holds on every tier (llm-d's precise-prefix-cache-routing guide: a tokenizer sidecar, the event port open to the router only); refused for a connector whose engine leaves a tier unreported"""
    match_labels: dict[str, str]
    """labels the router selects model servers by; default: derived from the pods"""
    epp_resources: ResourceSizeArgs
    """the EPP container's CPU and memory; default 4 CPU, 8 GiB (the guide's values)"""
    proxy_resources: ResourceSizeArgs
    """the Envoy proxy container's CPU and memory; default 4 CPU, 8 GiB (the guide's values)"""


class MonitoringProvider(Enum):
    """prometheus-operator (ServiceMonitor, PodMonitors, PrometheusRule) or gke-managed-prometheus (PodMonitorings); default prometheus-operator"""

    PROMETHEUS_OPERATOR = "prometheus-operator"
    GKE_MANAGED_PROMETHEUS = "gke-managed-prometheus"


class AlertThresholdsArgs(TypedDict, total=False):
    """When the tiered-cache alerts fire (each rule's runbook line says what to do)."""

    window: str
    """rate window of every rule"""
    offload_hit_rate_floor: float
    """offload hits / queries below this"""
    hbm_hit_rate_drop: float
    """HBM hit rate below this x an hour ago"""
    loads_per_store: float
    """loaded / stored bytes below this"""
    min_load_bandwidth: str
    """bytes per second one device's CPU->HBM loads must beat (vLLM sums load bytes and load time over a pod's ranks, so their ratio is per device); default: the stack's derived break-even per device at prefix_tokens (the summary's payoff table)"""
    prefix_tokens: int
    """the prefix length (tokens) the break-even load bandwidth is derived at: longer prefixes cost more per token to recompute, so a slower load still pays off; sets min_load_bandwidth's default, the summary's verdict and `python -m stacks check`'s tiers-beat-recompute (the policy pack's `prefixTokens`); default 10000; at most the model's context less a 128-token suffix"""
    router_hit_ratio_margin: float
    """router CPU index hit ratio above the servers' by more than this"""
    lmcache_hit_rate_floor: float
    """LMCache hit tokens / requested tokens below this (0-1) fires; default 0.01"""


class MonitoringArgs(TypedDict, total=False):
    """monitors, alert rules and a dashboard"""

    enabled: bool
    """deploy monitors, alert rules and the dashboard; default off (needs the provider's CRDs)"""
    provider: MonitoringProvider
    """prometheus-operator (ServiceMonitor, PodMonitors, PrometheusRule) or gke-managed-prometheus (PodMonitorings); default prometheus-operator"""
    alerts: AlertThresholdsArgs
    """thresholds of the tiered-cache alert rules"""
    dashboard: bool
    """a Grafana dashboard ConfigMap (sidecar label grafana_dashboard)"""


class VerificationArgs(TypedDict, total=False):
    """A Job `pulumi up` waits on: the seed's verification steps, failing with the seed's messages."""

    enabled: bool
    """run the verification Job on `pulumi up`; default off (on in the dev preset)"""
    image: str
    """a Python image; the script uses the stdlib"""
    requests: int
    """requests of the shared-prefix burst"""


class ModelCacheMode(Enum):
    """auto: shared where the stack has the filesystem tier's claim, else off; shared: on that claim; dedicated: on its own ReadWriteMany claim `llm-d-model-cache`; off: every pod downloads"""

    AUTO = "auto"
    SHARED = "shared"
    DEDICATED = "dedicated"
    OFF = "off"


class ModelCacheArgs(TypedDict, total=False):
    """Model weights fetched once per stack by a Job into a ReadWriteMany volume: model servers load them from there instead of each downloading from Hugging Face, and keep their compile caches beside them."""

    mode: ModelCacheMode
    """auto: shared where the stack has the filesystem tier's claim, else off; shared: on that claim; dedicated: on its own ReadWriteMany claim `llm-d-model-cache`; off: every pod downloads"""
    revision: str
    """the model's branch, tag or commit"""
    storage_class: str
    """dedicated: the claim's StorageClass (ReadWriteMany); empty: the cluster default"""
    size: str
    """dedicated: the claim's size; default: twice the weights (a revision beside another)"""
    compile_cache: bool
    """keep vLLM, torch.compile and Triton (GPU) or XLA (TPU) caches on the volume"""
    image: str
    """the fetch Job's Python image; its script uses the stdlib"""


class ImagesMirror(Enum):
    """auto: on a created GKE cluster, an Artifact Registry remote repository per upstream registry (every image referenced through it, image streaming on the accelerator pools); on a created EKS cluster with cluster.eks.account_id, an ECR pull-through cache rule per upstream registry ECR can cache; off: pull from upstream"""

    AUTO = "auto"
    OFF = "off"


class ImagesArgs(TypedDict, total=False):
    """How images reach the nodes (docs/cold-starts.md: images pulled fast, and once)."""

    mirror: ImagesMirror
    """auto: on a created GKE cluster, an Artifact Registry remote repository per upstream registry (every image referenced through it, image streaming on the accelerator pools); on a created EKS cluster with cluster.eks.account_id, an ECR pull-through cache rule per upstream registry ECR can cache; off: pull from upstream"""
    prepull: bool
    """true: a DaemonSet on the serving pool's nodes pulls every image the serving pods run, on all nodes at once, and the model servers start after it (for clusters no mirror serves: an existing cluster, or images.mirror off); needs the serving pods placed (cache.node_pool or the accelerator's node selector)"""
    ecr_credentials: dict[str, str]
    """ARN of an existing Secrets Manager secret named ecr-pullthroughcache/... per registry that ECR caches only with a credential (docker.io, ghcr.io); unset: that registry is pulled directly"""


class ScraperArgs(TypedDict, total=False):
    """The metrics scraper the NetworkPolicies admit to the metrics ports; unset: by `monitoring.provider` (prometheus-operator: pods `app.kubernetes.io/name: prometheus` in any namespace; GKE Managed Prometheus: pods `app.kubernetes.io/name: collector` in `gmp-system`)."""

    namespace_labels: dict[str, str]
    """labels of the scraper's namespace ({}: any namespace); unset: by monitoring.provider"""
    pod_labels: dict[str, str]
    """labels of the scraper's pods; unset: by monitoring.provider"""


class NetworkPoliciesArgs(TypedDict, total=False):
    """NetworkPolicies admitting only the traffic serving needs, and the metrics scraper they admit"""

    enabled: bool
    """a NetworkPolicy per pod that admits only the traffic serving needs; turn off where the cluster's network plugin does not enforce NetworkPolicy (or other policies govern the namespace)"""
    scraper: ScraperArgs
    """the metrics scraper admitted to the metrics ports; unset fields follow monitoring.provider"""


class AutoscalingSignal(Enum):
    """requests: the EPP's request counts (`trigger`); tokens: llm-d's token-aware variant, the prefill backlog in seconds (the EPP's in-flight uncached prompt tokens over the peak prefill rate the time model derives for the stack's model, accelerator and parallelism, the same figure the router's prefix-cache-affinity-filter reads) beside the KV cache's occupancy; needs one endpoint picker (it counts the tokens it routed)"""

    REQUESTS = "requests"
    TOKENS = "tokens"


class AutoscalingTrigger(Enum):
    """with signal requests: queue (upstream's recommendation: the EPP's flow-control queue), saturation (the pool's saturation) or both; the running-requests trigger comes with each, as upstream's recipes set it"""

    QUEUE = "queue"
    SATURATION = "saturation"
    BOTH = "both"


class AutoscalingScaleDown(Enum):
    """derived: the stabilization window and rate from the stack's modeled cold start (a removed pod re-added costs two cold starts); upstream: the recipes' 300 s window, 100% per 15 s"""

    DERIVED = "derived"
    UPSTREAM = "upstream"


class AutoscalingScaleIn(Enum):
    """which model-server pod a scale-in removes: newest (the ReplicaSet controller's own order: among ready pods, the one ready for the shortest time, whatever its caches hold); cache-value (an annotator writes each pod's rank by the prompt tokens it served from HBM and its own CPU tier as its pod-deletion-cost, so the pod whose caches served least goes first, and each pod drains its requests before it stops: docs/scale-in.md)"""

    NEWEST = "newest"
    CACHE_VALUE = "cache-value"


class AutoscalingArgs(TypedDict, total=False):
    """A KEDA ScaledObject per model-server workload on the EPP's flow-control queue and pool saturation (llm-d's workload-autoscaling guide); `cache.replicas` is the initial count."""

    enabled: bool
    """true: KEDA scales the model servers between min_replicas and max_replicas; default false"""
    signal: AutoscalingSignal
    """requests: the EPP's request counts (`trigger`); tokens: llm-d's token-aware variant, the prefill backlog in seconds (the EPP's in-flight uncached prompt tokens over the peak prefill rate the time model derives for the stack's model, accelerator and parallelism, the same figure the router's prefix-cache-affinity-filter reads) beside the KV cache's occupancy; needs one endpoint picker (it counts the tokens it routed)"""
    trigger: AutoscalingTrigger
    """with signal requests: queue (upstream's recommendation: the EPP's flow-control queue), saturation (the pool's saturation) or both; the running-requests trigger comes with each, as upstream's recipes set it"""
    queue_threshold: float
    """queued requests per replica the HPA holds (upstream: 1)"""
    running_threshold: float
    """running requests per replica the HPA holds (upstream: 16)"""
    saturation_threshold: float
    """the pool saturation the HPA holds, 0..1 (upstream: 0.7, 'recommended 0.7-0.8')"""
    backlog_threshold: float
    """with signal tokens: seconds of prefill backlog per replica the HPA holds, a share of the TTFT budget (upstream: 1.5, 'interactive / short-context traffic')"""
    kv_usage_threshold: float
    """with signal tokens: pods' worth of full KV cache per replica the HPA holds (upstream: 0.8)"""
    min_replicas: int
    """fewest replicas (at least 1: scaling to zero drops every warm tier)"""
    max_replicas: int
    """most replicas; default: what the node pools hold (the fit arithmetic); above it is an error"""
    scale_down: AutoscalingScaleDown
    """derived: the stabilization window and rate from the stack's modeled cold start (a removed pod re-added costs two cold starts); upstream: the recipes' 300 s window, 100% per 15 s"""
    scale_in: AutoscalingScaleIn
    """which model-server pod a scale-in removes: newest (the ReplicaSet controller's own order: among ready pods, the one ready for the shortest time, whatever its caches hold); cache-value (an annotator writes each pod's rank by the prompt tokens it served from HBM and its own CPU tier as its pod-deletion-cost, so the pod whose caches served least goes first, and each pod drains its requests before it stops: docs/scale-in.md)"""
    gcp_project: str
    """the GCP project whose Managed Prometheus KEDA queries (monitoring.provider gke-managed-prometheus on an existing cluster); default: a created GKE cluster's cluster.gke.project"""
    prometheus_url: str
    """where KEDA queries the router's metrics with monitoring.provider prometheus-operator (the operator's `prometheus-operated` Service); GKE Managed Prometheus is queried through its frontend instead"""


class GatewayClassName(Enum):
    """the Gateway's class: on GKE one of GKE's managed classes (default gke-l7-regional-external-managed); on an existing cluster kgateway or istio, installed beforehand (required there: nothing says which)"""

    GKE_L7_REGIONAL_EXTERNAL_MANAGED = "gke-l7-regional-external-managed"
    GKE_L7_RILB = "gke-l7-rilb"
    KGATEWAY = "kgateway"
    ISTIO = "istio"


class GatewayArgs(TypedDict, total=False):
    """a cluster stack's Gateway in front of its serving stacks (layer cluster); off by default"""

    enabled: bool
    """a cluster stack's Gateway, one HTTPRoute per serving stack to its InferencePool; default off"""
    class_name: GatewayClassName
    """the Gateway's class: on GKE one of GKE's managed classes (default gke-l7-regional-external-managed); on an existing cluster kgateway or istio, installed beforehand (required there: nothing says which)"""
    name: str
    """the Gateway's name; default inference-gateway, GAIE's"""
    namespace: str
    """the Gateway's namespace (and body-based routing's); default llm-d-gateway"""
    body_routing: bool
    """the inference extension's body-based routing (BBR, chart versions.BBR_VERSION): the body's `model` picks the route; off: the routes match the header clients set themselves"""
    bbr_chart_file: str
    """the BBR chart packaged (.tgz) on the machine running Pulumi, used instead of pulling versions.BBR_CHART (air-gapped clusters, the e2e run); default: none, the chart is pulled"""
    proxy_subnet_cidr: str
    """GKE: the proxy-only subnet (REGIONAL_MANAGED_PROXY) the regional load balancer's proxies use, created in the cluster's region; unused elsewhere in the VPC; default 10.129.0.0/23, GKE's documented example"""


class PricingObjective(Enum):
    """what `cache.tier.cpu: auto` optimises with a workload: `latency` (the default) takes the smallest size within a point of prompt tokens of the best hit share the node holds; `cost` the cheapest size that keeps up (and meets workload.slo): the replicas it needs at each size (with cache.replicas: auto the capacity plan's fewest, which the plan renders; with a count, that count where it keeps up) x one replica's accelerator price, plus the filesystem tier's charges at that size (the CPU tier has no price of its own), the smallest on a tie. The filesystem tier's size is `storage.size` as configured: the plan does not choose it. The summary and `./run size` name the objective and price both choices"""

    COST = "cost"
    LATENCY = "latency"


class PricingArgs(TypedDict, total=False):
    """Prices of what the stack creates, in US dollars: the catalog's price at `rate` unless overridden here; the budget the policy pack holds the stack to; and whether `cache.tier.cpu: auto` sizes for latency (the default) or cost."""

    prices: dict[str, float]
    """USD per unit by item, over the catalog's price at pricing.rate (negotiated rates): a machine type per node-hour (`a3-highgpu-8g: 30.5`), `gke-cluster` or `eks-cluster` per hour, `efs-storage` per GB-month, `efs-read` and `efs-write` per GB, `lustre-<MB/s per TiB>` per GiB-month; the summary marks each overridden price; a key that names nothing the catalog or the stack knows is refused; a key with dots is set as a map: `--set 'pricing.prices={p5.48xlarge: 30.5}'`"""
    rate: str
    """the rate kind a node pool's machine type is priced at: `auto` (the default) prices a created pool with `spot: true` at the catalog's spot rate and every other one on demand; `on-demand`, `spot`, `committed` (a 1-year commitment) or `flex` (flex-start) prices every node pool's machine type, the system pool's included, at that kind; the cluster fee and storage have one rate each. A machine type with no row of that kind in the region is listed unpriced with the key to set"""
    machine_types: dict[str, str]
    """an existing cluster's described pools by key: the machine type each runs, priced by the catalog at pricing.region or by pricing.prices (`h100: p5.48xlarge`); unset: the pool is listed unpriced; refused on a cluster the stack creates (its pools' own machine types price it) and where a catalog machine type carries another accelerator or device count than the pool"""
    region: str
    """the region whose catalog prices an existing cluster's pools (pricing.machine_types) and a serving stack's filesystem traffic; refused on a cluster the stack creates (its own region prices it); unset: they are priced only by pricing.prices"""
    monthly_budget: float
    """US dollars per month the stack may cost (`25000` or `25000 USD/month`); set, the policy pack's monthly-budget rule refuses a stack whose planned cost is above it (mandatory); unset, the advisory monthly-budget-default rule reports a cost above the pack's own defaultMonthlyBudget (none unless the pack's config sets it)"""
    objective: PricingObjective
    """what `cache.tier.cpu: auto` optimises with a workload: `latency` (the default) takes the smallest size within a point of prompt tokens of the best hit share the node holds; `cost` the cheapest size that keeps up (and meets workload.slo): the replicas it needs at each size (with cache.replicas: auto the capacity plan's fewest, which the plan renders; with a count, that count where it keeps up) x one replica's accelerator price, plus the filesystem tier's charges at that size (the CPU tier has no price of its own), the smallest on a tie. The filesystem tier's size is `storage.size` as configured: the plan does not choose it. The summary and `./run size` name the objective and price both choices"""


class LoadType(Enum):
    """constant: evenly spaced at the stage's rate (inference-perf jitters them; here exact); poisson: int(rate x duration) requests at a Poisson process's times within each stage; default constant"""

    CONSTANT = "constant"
    POISSON = "poisson"


class LoadStageArgs(TypedDict, total=False):
    """One load stage (inference-perf's `load.stages[]`)."""

    rate: float
    """requests per second in this stage (inference-perf's load.stages[].rate); required"""
    duration: int
    """seconds of this stage's arrivals (inference-perf's load.stages[].duration); required"""


class LoadArgs(TypedDict, total=False):
    """The arrivals as inference-perf's `load` section writes them (kubernetes-sigs/inference-perf, inference_perf/config/loadgen/config.py `LoadConfig`): its type and stages (components/formulas/shared_prefix.py says how each is drawn)."""

    type: LoadType
    """constant: evenly spaced at the stage's rate (inference-perf jitters them; here exact); poisson: int(rate x duration) requests at a Poisson process's times within each stage; default constant"""
    stages: list[LoadStageArgs]
    """the stages, one after another, each `rate` requests a second for `duration` seconds (inference-perf's load.stages); required"""
    base_seed: int
    """poisson: the first draw's arrival seed, the next draws' base_seed + 1, ... (inference-perf's load.base_seed); default 0"""
    draws: int
    """poisson: independent draws of the arrivals, one after another, whose requests' percentiles the plan pools; default 3 (constant arrivals are one draw)"""


class SharedPrefixArgs(TypedDict, total=False):
    """inference-perf's `data.shared_prefix` (kubernetes-sigs/inference-perf, inference_perf/config/datagen/ config.py `SharedPrefix`, fixed lengths only), with its arrivals: one constant-rate stage (`request_rate`, `duration`) or inference-perf's `load` section."""

    num_groups: int
    """distinct system prompts, each shared by its group's prompts (inference-perf's data.shared_prefix.num_groups); required"""
    num_prompts_per_group: int
    """prompts sharing one system prompt, each with its own question (inference-perf's data.shared_prefix.num_prompts_per_group); required"""
    system_prompt_len: int
    """tokens of each group's system prompt, a multiple of workload.block_tokens (inference-perf's data.shared_prefix.system_prompt_len, a fixed value); required"""
    question_len: int
    """tokens of each prompt's own question after the system prompt (inference-perf's data.shared_prefix.question_len, a fixed value); required"""
    output_len: int
    """tokens each request generates (inference-perf's data.shared_prefix.output_len, a fixed value); required"""
    request_rate: float
    """requests per second, evenly spaced, each asking a prompt drawn uniformly from all groups' prompts (inference-perf's load.stages[].rate of a constant load); unset: load"""
    duration: int
    """seconds of arrivals (inference-perf's load.stages[].duration); unset: load"""
    load: LoadArgs
    """the arrivals as inference-perf's load section: type (constant or poisson) and stages; unset: request_rate and duration"""
    seed: int
    """seed of the prompt draws, so a plan is reproducible (inference-perf's data.shared_prefix.seed); default 0"""


class SloArgs(TypedDict, total=False):
    """What the replicas must meet on the workload, by the capacity plan's time model (at least one target)."""

    ttft_p90: float
    """time to first token, 90th percentile over the workload's requests, in seconds, met at the pessimistic edge of the time model's error on comparable published runs where there are some (`./run size` says which); unset: no TTFT target"""
    tpot_p90: float
    """time per output token after the first, 90th percentile over the requests, in seconds; unset: no TPOT target"""


class WorkloadArgs(TypedDict, total=False):
    """Exactly one of `trace` and `shared_prefix`."""

    trace: str
    """a trace in the Mooncake format (JSON lines: timestamp in ms, input_length, output_length, hash_ids), a regular .jsonl file inside the project, relative to its root, at most 512 MiB; unset: shared_prefix"""
    shared_prefix: SharedPrefixArgs
    """a synthetic shared-prefix workload (inference-perf's shared_prefix data shape and a constant rate); unset: trace"""
    block_tokens: int
    """prompt tokens per hash block: a trace's hash_ids hold one id per block; default 512, the Mooncake traces'"""
    slo: SloArgs
    """the latency targets the replicas must meet on this workload (`cache.replicas: auto` takes the fewest that do); unset: the replicas need only keep up"""


class ServingStackArgs(TypedDict, total=False):
    """A model served with its tiered prefix cache on a cluster that exists: the keys of a stack's config (`./run keys`), in camelCase."""

    hf_token: Required[pulumi.Input[str]]
    """Hugging Face token, kept a secret and stored in the llm-d-hf-token Secret"""
    preset: Preset
    """the preset the stack starts from (a file in stacks/presets/); its keys are merged under the ones set here; default: the seed's default deployment"""
    namespace: str
    """namespace of the whole cache stack, a DNS label; default llm-d-tiered-prefix-cache, the guide's"""
    cluster: ClusterArgs
    """where the stack runs: an existing cluster, or one created on GKE or EKS"""
    node_pools: dict[str, NodePoolArgs]
    """accelerator node pools by key: created with the cluster, or described on an existing one; default none"""
    cache: CacheArgs
    """what serves and how it caches: accelerator, server, connector, tiers, model, replicas"""
    storage: StorageArgs
    """the filesystem tier's ReadWriteMany claim and its backend"""
    lmcache: LMCacheArgs
    """the per-node LMCache server (cache.connector lmcache-server only)"""
    router: RouterArgs
    """the llm-d router (EPP and Envoy) Helm release"""
    monitoring: MonitoringArgs
    """monitors, alert rules and a dashboard"""
    verification: VerificationArgs
    """the post-deploy verification Job"""
    model_cache: ModelCacheArgs
    """model weights fetched once per stack into a ReadWriteMany volume"""
    protect: bool
    """protect the state a destroy or rename would lose (Lustre, EFS, the tier's claim, a created cluster, GKE deletion protection); false removes them on purpose"""
    images: ImagesArgs
    """how images reach the nodes: a registry mirror on created GKE and EKS clusters (images.mirror)"""
    network_policies: NetworkPoliciesArgs
    """NetworkPolicies admitting only the traffic serving needs, and the metrics scraper they admit"""
    autoscaling: AutoscalingArgs
    """KEDA scaling the model servers on the router's queue or saturation; off by default"""
    gateway: GatewayArgs
    """a cluster stack's Gateway in front of its serving stacks (layer cluster); off by default"""
    pricing: PricingArgs
    """prices of what the stack creates (the catalog's on-demand prices, overrides) and its monthly budget"""
    workload: WorkloadArgs
    """the workload the stack is sized for: a Mooncake-format trace (workload.trace) or a synthetic shared-prefix workload (workload.shared_prefix); default: none"""
