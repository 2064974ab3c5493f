"""The program's own in-cluster exporters (the cache annotator, the tier evictor): what their ConfigMaps carry is
all they import of ours, and the exposition they share (components/exporters/prometheus_text.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from components.exporters.prometheus_text import Exposition
from components.specs import cache_annotator, tier_evictor

PROJECT = ("components", "stacks", "policies")  # the packages of this repository


@pytest.mark.parametrize("modules", [cache_annotator.MODULES, tier_evictor.MODULES], ids=["annotator", "evictor"])
def test_a_script_imports_only_the_standard_library_and_what_its_config_map_carries(
    modules: dict[str, Path],
) -> None:
    """Nothing else of ours may be imported, or the pod fails at start."""
    carried = {f"components.{p.removesuffix('.py').replace('/', '.')}" for p in modules}
    for module in modules.values():
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT:
                assert node.module in carried, (module.name, node.module)
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] not in (*PROJECT, "pulumi", "yaml") for a in node.names)


def test_the_exposition_is_prometheus_text_sorted_counters_then_gauges() -> None:
    class Demo(Exposition):
        def __init__(self) -> None:
            super().__init__("demo", ("loops", "errors"))

    demo = Demo()
    demo._add(loops=2)
    demo._gauge(pods=3, seconds=0.25)
    assert demo.text().splitlines() == [
        "# TYPE demo_errors_total counter",
        "demo_errors_total 0",
        "# TYPE demo_loops_total counter",
        "demo_loops_total 2",
        "# TYPE demo_pods gauge",
        "demo_pods 3",
        "# TYPE demo_seconds gauge",
        "demo_seconds 0.25",
    ]
