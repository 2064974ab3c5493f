"""Names are compared only in the registries: no module of the program outside them compares a cluster
provider's, a platform's, an accelerator vendor's, an engine's, an accelerator's, a connector's or a storage
backend's name (issue #31). Read from the syntax tree: a comparison (`==`, `!=`, `in`, `not in`) with such a name
as a string constant on either side.

The registries: the catalog (`components/catalog/`, with the platforms' records in `platforms.py` and the storage
backends' in `storage_backends.py`), the connector registry and modules (`components/specs/connectors/`), the
cluster providers (`stacks/config/providers/`, and `provider_kinds.py`, what the config model reads of them)."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from components.catalog.accelerators import ACCELERATORS
from components.catalog.platforms import PLATFORMS
from components.catalog.storage_backends import STORAGE_BACKENDS
from components.specs.connectors import BY_KEY, IMPLEMENTATIONS
from stacks.config import StackConfig
from stacks.config.cluster_facts import ClusterOutputs, MirrorFacts, StorageFacts
from stacks.config.cluster_section import ClusterConfig
from stacks.config.provider_kinds import MIRROR_CLOUDS, PROVIDER_KINDS
from stacks.config.providers import PROVIDERS
from stacks.config.storage_section import StorageConfig

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ("components", "stacks", "policies")
REGISTRIES = (
    "components/catalog/",
    "components/specs/connectors/",
    "stacks/config/providers/",
    "stacks/config/provider_kinds.py",
)
NAMES = frozenset(
    {
        *("existing", "gke", "eks", "stack"),  # cluster providers
        *("base", "amd-ci"),  # platforms (and gke)
        *("nvidia", "amd", "intel", "google"),  # accelerator vendors
        *("vllm", "sglang"),  # engines
        *ACCELERATORS,
        *BY_KEY,
        *(c.key for c in IMPLEMENTATIONS),
        *STORAGE_BACKENDS,
    }
)


def _constants(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for element in node.elts for v in _constants(element)]
    return []


def name_comparisons(source: str) -> list[tuple[int, list[str]]]:
    """(line, names) of every comparison with a name of NAMES as a constant."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        names = [v for side in (node.left, *node.comparators) for v in _constants(side) if v in NAMES]
        if names:
            out.append((node.lineno, names))
    return out


def _counts() -> dict[str, int]:
    counts = {}
    for top in PROGRAM:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(REGISTRIES):
                continue
            if found := name_comparisons(path.read_text()):
                counts[relative] = len(found)
    return counts


def test_names_are_compared_only_in_the_registries() -> None:
    assert _counts() == {}, "compare through a registry record (see the module docstring)"


def test_the_check_sees_a_comparison_of_every_registry_s_names() -> None:
    assert name_comparisons('if config.cluster.provider == "gke":\n    pass\n') == [(1, ["gke"])]
    assert name_comparisons('x = a in ("nvidia", "other")\n') == [(1, ["nvidia"])]
    assert name_comparisons('x = spec.connector.key != "native"\n') == [(1, ["native"])]
    assert name_comparisons('x = storage.backend != "existing"\n') == [(1, ["existing"])]
    assert name_comparisons('x = tier.backend == "aws-efs"\n') == [(1, ["aws-efs"])]
    assert name_comparisons('x = storage.get("backend") in ("gcp-lustre", "aws-efs")\n') == [
        (1, ["gcp-lustre", "aws-efs"])
    ]
    assert name_comparisons('x = {"gke": 1}["gke"]\n') == []


def test_each_provider_is_one_record_of_the_kinds_the_model_reads() -> None:
    """Every `cluster.provider` the model allows has a kind and a provider record, the record on that kind: the
    defaults the model reads (platform, layer, mirror cloud) are the provider's own."""
    allowed = set(typing.get_args(ClusterConfig.model_fields["provider"].annotation))
    assert set(PROVIDER_KINDS) == set(PROVIDERS) == allowed
    assert all(PROVIDERS[key].kind is kind for key, kind in PROVIDER_KINDS.items())
    assert {c.key for c in MIRROR_CLOUDS.values()} == {k.key for k in PROVIDER_KINDS.values() if k.mirror}


def test_the_model_reads_its_defaults_and_mirror_checks_from_the_kinds() -> None:
    def resolved(provider: str) -> tuple[str, str]:
        cluster = {"provider": provider} | ({"stack": "org/project/cluster"} if provider == "stack" else {})
        config = StackConfig.model_validate({"cluster": cluster})
        return config.effective_layer, config.cluster.effective_platform

    expected = {  # a provider added later is held by its own record (tests/test_contributing.py adds one)
        "existing": ("all", "base"),
        "gke": ("all", "gke"),
        "eks": ("all", "base"),
        "stack": ("serving", "base"),
    }
    assert {p: resolved(p) for p in expected} == expected
    assert all(resolved(p) for p in PROVIDER_KINDS)
    facts = {"region": "us-east-1", "project": "123456789012", "registries": []}
    assert MirrorFacts(cloud="eks", **facts).region == "us-east-1"
    with pytest.raises(ValidationError, match="GCP region"):
        MirrorFacts(cloud="gke", **facts)
    with pytest.raises(ValidationError, match="12-digit AWS account"):
        MirrorFacts(cloud="eks", **{**facts, "project": "my-project-1"})
    with pytest.raises(ValidationError, match="belongs to an ECR mirror"):
        MirrorFacts(cloud="gke", region="us-central1", project="my-project-1", registries=[], direct={"x.io": "y"})


