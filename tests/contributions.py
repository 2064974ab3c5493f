"""What a contributor adds, as edits of a scratch copy of the tree (tests/scratch_tree.py): an accelerator
(one that reuses an image, B200, and one with its own, MI355X), the B200 on a created pool with its price, an
in-process connector with its own tier setting, image, metrics and preset, an existing-cluster provider variant
(AKS) and a storage backend a cloud creates (FSx for Lustre on EKS), each in the files CONTRIBUTING.md's touch list
names.
The touch-list test (test_contributing.py) counts the files; the registry-list test
(test_registry_lists.py) reads every list, message and generated doc for the new keys."""

from __future__ import annotations

from pathlib import Path

from tests.scratch_tree import insert


def add_b200(tree: Path) -> None:
    """An accelerator that reuses the CUDA vLLM image: its profile and its combinations."""
    insert(
        tree / "components/catalog/accelerators.py",
        '        AcceleratorProfile(\n            key="amd",',
        """        AcceleratorProfile(
            key="b200",
            memory_bandwidth=8e12,  # B200 data sheet: 8 TB/s HBM3e
            vendor="nvidia",
            variant="gpu",
            reference_hardware="NVIDIA B200 180 GB",
            vllm_image=versions.VLLM_CUDA_IMAGE,
            device_resource="nvidia.com/gpu",
            device_memory=ByteSize(183_359 * MiB),
            device_memory_from="nvidia-smi on a B200: 183,359 MiB",
            load=H100_LOAD,
            warm_compile_ratio=GPU_WARM_COMPILE,
            rates=AcceleratorRates(
                Figure(2250 * TFLOPS, "NVIDIA HGX B200 data sheet: 4.5 PFLOPS bf16 with sparsity, half dense"),
                H200_PREFILL,
                HostLink("PCIe Gen5 x16", PCIE5_X16, "the H200 curve: the B200 links at PCIe Gen5 x16", assumed=True),
            ),
        ),
""",
        before=True,
    )
    insert(
        tree / "components/catalog/support.py",
        '    ("gpu", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
        '    ("b200", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
    )


# A created GKE pool of B200s: its machine type and its on-demand price (fixture figures).
B200_MACHINE = "a4-highgpu-8g"
B200_PRICE = 98.765  # USD per node-hour (fixture)


def add_b200_pool(tree: Path) -> None:
    """A priced accelerator on a created pool: the B200 (`add_b200`) on GKE's A4 machine type, with the combination
    the GKE preset runs (the filesystem tier), the machine type its pool creates and that machine's price row."""
    add_b200(tree)
    insert(
        tree / "components/catalog/support.py",
        '    ("gpu", "vllm", "native", "fs", "single-host"): ',
        '    ("b200", "vllm", "native", "fs", "single-host"): ComboDefaults(\n'
        "        QWEN3_32B, 2, 2, ByteSize(100 * GiB), platforms=_GPU\n"
        "    ),\n",
        before=True,
    )
    insert(
        tree / "components/catalog/machines.py",
        '        MachineType("p5.48xlarge", ',
        f'        MachineType("{B200_MACHINE}", "gke", "b200", 8, ByteSize(3968 * GB), gke_accelerator="nvidia-b200"),'
        "\n",
        before=True,
    )
    insert(
        tree / "components/catalog/prices.py",
        "PRICES: tuple[Price, ...] = (\n",
        f'    Price("{B200_MACHINE}", "us-central1", "on-demand", "hour", {B200_PRICE}, "fixture", "2026-12-04",'
        ' "8 B200s"),\n',
    )


MI355X_IMAGE = "docker.io/rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006"


