"""Every list of keys comes from its registry: in a scratch copy of the tree the test adds a provider (AKS, an
existing-cluster variant), an accelerator (B200) and a connector (a fixture in-process one) in their own files
only (tests/contributions.py), then reads the copy's allowed lists, error lines, generated docs and the component
package's generated inputs: each new key is in every one of them, and no line that names all of a registry's other
keys leaves it out (a list copied by hand, in a `Literal`, a message or a docstring, would)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.contributions import add_aks, add_b200, add_connector
from tests.scratch_tree import copy_tree, run_json

# What the copy says of its keys: the config's allowed lists, its refusals and the generated pages.
PROBE = """
import json, typing
from components.catalog.accelerators import ACCELERATORS
from components.specs.connectors import BY_KEY
from stacks.config import loading
from stacks.config.cluster_facts import ClusterOutputs
from stacks.config.cluster_section import ClusterConfig
from stacks.config.cache_section import CacheConfig
from stacks.config.errors import ConfigError
from stacks.config.provider_kinds import PROVIDER_KINDS
from stacks.review import docs_pages
from stacks.package.args_codegen import generate

def refusal(preset, *overrides):
    try:
        loading.load_preset(preset, list(overrides))
    except ConfigError as error:
        return str(error)
    return None

allowed = lambda model, field: list(typing.get_args(model.model_fields[field].annotation))
print(json.dumps({
    "keys": {"provider": list(PROVIDER_KINDS), "accelerator": list(ACCELERATORS), "connector": list(BY_KEY)},
    "allowed": {
        "cluster.provider": allowed(ClusterConfig, "provider"),
        "llmdCluster.provider": allowed(ClusterOutputs, "provider"),
        "cache.connector": allowed(CacheConfig, "connector"),
    },
    "refusals": {
        "cluster.provider": refusal("gpu-vllm-native-cpu", "cluster.provider=banana"),
        "cache.accelerator": refusal("gpu-vllm-native-cpu", "cache.accelerator=banana"),
        "cache.connector": refusal("gpu-vllm-native-cpu", "cache.connector=banana"),
        "cluster.kubeconfig": refusal("gke-h100-lustre", "cluster.kubeconfig=/tmp/kubeconfig"),
    },
    "pages": docs_pages.pages(),
    "package_args": generate(),
}))
"""
NEW = {"provider": "aks", "accelerator": "b200", "connector": "fixture-offload"}


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tree = copy_tree(tmp_path_factory.mktemp("registries"))
    for add in (add_aks, add_b200, add_connector):
        add(tree)
    result: dict[str, Any] = run_json(tree, PROBE)
    return result


def _names(line: str, key: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(key)}(?![\w-])", line) is not None


def test_the_new_keys_are_in_the_registries_the_copy_reads(said: dict[str, Any]) -> None:
    for kind, key in NEW.items():
        assert key in said["keys"][kind], kind


def test_the_allowed_lists_have_the_new_keys(said: dict[str, Any]) -> None:
    assert said["allowed"] == {
        "cluster.provider": ["existing", "gke", "eks", "aks", "stack"],
        "llmdCluster.provider": ["existing", "gke", "eks", "aks"],
        "cache.connector": ["native", "lmcache-connector", "mooncake-store", "lmcache-server", "fixture-offload"],
    }


def test_the_refusals_name_the_new_keys(said: dict[str, Any]) -> None:
    refusals = said["refusals"]
    assert refusals["cluster.provider"].endswith("input should be 'existing', 'gke', 'eks', 'aks' or 'stack'")
    assert "b200" in refusals["cache.accelerator"].partition("allowed: ")[2].split(", ")
    assert refusals["cache.connector"].endswith(
        "input should be 'native', 'lmcache-connector', 'mooncake-store', 'lmcache-server' or 'fixture-offload'"
    )
    assert refusals["cluster.kubeconfig"].endswith("applies only with cluster.provider existing or aks, not gke")


def test_the_generated_docs_name_the_new_keys(said: dict[str, Any]) -> None:
    rows = {line.split(" | ")[0]: line for line in said["pages"]["configuration.md"].splitlines()}
    assert "aks: deploy to an AKS cluster you have;" in rows["| `llmd:cluster.provider`"]
    assert "'eks' \\| 'aks' \\| 'stack'" in rows["| `llmd:cluster.provider`"]
    assert "(gpu, h200, a100, b200, amd, xpu, tpu-v5p, tpu-v6, tpu-v7)" in rows["| `llmd:cache.accelerator`"]
    assert "lmcache-server, fixture-offload; default native" in rows["| `llmd:cache.connector`"]


def test_the_component_packages_inputs_take_the_new_keys(said: dict[str, Any]) -> None:
    """`./run golden` regenerates the package's inputs from the registries: each new key is an enum value there."""
    source = said["package_args"]
    for kind, key in NEW.items():
        assert f' = "{key}"\n' in source, kind


def test_no_line_names_the_other_keys_without_the_new_one(said: dict[str, Any]) -> None:
    """A line of the generated pages or a refusal that names every other key of a registry is a list of it:
    it names the new key too."""
    lines = [line for page in said["pages"].values() for line in page.splitlines()]
    lines += [line for line in said["refusals"].values() if line]
    lines += said["package_args"].splitlines()
    stale = []
    for kind, key in NEW.items():
        others = [k for k in said["keys"][kind] if k != key]
        stale += [(kind, line) for line in lines if all(_names(line, k) for k in others) and not _names(line, key)]
    assert stale == []
