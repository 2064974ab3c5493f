"""The connector registry and the accelerator profiles: every supported combination resolves to one
connector implementation, each implementation answers the one interface, and every accelerator has an
entry in every per-accelerator table of the catalog."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import get_args

import pytest

from components.catalog import startup_figures as startup_figures
from components.catalog.accelerators import ACCELERATORS
from components.catalog.machines import MACHINES
from components.catalog.support import SUPPORTED
from components.specs import connectors
from components.specs.connectors import ConnectorKey, interface
from components.specs.connectors.interface import Connector
from stacks.config import StackConfig, loading
from stacks.config.cache_section import CacheConfig
from stacks.config.connector_choice import choice, connector_of
from stacks.planning.cold_starts import known_image_bytes
from stacks.planning.plan import plan


def _resolved(combo: tuple[str, str, str, str, str]) -> Connector:
    accelerator, server, connector, _, _ = combo
    return connectors.resolve(server, ACCELERATORS[accelerator], connector)  # type: ignore[arg-type]


# Written out, not read back: how many supported combinations of these accelerators each implementation runs (an
# accelerator or a connector added later is held by the completeness tests below, not by an edit of this table).
WRITTEN_FOR = {"gpu", "amd", "xpu", "tpu-v5p", "tpu-v6", "tpu-v7"}
EXPECTED_COMBINATIONS = {
    "native": 6,  # gpu, amd, xpu x cpu, fs
    "lmcache-connector": 6,  # gpu, amd, xpu x cpu, fs
    "mooncake-store": 2,
    "lmcache-server": 1,
    "sglang-hicache": 2,
    "tpu-offload": 4,  # v5p, v6, v7 single-host, v7 multi-host
}


def test_every_supported_combination_resolves_to_one_implementation() -> None:
    counts = Counter(_resolved(combo).key for combo in SUPPORTED if combo[0] in WRITTEN_FOR)
    assert {k: v for k, v in counts.items() if k in EXPECTED_COMBINATIONS} == EXPECTED_COMBINATIONS
    assert set(EXPECTED_COMBINATIONS) <= {c.key for c in connectors.IMPLEMENTATIONS}
    assert len({c.key for c in connectors.IMPLEMENTATIONS}) == len(connectors.IMPLEMENTATIONS)
    runs = {c.key: len(connectors.combinations(c)) for c in connectors.IMPLEMENTATIONS}
    assert all(runs.values()), runs  # every implementation runs a combination of the support table
    assert sum(runs.values()) == len(SUPPORTED)  # each combination resolves to exactly one


def test_the_registry_keys_are_the_config_literal() -> None:
    assert set(connectors.BY_KEY) == set(get_args(ConnectorKey))
    assert get_args(CacheConfig.model_fields["connector"].annotation) == get_args(ConnectorKey)  # the one Literal
    assert all(c.key == key for key, c in connectors.BY_KEY.items())


def test_the_engine_and_the_accelerator_come_before_cache_connector() -> None:
    gpu, tpu = ACCELERATORS["gpu"], ACCELERATORS["tpu-v6"]
    assert connectors.resolve("sglang", gpu, "native") is connectors.BY_ENGINE["sglang"]
    assert connectors.resolve("vllm", tpu, "native").key == "tpu-offload"
    assert connectors.resolve("vllm", gpu, "mooncake-store").key == "mooncake-store"
    assert connectors.resolve("vllm", gpu, "native").key == "native"


@pytest.mark.parametrize("implementation", connectors.IMPLEMENTATIONS, ids=lambda c: c.key)
def test_each_implementation_is_one_module_on_the_interface(implementation: Connector) -> None:
    cls = type(implementation)
    assert isinstance(implementation, Connector)
    assert cls.__module__ == f"components.specs.connectors.{cls.__module__.rsplit('.', 1)[-1]}"
    assert cls.__module__ != interface.__name__
    assert cls.size is not Connector.size, "every connector sizes its tier"
    if implementation.key not in ("sglang-hicache", "lmcache-server"):  # these write their own flags
        assert cls.kv_transfer_config is not Connector.kv_transfer_config
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_"):
            assert hasattr(Connector, name), f"{cls.__name__}.{name} is not on the interface"
            assert inspect.signature(member).parameters.keys() == (
                inspect.signature(getattr(Connector, name)).parameters.keys()
            )


@pytest.mark.parametrize(
    ("preset", "key"),
    [
        ("gpu-vllm-native-cpu", "native"),
        ("gpu-vllm-lmcache-connector-cpu", "lmcache-connector"),
        ("gpu-sglang-native-cpu", "sglang-hicache"),
        ("tpu-v6-vllm-native-cpu", "tpu-offload"),
    ],
)
def test_the_plan_carries_the_resolved_connector(preset: str, key: str) -> None:
    config = loading.load_preset(preset)
    assert connector_of(config).key == key
    assert plan(config).model_server.connector is connector_of(config)


def test_only_mooncake_keeps_its_filesystem_tier_off_the_shared_claim() -> None:
    assert [c.key for c in connectors.IMPLEMENTATIONS if not c.uses_tier_claim("fs")] == ["mooncake-store"]
    assert not any(c.uses_tier_claim("cpu") for c in connectors.IMPLEMENTATIONS)


# No per-accelerator table is keyed by the accelerator's key: its rates, load profile and warm compile ratio
# are fields of the profile itself (a new profile cannot leave one out).


@pytest.mark.parametrize("key", ACCELERATORS)
def test_every_accelerator_is_complete_across_the_catalog(key: str) -> None:
    profile = ACCELERATORS[key]
    assert any(combo[0] == key for combo in SUPPORTED), "a combination that runs it"
    for image in (profile.vllm_image, profile.lmcache_image):
        if image is not None:  # its pull time is modeled, not the unknown image's guess
            assert known_image_bytes(image) is not None, image
    assert (profile.device_resource is None) != (profile.dra_device_class is None), "one way to ask for devices"


def test_every_machine_type_carries_a_known_accelerator() -> None:
    """Machine types exist only where a cloud pool is created (AMD and XPU run on existing clusters)."""
    assert {m.accelerator for m in MACHINES.values()} <= set(ACCELERATORS)


@pytest.mark.parametrize("combo", sorted(SUPPORTED))
def test_every_connectors_image_has_a_size_as_an_accelerators_does(combo: tuple[str, str, str, str, str]) -> None:
    """The image a connector runs on each combination it runs (its own, or the accelerator's) is one the catalog
    sizes: the shared table, or the size its module pins with it (`own_images`)."""
    accelerator, server, connector, variant, host_type = combo
    config = StackConfig.model_validate(
        {"cache": {"accelerator": accelerator, "server": server, "connector": connector,
                   "tier": {"variant": variant}, "host_type": host_type}}
    )  # fmt: skip
    image = connector_of(config).image(choice(config))
    assert known_image_bytes(image) is not None, (combo, image)


def test_every_image_pinned_beside_its_accelerator_or_connector_says_where_its_size_comes_from() -> None:
    for image in connectors.OWN_IMAGES:
        assert image.size_from.strip() and image.compressed_bytes > 0, image
        assert ":" in image.reference.rsplit("/", 1)[-1] or "@" in image.reference, f"{image.reference}: not pinned"