def add_mi355x(tree: Path) -> None:
    """An accelerator with its own image (an AMD MI355X on ROCm's vLLM image, which the catalog does not pin):
    its profile, pinning the image and its size, and its combinations."""
    accelerators = tree / "components/catalog/accelerators.py"
    insert(
        accelerators,
        "ACCELERATORS: dict[str, AcceleratorProfile] = {\n",
        f"_MI355X_IMAGE = SizedImage({MI355X_IMAGE!r}, 24 * GiB, 'fixture: the compressed size of a ROCm vLLM image')"
        "\n\n",
        before=True,
    )
    insert(
        accelerators,
        '        AcceleratorProfile(\n            key="amd",',
        """        AcceleratorProfile(
            key="mi355x",
            rates=AcceleratorRates(
                Figure(2300 * TFLOPS, "fixture: an MI355X bf16 dense peak"),
                H200_PREFILL.scaled(0.5 / H200_GEMM_SHARE, "fixture: as the MI300X, half of peak"),
                HostLink("PCIe Gen5 x16", PCIE5_X16, "fixture: the H200 curve", assumed=True),
            ),
            memory_bandwidth=8e12,
            vendor="amd",
            variant="gpu",
            reference_hardware="AMD Instinct MI355X",
            vllm_image=_MI355X_IMAGE.reference,
            own_images=(_MI355X_IMAGE,),
            device_resource="amd.com/gpu",
            product=GpuProduct(
                "amd.com/gpu.product-name",
                "AMD_Instinct_MI355X_OAM",
                gke_accelerators=(),
                instance_types=(),
                source="fixture: AMD's node labeller names the product, as existing-mi300's pool says the MI300X",
            ),
            device_memory=ByteSize(288 * GiB),
            device_memory_from="fixture: the data sheet's 288 GB HBM3E",
            runtime=ROCM,
            sets_user_env=False,
            hf_token_optional=True,
            root_reason="fixture: ROCm's vLLM image runs as root; /dev/kfd and /dev/dri belong to the render group",
            load=LoadProfile(750 * MB, 180, "fixture: as the MI300X"),
            warm_compile_ratio=GPU_WARM_COMPILE,
        ),
""",
        before=True,
    )
    insert(
        tree / "components/catalog/support.py",
        '    ("gpu", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
        '    ("mi355x", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
    )


FIXTURE_IMAGE = "ghcr.io/example/kv-offload:v1.0.0"
FIXTURE_ALERT = "FixtureOffloadStoresSkipped"
# Where the fixture connector writes its CPU tier: a setting of vLLM's SimpleCPUOffloadConnector (vLLM 0.26.0's
# `connector_extra_config_keys`, tests/fixtures/upstream/engines/vllm-0.26.0.json) that no rule reads by name.
FIXTURE_TIER_SETTING = "cpu_bytes_to_use_per_rank"
# Its metrics: names vLLM 0.26.0's wheel defines (tests/fixtures/upstream/engines/vllm-metrics-0.26.0.json) that
# neither seed names (a fixture's choice of names, not a claim about what the connector exports).
FIXTURE_METRICS = ("vllm:kv_offload_stores_skipped_total", "vllm:kv_offload_cpu_cache_write_usage_perc")
FIXTURE_PRESET = "gpu-vllm-fixture-offload-cpu"


