"""What a contributor adds, as edits of a scratch copy of the tree (tests/scratch_tree.py): an accelerator,
an in-process connector and an existing-cluster provider variant, each in the files CONTRIBUTING.md's touch
list names. The touch-list test (test_contributing.py) counts the files; the registry-list test
(test_registry_lists.py) reads every list, message and generated doc for the new keys."""

from __future__ import annotations

from pathlib import Path

from tests.scratch_tree import insert


def add_b200(tree: Path) -> None:
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


def add_connector(tree: Path) -> None:
    """An in-process connector: vLLM's OffloadingConnector under another key (what a new connector that
    differs in its flags would start from)."""
    (tree / "components/specs/connectors/fixture_offload.py").write_text(
        '"""A fixture connector: the native OffloadingConnector under its own key."""\n\n'
        "from __future__ import annotations\n\n"
        "from components.specs.connectors.native import Native\n\n\n"
        "class FixtureOffload(Native):\n"
        '    key = "fixture-offload"\n\n\n'
        "FIXTURE_OFFLOAD = FixtureOffload()\n"
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
