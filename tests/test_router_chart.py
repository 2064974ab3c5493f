"""The router values against the chart's own values files (fixtures/upstream/schemas/router-chart, chart v0.10.0)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from stacks.config import loading
from stacks.planning.plan import plan
from tests.helpers import SCHEMAS

CHART = SCHEMAS / "router-chart"
# Keys the values set that the v0.10.0 values files do not spell out, each with where it comes from.
KNOWN_ELSEWHERE = {
    "epp.flags": "commented example in routerlib values; rendered as --<k>=<v> by the EPP template",
    "epp.pluginsConfig": "chart v1.0.0's inline plugin config (router-chart.md, version differences)",
    "tokenizer.flavor": "chart v1.0.0's tokenizer flavor (the LMCache seed's values)",
    "modelServers.matchLabels": "required by the template; the standalone values leave modelServers null",
    "proxy.args": "replaces the proxy preset's args (router-chart.md)",
    "proxy.image": "replaces the proxy preset's image (values.yaml: 'set proxy.image to replace the preset image');"
    " tests/test_images.py renders it through Helm",
}
OPAQUE = {"matchLabels", "pluginsConfig", "pluginsCustomConfig", "flags", "resources", "monitoring", "tokenizer"}


def _paths(values: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in values.items():
        yield (*prefix, key)
        if isinstance(value, dict) and key not in OPAQUE:
            yield from _paths(value, (*prefix, key))


def _exists(tree: Any, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return False
        tree = tree[key]
    return True


@pytest.mark.parametrize("name", loading.preset_names())
def test_every_value_the_stack_sets_is_a_key_of_the_chart(name: str) -> None:
    library = yaml.safe_load((CHART / "routerlib-values.yaml").read_text())
    standalone = (yaml.safe_load((CHART / "values.yaml").read_text()) or {}).get("router") or {}
    for overrides in ([], ["monitoring.enabled=true"]):
        router = plan(loading.load_preset(name, overrides)).router_values["router"]
        unknown = {".".join(p) for p in _paths(router) if not _exists(library, p) and not _exists(standalone, p)} - set(
            KNOWN_ELSEWHERE
        )
        assert unknown == set(), f"values the chart does not know: {sorted(unknown)}"


def test_chart_v0_10_takes_the_plugin_config_as_a_yaml_string() -> None:
    v1 = plan(loading.load_preset("gpu-vllm-native-cpu")).router_values["router"]["epp"]
    legacy = plan(loading.load_preset("gpu-vllm-native-cpu", ["router.version=v0.10.0"])).router_values["router"]["epp"]
    assert "pluginsConfig" not in legacy
    text = legacy["pluginsCustomConfig"][legacy["pluginsConfigFile"]]
    config = yaml.safe_load(text)
    assert config["apiVersion"] == "llm-d.ai/v1alpha1"
    assert v1["pluginsConfig"]["apiVersion"] == "llm-d.ai/v1"
    assert {k: v for k, v in config.items() if k != "apiVersion"} == {
        k: v for k, v in v1["pluginsConfig"].items() if k != "apiVersion"
    }


def test_the_guides_router_values_are_reproduced_with_the_derived_capacity() -> None:
    """The guide's base and tiered-prefix-cache values (newer single-host file), merged as helm merges them."""
    base = yaml.safe_load((CHART / "llm-d-guide-values" / "base.values.yaml").read_text())["router"]
    guide = yaml.safe_load(
        (CHART / "llm-d-guide-values" / "tiered-prefix-cache-cpu.single-host.values.yaml").read_text()
    )
    guide = guide["router"]
    ours = plan(loading.load_preset("gpu-vllm-native-cpu")).router_values["router"]
    expected_plugins = yaml.safe_load(guide["epp"]["pluginsCustomConfig"][guide["epp"]["pluginsConfigFile"]])
    for plugin in expected_plugins["plugins"]:
        if plugin.get("name") == "cpu-prefix-cache-producer":
            plugin["parameters"]["lruCapacityPerServer"] = 19200  # derived, not the guide's 82000
    assert ours["epp"]["pluginsConfig"] == expected_plugins
    assert ours["epp"]["pluginsConfigFile"] == guide["epp"]["pluginsConfigFile"]
    assert ours["extraServicePorts"] == guide["extraServicePorts"]
    assert ours["modelServers"]["matchLabels"] == guide["modelServers"]["matchLabels"]
    assert ours["proxy"]["args"] == base["proxy"]["args"]
    assert ours["epp"]["flags"] == base["epp"]["flags"]
    assert ours["inferencePool"] == base["inferencePool"]
    # The base values' `tracing.*` without `tracing.enabled` configures nothing (the chart reads it only when
    # enabled) and equals the chart's defaults: left out (docs/upstream-differences.md).
    assert "enabled" not in base["tracing"]
    assert "tracing" not in ours
    assert ours["epp"]["resources"] == base["epp"]["resources"]
    assert ours["proxy"]["resources"] == base["proxy"]["resources"]
