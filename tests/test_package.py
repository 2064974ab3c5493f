"""The component package: its inputs are the stack config's keys, its schema is the reviewed golden, it declares the
Python program's objects, and a bad input gets the config's one line in the consumer's property names."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest
from pulumi.provider.experimental.util import camel_case as camel

from components.catalog.accelerators import ACCELERATORS
from components.k8s_objects import PATCH_FORCE_ANNOTATION
from components.specs.connectors import BY_KEY
from e2e.package_run import config_overrides, example_program, serving_stack
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.config.keys import config_keys
from stacks.package.args import Preset
from stacks.package.args_codegen import LEFT_OUT, generate, package_presets
from stacks.package.inputs import SPECIAL_VALUE_KEY, InputError, plain, planned, property_path
from stacks.package.provider import schema
from stacks.package.serving_stack import ServingStack
from stacks.planning.plan import plan
from stacks.review.offline import OFFLINE_HF_TOKEN, RecordedResource, record, record_program
from tests.golden import PACKAGE_ARGS, PACKAGE_SCHEMA, REPO

TYPE = "llmd:index:ServingStack"


def _no_cluster(name: str) -> Any:
    raise AssertionError(f"the test stacks read no cluster stack ({name})")


def test_the_generated_inputs_are_current() -> None:
    """stacks/package/args.py is what the generator makes of today's config model (`./run golden` rewrites it)."""
    assert PACKAGE_ARGS.read_text() == generate()


def test_the_schema_golden_is_the_providers() -> None:
    """package/schema.json, reviewed, is the schema the provider gives the engine."""
    assert json.loads(PACKAGE_SCHEMA.read_text()) == schema()