def add_connector(tree: Path) -> None:
    """An in-process connector of its own: vLLM's SimpleCPUOffloadConnector under a fixture key, its CPU tier in a
    setting of its own (`cpu_bytes_to_use_per_rank`), sized by its module, run from an image of its own (pinned,
    with its size, in its module), exporting a metric family of its own (an alert, a panel, lines to watch) on
    metrics the seeds never name, and a preset that runs it."""
    stores, usage = FIXTURE_METRICS
    (tree / "components/specs/connectors/fixture_offload.py").write_text(
        f'''"""A fixture connector: vLLM's SimpleCPUOffloadConnector, its CPU tier in pinned host memory per rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.catalog.startup_figures import SizedImage
from components.specs.connectors.interface import Choice, SizingInputs
from components.specs.connectors.vllm_family import VllmConnector
from components.specs.metric_family import Alert, MetricFamily, Panel, Thresholds
from components.specs.sizing import SHM_HEADROOM, Derivation, Sizes, TierSizing, sized, sizes_of
from components.units import GB, ByteSize

if TYPE_CHECKING:
    from components.specs.servers.base import ServerSpec

IMAGE = SizedImage("{FIXTURE_IMAGE}", 12 * GB, "fixture: a vLLM image's size")
STORES = "{stores}"
USAGE = "{usage}"


@dataclass(frozen=True)
class FixtureSizes(Sizes):
    per_rank: ByteSize  # `{FIXTURE_TIER_SETTING}`


def _alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            "{FIXTURE_ALERT}",
            f"sum by (pod) (rate({{STORES}}[{{t.window}}])) > 0",
            "15m",
            "{{{{ $labels.pod }}}} skips stores: its CPU tier has no free block",
            "Raise cache.tier.cpu within the pod's memory limit.",
        )
    ]


def _panels(window: str) -> list[Panel]:
    return [("Fixture CPU tier written", "percentunit", [("{{{{pod}}}}", f"max by (pod) ({{USAGE}})")])]


METRICS = MetricFamily(
    "fixture-offload", 25, _alerts, panels=_panels, watch=(f"{{STORES}} (stores skipped)", f"{{USAGE}} (CPU written)")
)


class FixtureOffload(VllmConnector):
    key = "fixture-offload"
    kv_connector_class = "SimpleCPUOffloadConnector"
    own_images = (IMAGE,)
    metric_families = (METRICS,)

    def size(self, inputs: SizingInputs) -> TierSizing:
        i = inputs
        per_rank = ByteSize(i.tier.bytes // i.tensor_parallelism)
        pod = per_rank * i.tensor_parallelism
        ranks = f"CPU tier {{i.tier.human()}} / {{i.tensor_parallelism}} ranks"
        step = Derivation("`{FIXTURE_TIER_SETTING}`", str(per_rank.bytes), ranks)
        memory = [("CPU tier (pinned)", pod), ("/dev/shm", SHM_HEADROOM)]
        sizes = FixtureSizes(per_rank)
        return sized(i.model, i.accelerator, i.tensor_parallelism, pod, memory, SHM_HEADROOM, sizes, [step])

    def pod_cpu_tier(self, sizing: TierSizing, hosts: int) -> ByteSize:
        return sizes_of(FixtureSizes, sizing).per_rank * sizing.tensor_parallelism

    def kv_transfer_config(self, spec: ServerSpec) -> dict[str, Any]:
        per_rank = sizes_of(FixtureSizes, spec.sizing).per_rank.bytes
        extra = {{"{FIXTURE_TIER_SETTING}": per_rank}}
        return {{"kv_connector": self.kv_connector_class, "kv_role": "kv_both", "kv_connector_extra_config": extra}}

    def image(self, choice: Choice) -> str:
        return IMAGE.reference


FIXTURE_OFFLOAD = FixtureOffload()
'''
    )
    (tree / f"stacks/presets/{FIXTURE_PRESET}.yaml").write_text(
        "description: NVIDIA GPU, vLLM, a fixture SimpleCPUOffloadConnector, CPU tier\n"
        "cache:\n  accelerator: gpu\n  server: vllm\n  connector: fixture-offload\n  host_type: single-host\n"
        "  tier:\n    variant: cpu\n"
    )
    registry = tree / "components/specs/connectors/__init__.py"
    insert(
        registry,
        "from components.specs.connectors.lmcache_connector import LMCACHE_CONNECTOR\n",
        "from components.specs.connectors.fixture_offload import FIXTURE_OFFLOAD\n",
        before=True,
    )
    insert(registry, '    "lmcache-server": LMCACHE_SERVER,\n', '    "fixture-offload": FIXTURE_OFFLOAD,\n')
    insert(
        tree / "components/catalog/support.py",
        '    ("gpu", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
        '    ("gpu", "vllm", "fixture-offload", "cpu", "single-host"): _NATIVE_GPU,\n',
    )


