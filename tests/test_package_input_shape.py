"""The component package refuses every property its schema does not name and every value its mapping cannot convert,
before planning, naming the property as the consumer wrote it (round 5: a misspelt `tensorParalelism`, `layer`,
`cluster.gke`, an unknown top-level key and a string where a section goes all planned as the defaults with exit 0;
`inf` or a list for an integer was a provider traceback; a 10 MB property came back in a 10 MB line; an empty
`hfToken` was taken)."""

from __future__ import annotations

import math
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.provider.experimental.util import camel_case

from e2e.package_run import example_program, serving_stack
from stacks.package.args_codegen import package_presets
from stacks.package.input_shape import MAX_TEXT_CHARS, MAX_TOTAL_CHARS, refusal
from stacks.package.provider import ServingStackProvider
from tests.golden import REPO

TYPE = "llmd:index:ServingStack"
PROVIDER = ServingStackProvider()
SCHEMA = PROVIDER.schema_doc


def _refused(properties: dict[str, Any]) -> tuple[str, str]:
    """The engine's construct call with these properties: refused before the SDK maps them or anything plans."""
    with pytest.raises(pulumi.InputPropertyError) as refused:
        PROVIDER.construct("qwen", TYPE, {"hfToken": "t", **properties}, None)
    error = refused.value
    assert "\n" not in error.reason and len(error.reason) < 2000, error.reason
    return error.property_path, error.reason


@pytest.mark.parametrize(
    ("properties", "path", "says"),
    [
        ({"cache": {"tensorParalelism": 2}}, "cache.tensorParalelism", "did you mean tensorParallelism?"),
        ({"layer": "cluster"}, "layer", "not an input of ServingStack"),
        ({"cluster": {"gke": {"project": "p"}}}, "cluster.gke", "not an input of ServingStack"),
        ({"description": "x"}, "description", "not an input of ServingStack"),
        ({"tensorParallelism": 2}, "tensorParallelism", "not a property of ServingStack"),
        ({"cache": "big"}, "cache", "'big': must be a map of ServingStack's cache's properties"),
        ({"cache": ["a"]}, "cache", "must be a map of"),
        ({"nodePools": {"h100": {"acceleratorz": "gpu"}}}, "nodePools.h100.acceleratorz", "did you mean accelerator?"),
        ({"nodePools": {"p": {"taints": [{"key": "k", "efect": "NoSchedule"}]}}}, "nodePools.p.taints[0].efect", ""),
        ({"nodePools": {"p": {"taints": "k=v"}}}, "nodePools.p.taints", "must be a list"),
        ({"router": {"matchLabels": {"a": 1}}}, "router.matchLabels.a", "must be text"),
        ({"cache": {"tensorParallelism": math.inf}}, "cache.tensorParallelism", "must be a whole number"),
        ({"cache": {"tensorParallelism": -math.inf}}, "cache.tensorParallelism", "must be a whole number"),
        ({"cache": {"tensorParallelism": math.nan}}, "cache.tensorParallelism", "must be a whole number"),
        ({"cache": {"tensorParallelism": [2]}}, "cache.tensorParallelism", "must be a whole number"),
        ({"cache": {"tensorParallelism": 2.5}}, "cache.tensorParallelism", "must be a whole number"),
        ({"cache": {"tensorParallelism": True}}, "cache.tensorParallelism", "must be a whole number"),
        ({"cache": {"tensorParallelism": "2"}}, "cache.tensorParallelism", "must be a whole number"),
        ({"cache": {"memoryFraction": math.nan}}, "cache.memoryFraction", "must be a finite number"),
        ({"cache": {"replicas": [3]}}, "cache.replicas", "must be a number or a word"),
        ({"cache": {"replicas": math.inf}}, "cache.replicas", "must be a number or a word"),
        ({"monitoring": {"enabled": "yes"}}, "monitoring.enabled", "must be true or false"),
        ({"cache": {"accelerator": "h999"}}, "cache.accelerator", "'h999': allowed: gpu,"),
        ({"preset": "nope"}, "preset", "allowed: amd-vllm-lmcache-connector-cpu,"),
        ({"cache": {"model": "x" * 10_000_000}}, "cache.model", f"a property holds at most {MAX_TEXT_CHARS:,}"),
        ({"nodePools": {"k" * (MAX_TEXT_CHARS + 1): {}}}, "nodePools." + "k" * (MAX_TEXT_CHARS + 1), "at most"),
    ],
)
def test_a_property_the_schema_does_not_take_is_refused_naming_it(
    properties: dict[str, Any], path: str, says: str
) -> None:
    found, reason = _refused(properties)
    assert found == path and says in reason, reason
    assert reason.endswith("(from the ServingStack's properties)")