def _schema_property(doc: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The schema's property at a config key's path (`node_pools.<pool>.taints[i].effect`), camelCase, stepping
    through maps, lists and type references; None when it has none."""
    types = doc["types"]
    props: dict[str, Any] = doc["resources"][TYPE]["inputProperties"]
    found: dict[str, Any] | None = None
    for part in path.replace("[i]", ".[i]").split("."):
        if part in ("<pool>", "[i]"):
            continue
        found = props.get(camel(part))
        if found is None:
            return None
        inner = found.get("additionalProperties") or found.get("items") or found
        ref = inner.get("$ref", "")
        props = types[ref.removeprefix("#/types/")].get("properties", {}) if ref.startswith("#/types/") else {}
    return found


def test_every_config_key_is_an_input_but_a_created_clusters() -> None:
    """Each key `./run keys` lists is a property of the schema, but those the package leaves out (and what is under
    them): a key added to the config model reaches every Pulumi language with no edit here."""
    doc = schema()
    keys = [k.path for k in config_keys()]
    left_out = [k for k in keys if any(k == x or k.startswith(f"{x}.") for x in LEFT_OUT)]
    missing = [k for k in keys if k not in left_out and _schema_property(doc, k) is None]
    assert not missing
    assert left_out and all(_schema_property(doc, k) is None for k in left_out)
    assert len(keys) - len(left_out) > 150


def test_the_enums_are_the_registries() -> None:
    types = schema()["types"]

    def values(name: str) -> list[Any]:
        return [v["value"] for v in types[f"llmd:index:{name}"]["enum"]]

    assert values("CacheAccelerator") == list(ACCELERATORS)
    assert sorted(values("CacheConnector")) == sorted(BY_KEY)
    assert values("ClusterProvider") == ["existing", "stack"]  # gke and eks create a cluster: the cluster stack's
    assert values("Preset") == list(package_presets())
    assert "dev" in values("Preset") and "gke-h100-lustre" not in values("Preset")
    assert values("LustrePerUnitStorageThroughput") == [125, 250, 500, 1000]


def test_numbers_arrive_as_floats_and_enums_as_members() -> None:
    """The engine sends every number as a float (a whole one is an integer again) and enums as members."""
    given = {"cache": {"replicas": 3.0, "memory_fraction": 0.85, "tier": {"variant": Preset.DEV}}, "x": [2.0, "a"]}
    assert plain(given) == {
        "cache": {"replicas": 3, "memory_fraction": 0.85, "tier": {"variant": "dev"}},
        "x": [2, "a"],
    }
    assert isinstance(plain(3.0), int) and isinstance(plain(2.5), float)


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("cache.tensor_parallelism", "cache.tensorParallelism"),
        ("node_pools.h100_a.host_memory", "nodePools.h100_a.hostMemory"),  # a pool's key is the user's, as written
        ("node_pools.p.taints[0].effect", "nodePools.p.taints[0].effect"),
        ("monitoring.alerts.offload_hit_rate_floor", "monitoring.alerts.offloadHitRateFloor"),
        ("workload.slo.ttft_p90", "workload.slo.ttftP90"),
    ],
)
def test_a_config_key_as_the_consumer_wrote_it(key: str, path: str) -> None:
    assert property_path(key) == path


def test_a_bad_value_gets_the_configs_line_naming_the_property() -> None:
    """The same value refused the same way as from the stack config, naming `cache.tensorParallelism`."""
    with pytest.raises(ConfigError) as from_config:
        plan(loading.build("dev", {"cache": {"tensor_parallelism": 3}}))
    with pytest.raises(InputError) as from_component:
        planned({"hf_token": "t", "preset": Preset.DEV, "cache": {"tensor_parallelism": 3.0}}, "qwen", _no_cluster)
    error = from_component.value
    assert error.path == "cache.tensorParallelism"
    assert error.reason == f"{from_config.value.allowed} (from the ServingStack's properties)"
    assert str(error) == (
        f"invalid ServingStack 'qwen' input: cache.tensorParallelism = 3: {from_config.value.allowed}"
        " (from the ServingStack's properties)"
    )


@pytest.mark.parametrize(
    ("args", "path", "says"),
    [
        ({"cluster": {"provider": "gke"}}, "cluster.provider", "allowed: existing, stack"),
        ({"cluster": {"provider": "existing", "gke": {"project": "p"}}}, "cluster.gke", "not an input"),
        ({"layer": "cluster"}, "layer", "not an input"),
        ({"cache": {"tier": {"cpu": "lots"}}}, "cache.tier.cpu", "'lots'"),
        ({"nodePools": {}}, "nodePools", "unknown key"),  # a camelCase key reaching the config is refused
    ],
)
def test_inputs_the_package_does_not_take(args: dict[str, Any], path: str, says: str) -> None:
    with pytest.raises(InputError) as refused:
        planned({"hf_token": "t", **args}, "qwen", _no_cluster)
    assert refused.value.path == path
    assert says in str(refused.value) and "\n" not in str(refused.value)


def _objects(resources: list[RecordedResource]) -> dict[tuple[str, str], tuple[Any, Any]]:
    """The custom resources by type and name: their inputs and lifecycle options."""
    return {(r.type, r.name): (r.inputs, r.options) for r in resources if r.custom}


def test_the_component_declares_the_programs_objects() -> None:
    """dev's serving stack through the component (as the YAML example declares it) registers the very resources,
    inputs and lifecycle options (protect, timeouts: its transform reaches its children) the program does."""
    program = record(plan(loading.load_preset("dev", ["monitoring.enabled=false"])), "dev")

    def declare() -> None:
        ServingStack("dev", {"hf_token": OFFLINE_HF_TOKEN, "preset": Preset.DEV, "monitoring": {"enabled": False}})

    component = record_program(declare, "dev")
    assert _objects(component.resources) == _objects(program.resources)
    # The lifecycle transform reached the component's children: the objects it applies whole carry `force`.
    namespace = next(r for r in component.resources if r.type == "kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"]["annotations"][PATCH_FORCE_ANNOTATION] == "true"
    top = [r for r in component.resources if r.type == TYPE]
    assert len(top) == 1 and top[0].parent is None
    assert {
        r.parent
        for r in component.resources
        if r.type in ("pulumi:providers:kubernetes", "llmd:cache_stack:CacheStack")
    } == {"dev"}


def test_the_yaml_example_declares_devs_serving_stack() -> None:
    """examples/yaml-serving-stack: one ServingStack on the dev preset; the e2e gives the Python side its literal
    properties as config keys, so the render it compares with is of the same config."""
    properties = serving_stack(example_program(REPO))["properties"]
    assert Preset(properties["preset"]) is Preset.DEV
    assert config_overrides(properties) == ["monitoring.enabled=false"]
    nested = {"hfToken": "${t}", "cache": {"tensorParallelism": 2, "tier": {"cpu": "8GiB"}}, "protect": False}
    assert config_overrides(nested) == ["cache.tensor_parallelism=2", "cache.tier.cpu=8GiB", "protect=false"]


@pytest.fixture
def event_loop_for_outputs() -> Iterator[None]:
    """An Output needs a current event loop (a recording closes its own)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    loop.close()


@pytest.mark.usefixtures("event_loop_for_outputs")
def test_a_secret_or_an_unknown_value_is_refused_unprinted() -> None:
    """The plan sizes the stack before anything exists: a property the engine sends as an output (a secret, another
    resource's output) is refused naming it, and its value is not printed; the token alone takes a secret."""
    secret = pulumi.Output.secret("kubeconfig-text-not-to-print")
    with pytest.raises(InputError) as refused:
        planned({"hf_token": secret, "cluster": {"provider": "existing", "kubeconfig": secret}}, "q", _no_cluster)
    assert refused.value.path == "cluster.kubeconfig"
    assert "kubeconfig-text" not in str(refused.value) and "only hfToken takes a secret" in str(refused.value)
    with pytest.raises(InputError) as nested:
        planned({"hf_token": "t", "node_pools": {"gpu_pool": {"labels": {"a": secret}}}}, "q", _no_cluster)
    assert nested.value.path == "nodePools.gpu_pool.labels.a"  # a pool's key as written


def test_a_nested_secret_on_the_wire_is_refused() -> None:
    """A secret inside a map arrives as the protocol's special value, which the package recognises by its key."""
    from pulumi.runtime import rpc

    wire = rpc.wrap_rpc_secret("labels-value-not-to-print")
    assert SPECIAL_VALUE_KEY in wire
    with pytest.raises(InputError) as refused:
        planned({"hf_token": "t", "router": {"match_labels": {"a": wire}}}, "q", _no_cluster)
    assert refused.value.path == "router.matchLabels.a" and "labels-value" not in str(refused.value)
