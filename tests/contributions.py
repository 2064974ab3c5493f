"""What a contributor adds, as edits of a scratch copy of the tree (tests/scratch_tree.py): an accelerator
(one that reuses an image, B200, and one with its own, MI355X), an in-process connector with its own image and
metrics, and an existing-cluster provider variant (AKS), each in the files CONTRIBUTING.md's touch list names.
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
            load=_H100_LOAD,
            warm_compile_ratio=_GPU_WARM_COMPILE,
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
            warm_compile_ratio=_GPU_WARM_COMPILE,
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
FIXTURE_ALERT = "FixtureOffloadStoresFailing"


def add_connector(tree: Path) -> None:
    """An in-process connector with its own image and metrics (a KVBM-like one): vLLM's OffloadingConnector
    under another key, run from an image of its own (pinned, with its size, in its module) and exporting a
    metric family of its own (an alert, a panel, a line to watch) beside the OffloadingConnector's."""
    (tree / "components/specs/connectors/fixture_offload.py").write_text(
        f'''"""A fixture connector: the native OffloadingConnector under its own key, image and metrics."""

from __future__ import annotations

from components.catalog.startup_figures import SizedImage
from components.specs.connectors.interface import Choice
from components.specs.connectors.native import Native
from components.specs.metric_family import Alert, MetricFamily, Panel, Thresholds
from components.units import GB

IMAGE = SizedImage({FIXTURE_IMAGE!r}, 12 * GB, "fixture: the vLLM image's size, with the connector built in")


def _alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            {FIXTURE_ALERT!r},
            f"sum(rate(vllm:kv_offload_allocation_failure_total[{{t.window}}])) > 0",
            "10m",
            "the fixture connector fails to allocate stores",
            "check the pods' CPU tier",
        )
    ]


def _panels(window: str) -> list[Panel]:
    failures = f"sum(rate(vllm:kv_offload_allocation_failure_total[{{window}}]))"
    return [("Fixture store failures", "ops", [("failures", failures)])]


WATCH = ("vllm:kv_offload_allocation_failure_total",)
METRICS = MetricFamily("fixture-offload", 25, _alerts, panels=_panels, watch=WATCH)


class FixtureOffload(Native):
    key = "fixture-offload"
    own_images = (IMAGE,)
    metric_families = (*Native.metric_families, METRICS)

    def image(self, choice: Choice) -> str:
        return IMAGE.reference


FIXTURE_OFFLOAD = FixtureOffload()
'''
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