def add_aks(tree: Path) -> None:
    """An existing-cluster provider variant: AKS, reached through a kubeconfig, its pools described, Azure's own
    node label prefix reserved."""
    kinds = tree / "stacks/config/provider_kinds.py"
    insert(
        kinds,
        "STACK = ProviderKind(\n",
        'AKS = ProviderKind("aks", "deploy to an AKS cluster you have")\n',
        before=True,
    )
    insert(kinds, "(EXISTING, GKE, EKS, ", "AKS, ")
    (tree / "stacks/config/providers/aks_provider.py").write_text(
        '"""AKS: an existing Azure Kubernetes Service cluster, reached through a kubeconfig."""\n\n'
        "from __future__ import annotations\n\n"
        "from stacks.config import provider_kinds\n"
        "from stacks.config.providers.cluster_provider import ClusterProvider\n"
        "from stacks.config.providers.existing_provider import exports_kubeconfig\n\n"
        "AKS = ClusterProvider(\n"
        "    kind=provider_kinds.AKS,\n"
        "    creates=False,\n"
        '    title="AKS",\n'
        "    takes_kubeconfig=True,\n"
        "    describes_pools=True,\n"
        '    reserved_label_prefixes=("kubernetes.io", "k8s.io", "kubernetes.azure.com"),\n'
        "    exports_kubeconfig=exports_kubeconfig,\n"
        ")\n"
    )
    registry = tree / "stacks/config/providers/__init__.py"
    insert(
        registry,
        "from stacks.config.providers.cluster_provider import ClusterProvider\n",
        "from stacks.config.providers.aks_provider import AKS\n",
        before=True,
    )
    insert(registry, "(EXISTING, GKE, EKS, ", "AKS, ")


FSX_KEY = "aws-fsx-lustre"


