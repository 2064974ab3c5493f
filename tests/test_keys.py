"""Every input documented (issue 14 §4): each config key says what it does, and what happens unset."""

from __future__ import annotations

import re

import pytest

from stacks.__main__ import main
from stacks.config.keys import Key, config_keys, pulumi_only_keys

KEYS = config_keys()


def test_every_field_of_the_stack_config_is_listed() -> None:
    paths = {k.path for k in KEYS}
    assert {"cache.tier.cpu", "node_pools.<pool>.taints[i].effect", "router.epp_resources.memory"} <= paths
    assert len(paths) == len(KEYS) >= 100


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.path)
def test_every_key_has_a_description(key: Key) -> None:
    assert len(key.description) >= 20, f"{key.path} has no description"


@pytest.mark.parametrize("key", [k for k in KEYS if k.default in ("unset", "required")], ids=lambda k: k.path)
def test_a_key_without_a_fixed_default_says_what_happens_unset(key: Key) -> None:
    """Where the default is derived (the seed's combination, the catalog, the cluster) the text says so."""
    assert re.search(r"default|unset|required|empty", key.description), key.path


def test_keys_prints_every_key_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys"]) == 0
    out = capsys.readouterr().out
    for key in [*pulumi_only_keys(), *KEYS]:
        assert f"{key.path} (default: {key.default})\n    {key.description}\n" in out
    assert "llmd:cache.tier.cpu (default: unset)\n    CPU tier per model-server pod" in out
    assert "llmd:hfToken (default: required)" in out