# Each registry's keys: a `Literal` naming two or more keys of one registry is a copy of its list, written by
# hand (components/catalog/key_lists.py `literal_of` builds them from the registry instead).
REGISTRY_KEYS = {
    "provider": frozenset(PROVIDER_KINDS),
    "platform": frozenset(PLATFORMS),
    "accelerator": frozenset(ACCELERATORS),
    "connector": frozenset({*BY_KEY, *(c.key for c in IMPLEMENTATIONS)}),
    "storage backend": frozenset(STORAGE_BACKENDS),
}


def hand_written_literals(source: str) -> list[tuple[int, str]]:
    """(line, registry) of every `Literal[...]` whose string constants name two or more keys of one registry."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Subscript):
            continue
        name = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        if name != "Literal":
            continue
        values = set(_constants(node.slice))
        out += [(node.lineno, registry) for registry, keys in REGISTRY_KEYS.items() if len(values & keys) >= 2]
    return out


def test_no_literal_lists_a_registry_s_keys_by_hand() -> None:
    found = {}
    for top in PROGRAM:
        for path in sorted((ROOT / top).rglob("*.py")):
            if hits := hand_written_literals(path.read_text()):
                found[path.relative_to(ROOT).as_posix()] = hits
    assert found == {}, "build the Literal from its registry (components/catalog/key_lists.py literal_of)"


def test_the_literal_check_sees_a_copied_list_and_leaves_other_literals() -> None:
    assert hand_written_literals('cloud: Literal["gke", "eks"] = "gke"\n') == [(1, "provider")]
    assert hand_written_literals('P = typing.Literal["base", "amd-ci"]\n') == [(1, "platform")]
    assert hand_written_literals('C = Literal["native", "lmcache-server", "other"]\n') == [(1, "connector")]
    assert hand_written_literals('a: Literal["gpu", "tpu-v7"] | None = None\n') == [(1, "accelerator")]
    assert hand_written_literals('b: Literal["gcp-lustre", "aws-efs"]\n') == [(1, "storage backend")]
    assert hand_written_literals('BbrProvider = Literal["gke", "istio", "none"]\n') == []  # one key: another list
    assert hand_written_literals("ProviderKey = literal_of(PROVIDER_KINDS)\n") == []


def test_the_literals_built_from_the_registries_allow_their_keys_in_their_order() -> None:
    def allowed(model: type[BaseModel], field: str) -> tuple[object, ...]:
        return typing.get_args(model.model_fields[field].annotation)

    # in the registries' order; a key added to a registry later is in them too (tests/test_registry_lists.py)
    assert allowed(ClusterConfig, "provider") == tuple(PROVIDER_KINDS)
    assert allowed(ClusterConfig, "provider")[:3] == ("existing", "gke", "eks")
    assert allowed(ClusterOutputs, "provider") == tuple(k for k in PROVIDER_KINDS if k != "stack")
    assert allowed(ClusterOutputs, "platform") == tuple(PLATFORMS) == ("base", "gke", "amd-ci")
    assert allowed(MirrorFacts, "cloud") == tuple(MIRROR_CLOUDS) == ("gke", "eks")
    assert allowed(StorageConfig, "backend") == tuple(STORAGE_BACKENDS)
    assert allowed(StorageConfig, "backend")[:3] == ("existing", "gcp-lustre", "aws-efs")
    assert allowed(StorageFacts, "backend") == tuple(k for k, b in STORAGE_BACKENDS.items() if b.created)
    with pytest.raises(ValidationError, match="Input should be 'existing', 'gcp-lustre'"):
        StorageConfig.model_validate({"backend": "filestore"})
    with pytest.raises(ValidationError, match="Input should be 'existing', 'gke', 'eks'"):
        ClusterConfig.model_validate({"provider": "banana"})
    with pytest.raises(ValidationError, match="Input should be 'base', 'gke' or 'amd-ci'"):
        ClusterConfig.model_validate({"platform": "aks"})


def test_the_machine_clouds_are_the_providers_that_create_pools() -> None:
    """A machine type's cloud (components/catalog/machines.py) is a provider that creates its cluster, one whose
    mirror cloud the cluster stack exports; every catalog machine is of one."""
    from components.catalog.machines import MACHINE_CLOUDS, MACHINES, SYSTEM_MACHINES
    from stacks.config.provider_kinds import MIRROR_CLOUDS

    assert set(MACHINE_CLOUDS) == set(MIRROR_CLOUDS) == {"gke", "eks"}
    clouds = {m.cloud for m in MACHINES.values()} | {m.cloud for m in SYSTEM_MACHINES.values()}
    assert clouds <= set(MACHINE_CLOUDS)