def add_fsx_lustre(tree: Path) -> None:
    """A storage backend a cloud creates: Amazon FSx for Lustre (PERSISTENT_2) on an EKS cluster. Its record
    (limits per TiB of its tier, the evictor's Lustre timestamp and statvfs usage, its class, who creates it, what
    it is billed for), its component (the file system behind an LNet security group, the FSx CSI driver, the
    volume reserved for the tier's claim), its entry in the EKS side, and its resource type's record."""
    backends = tree / "components/catalog/storage_backends.py"
    insert(
        backends,
        "STORAGE_BACKENDS: dict[str, StorageBackend] = {",
        f"""AWS_FSX_LUSTRE = StorageBackend(
    key={FSX_KEY!r},
    title="Amazon FSx for Lustre",
    short="FSx for Lustre",
    does="Amazon FSx for Lustre (PERSISTENT_2), created with an EKS cluster",
    created_on="eks",
    storage_class="fsx-sc",
    modes={{
        "per-tib": ThroughputMode(
            "per-tib", "throughput per TiB", per_tib("fixture: FSx for Lustre PERSISTENT_2, MB/s per TiB of storage")
        )
    }},
    evictor_timestamp="atime",
    timestamp_why="the later of atime and mtime, as on Managed Lustre (fixture)",
    evictor_usage="statvfs",
    settings="lustre",
    one_claim_per_volume=True,
    capacity_steps={{tier: CapacityStep(1200, 1200, 2400, 2400) for tier in (125, 250, 500, 1000)}},
    storage_billed="capacity",
    storage_price="fsx-lustre-{{per_tib}}",
    throttle_metric="fixture: CloudWatch's AWS/FSx throughput metrics, not scraped by this stack's monitoring",
)
""",
        before=True,
    )
    insert(backends, "GCP_LUSTRE, AWS_EFS", ", AWS_FSX_LUSTRE")
    storage = tree / "components/cloud_storage.py"
    storage.write_text(
        storage.read_text()
        + '''

@dataclass(frozen=True)
class FsxLustreArgs:
    name: str
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    cluster_name: pulumi.Input[str]
    capacity_gib: int
    throughput: int  # MB/s per TiB
    volume_name: str
    claim: tuple[str, str]  # namespace, name of the claim the volume is reserved for


class FsxLustreStorage(pulumi.ComponentResource):
    """FSx for Lustre: the file system in one node subnet behind an LNet-only security group, the FSx CSI driver
    and the volume reserved for the tier's claim."""

    def __init__(self, name: str, args: FsxLustreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:storage:FsxLustreStorage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {"llm-d.ai/stack": args.name}
        nodes = [args.node_security_group_id]
        lnet = aws.ec2.SecurityGroup(
            f"{name}-lnet",
            vpc_id=args.vpc_id,
            description="Lustre from the cluster's nodes to the KV-cache file system",
            ingress=[
                {"protocol": "tcp", "from_port": 988, "to_port": 988, "security_groups": nodes},
                {"protocol": "tcp", "from_port": 1018, "to_port": 1023, "security_groups": nodes},
            ],
            tags=tags,
            opts=child,
        )
        file_system = aws.fsx.LustreFileSystem(
            f"{name}-fs",
            storage_capacity=args.capacity_gib,
            subnet_ids=args.subnet_id,
            deployment_type="PERSISTENT_2",
            per_unit_storage_throughput=args.throughput,
            file_system_type_version="2.15",
            security_group_ids=[lnet.id],
            tags=tags,
            opts=child,
        )
        driver = aws.eks.Addon(
            f"{name}-csi-driver", cluster_name=args.cluster_name, addon_name="aws-fsx-csi-driver", opts=child
        )
        csi = {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": file_system.id,
            "volumeAttributes": {"dnsname": file_system.dns_name, "mountname": file_system.mount_name},
        }
        declare(
            f"{name}-volume",
            storage.reserved_volume(args.volume_name, "fsx-sc", csi, f"{args.capacity_gib}Gi", args.claim),
            pulumi.ResourceOptions(parent=self, depends_on=[file_system, driver]),
        )
        self.register_outputs({"fileSystemId": file_system.id})
'''
    )
    side = tree / "stacks/deploy/eks_side.py"
    insert(side, "from components.cloud_storage import EfsArgs, EfsStorage", ", FsxLustreArgs, FsxLustreStorage")
    insert(side, "from components.catalog.storage_backends import AWS_EFS", ", AWS_FSX_LUSTRE")
    insert(
        side,
        "from stacks.planning.mirror import Mirror\n",
        "from components.specs.servers.base import FILES_STORAGE_CLAIM\nfrom components.units import GiB\n"
        "from stacks.planning.workload_builders import lustre_volume_name\n",
    )
    insert(
        side,
        "def autoscaling(",
        """def _fsx(
    config: StackConfig, cluster: CreatedCluster, provisioned_mibps: int | None, opts: pulumi.ResourceOptions
) -> FsxLustreStorage:
    \"\"\"FSx for Lustre: capacity and its per-TiB tier provision its throughput.\"\"\"
    assert isinstance(cluster, EksCluster), "the EKS side creates on an EKS cluster"
    namespace = config.storage.claim_namespace if config.effective_layer == "cluster" else config.namespace
    return FsxLustreStorage(
        f"{STACK_NAME}-fsx",
        FsxLustreArgs(
            name=config.cluster.name,
            vpc_id=cluster.vpc_id,
            subnet_id=cluster.private_subnet_ids[0],
            node_security_group_id=cluster.node_security_group_id,
            cluster_name=cluster.cluster_name,
            capacity_gib=config.storage.size.bytes // GiB,
            throughput=config.storage.lustre.per_unit_storage_throughput,
            volume_name=lustre_volume_name(namespace),
            claim=(namespace, FILES_STORAGE_CLAIM),
        ),
        opts,
    )


""",
        before=True,
    )
    insert(side, "{AWS_EFS.key: _efs", ", AWS_FSX_LUSTRE.key: _fsx")
    resources = tree / "components/catalog/cloud_resources.py"
    insert(
        resources,
        "GKE_CLUSTER = CloudResource(",
        f"""FSX_LUSTRE = CloudResource(
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    holds_data=True,
    protected=True,
    replace_on=("deploymentType", "subnetIds", "securityGroupIds"),
    storage_backend={FSX_KEY!r},
    offline_outputs={{"dnsName": "fs-offline.fsx.us-east-1.amazonaws.com", "mountName": "offline"}},
)
""",
        before=True,
    )
    insert(resources, "        EFS,\n", "        FSX_LUSTRE,\n")
