"""Names are compared only in the registries: no module of the program outside them compares a cluster
provider's, a platform's, an accelerator vendor's, an engine's, an accelerator's or a connector's name
(issue #31). Read from the syntax tree: a comparison (`==`, `!=`, `in`, `not in`) with such a name as a string
constant on either side. A storage backend's `existing` is the backend's own value, not a provider's.

The registries: the catalog (`components/catalog/`, with the platforms' records in `platforms.py`), the
connector registry and modules (`components/specs/connectors/`), the cluster providers
(`stacks/config/providers/`). What still compares a name elsewhere is listed in KNOWN with its count per
file, each with where it should go; the list may only shrink (a new comparison, or one more in a listed file,
fails)."""

from __future__ import annotations

import ast
from pathlib import Path

from components.catalog.accelerators import ACCELERATORS
from components.specs.connectors import BY_KEY, IMPLEMENTATIONS

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ("components", "stacks", "policies")
REGISTRIES = ("components/catalog/", "components/specs/connectors/", "stacks/config/providers/")
NAMES = frozenset(
    {
        *("existing", "gke", "eks", "stack"),  # cluster providers
        *("base", "amd-ci"),  # platforms (and gke)
        *("nvidia", "amd", "intel", "google"),  # accelerator vendors
        *("vllm", "sglang"),  # engines
        *ACCELERATORS,
        *BY_KEY,
        *(c.key for c in IMPLEMENTATIONS),
    }
)

# What still compares a name outside the registries, by file, and where it belongs.
KNOWN = {
    # the serving layer from cluster.provider (the config model cannot import the provider records, they read it)
    "stacks/config/__init__.py": 1,
    # the mirror's cloud (MirrorFacts.cloud: the contract's own Literal)
    "stacks/config/cluster_facts.py": 3,
    # cluster.platform's default (the model again)
    "stacks/config/cluster_section.py": 1,
    # the raw data's provider before validation
    "stacks/config/loading.py": 1,
    # the mirror's cloud, read once (Mirror.artifact_registry)
    "stacks/planning/mirror.py": 1,
}


def _constants(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for element in node.elts for v in _constants(element)]
    return []


def name_comparisons(source: str) -> list[tuple[int, list[str]]]:
    """(line, names) of every comparison with a name of NAMES as a constant (a storage backend's aside)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare) or "backend" in ast.unparse(node):
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
    counts = _counts()
    grown = {f: n for f, n in counts.items() if n > KNOWN.get(f, 0)}
    assert grown == {}, "compare through a registry record (see the module docstring)"
    assert {f: n for f, n in KNOWN.items() if counts.get(f, 0) < n} == {}, "one went: lower its count in KNOWN"


def test_the_check_sees_a_comparison_and_leaves_a_backend() -> None:
    assert name_comparisons('if config.cluster.provider == "gke":\n    pass\n') == [(1, ["gke"])]
    assert name_comparisons('x = a in ("nvidia", "other")\n') == [(1, ["nvidia"])]
    assert name_comparisons('x = spec.connector.key != "native"\n') == [(1, ["native"])]
    assert name_comparisons('x = storage.backend != "existing"\n') == []
    assert name_comparisons('x = {"gke": 1}["gke"]\n') == []