def test_a_refused_value_is_shown_short() -> None:
    _, reason = _refused({"cache": {"tensorParallelism": ["x" * 1000]}})
    assert len(reason) < 200 and "characters)" in reason


def test_properties_past_what_a_stack_file_holds_are_refused() -> None:
    """Many texts each under the bound, together past the stack file's."""
    labels = {f"k{i}": "v" * 60 for i in range(MAX_TOTAL_CHARS // 60 + 10)}
    found, reason = _refused({"router": {"matchLabels": labels}})
    assert found.startswith("router.matchLabels.") and "what a stack file may hold" in reason


@pytest.mark.parametrize("token", ["", "   ", ["t"], 7])
def test_a_token_that_is_empty_or_not_text_is_refused_unshown(token: Any) -> None:
    with pytest.raises(pulumi.InputPropertyError) as refused:
        PROVIDER.construct("qwen", TYPE, {"hfToken": token}, None)
    assert refused.value.property_path == "hfToken"
    assert repr(token) not in refused.value.reason or token in ("", "   ")


def test_the_edges_a_property_takes() -> None:
    """A whole float (the engine's wire type), a text at the bound, an enum member, a map key as written."""
    assert refusal({"hfToken": "t", "cache": {"tensorParallelism": 2.0, "model": "m" * MAX_TEXT_CHARS}}, SCHEMA) is None
    assert refusal({"hfToken": "t", "cache": {"replicas": "auto"}, "nodePools": {"h100_a": {}}}, SCHEMA) is None
    assert refusal({"hfToken": "t", "cache": {"replicas": 3.0}}, SCHEMA) is None


def _camel(data: Any, prop: dict[str, Any]) -> Any:
    """A preset's YAML section as the component's properties: the schema's names for records (camelCase), map
    keys as written."""
    ref = str(prop.get("$ref", ""))
    if ref.startswith("#/types/"):
        kind = SCHEMA["types"][ref.removeprefix("#/types/")]
        if "properties" in kind and isinstance(data, dict):
            return {camel_case(k): _camel(v, kind["properties"][camel_case(k)]) for k, v in data.items()}
        return data
    if prop.get("type") == "array":
        return [_camel(v, prop["items"]) for v in data]
    if prop.get("type") == "object":
        return {k: _camel(v, prop.get("additionalProperties") or {}) for k, v in data.items()}
    return data


@pytest.mark.parametrize("preset", package_presets())
def test_every_preset_the_package_offers_fits_its_schema(preset: str) -> None:
    """No false refusal: each preset's own keys, written as a consumer would write them, pass."""
    data = yaml.safe_load((REPO / "stacks" / "presets" / f"{preset}.yaml").read_text())
    inputs = SCHEMA["resources"][TYPE]["inputProperties"]
    properties: dict[str, Any] = {"hfToken": "t", "preset": preset}
    for key, value in data.items():
        if key not in ("description", "layer"):
            properties[camel_case(key)] = _camel(value, inputs[camel_case(key)])
    assert refusal(properties, SCHEMA) is None


def test_the_yaml_examples_properties_fit_the_schema() -> None:
    properties = serving_stack(example_program(REPO))["properties"]
    assert refusal({**properties, "hfToken": "t"}, SCHEMA) is None
