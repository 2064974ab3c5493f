"""The rules that judge a model read its geometry from the workload, not from the catalog: the plan stamps the
geometry it sized by (`llm-d.ai/model-geometry`, components/catalog/geometry_stamp.py) on each model-server
workload, and `tiers-beat-recompute` and `router-capacity-within-tier` judge a model given by `cache.model_file`
(in no catalog) as a catalog one. A stamp removed, not a geometry, or not the catalog's for a catalog model is a
violation saying why, never a skip."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from components.catalog import accelerators, labels, rates
from components.catalog.geometry_stamp import FIELDS, StampError, geometry_stamp, model_from_stamp
from components.catalog.models import MODELS
from policies.checks import tier_payoff
from policies.resources import Resource
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review import offline
from tests.policy_cases import RULE, chart_values_of, deployment_of, violations_of
from tests.test_identity_agreement import _fails_run_check

TIERS, ROUTER, IDENTITY = RULE["tiers-beat-recompute"], RULE["router-capacity-within-tier"], RULE["identity-labels"]
# A user's dense model (tests/fixtures/model-configs/dense.json) on the dev preset: one H100, a 4 GiB CPU tier.
DENSE = ["cache.model=acme/dense-7b", "cache.model_file=tests/fixtures/model-configs/dense.json"]
DENSE_KV = 2 * 32 * 8 * 128 * 2  # K and V x 32 layers x 8 KV heads x 128 head dim x 2 bytes: 131,072 bytes a token
TIER = 4 * 2**30  # dev's CPU tier: 4 GiB
WORKLOAD = "llmd-model-server-gpu-vllm-decode"


def _recorded(*overrides: str) -> list[Resource]:
    recording = offline.record(plan(loading.load_preset("dev", [*DENSE, *overrides])), "dev")
    return [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]


def _annotations(resources: list[Resource]) -> dict[str, Any]:
    found: dict[str, Any] = deployment_of(resources).props["metadata"]["annotations"]
    return found


def _set_capacity(resources: list[Resource], capacity: int) -> None:
    """The router's `lruCapacityPerServer` (its CPU-tier prefix producer's entries per server)."""
    plugins = chart_values_of(resources)["router"]["epp"]["pluginsConfig"]["plugins"]
    [producer] = [p for p in plugins if p.get("name") == "cpu-prefix-cache-producer"]
    producer["parameters"]["lruCapacityPerServer"] = capacity


def test_every_catalog_model_reads_back_from_its_stamp() -> None:
    for name, model in MODELS.items():
        read = model_from_stamp(name, geometry_stamp(model))
        assert {f: getattr(read, f) for f in FIELDS} == {f: getattr(model, f) for f in FIELDS}, name
        assert read.kv_bytes_per_token == model.kv_bytes_per_token, name
        assert read.active_non_embedding_params == model.active_non_embedding_params, name


def test_a_model_file_stack_is_judged_by_both_rules_at_its_own_geometry() -> None:
    resources = _recorded()
    stamp = json.loads(_annotations(resources)[labels.MODEL_GEOMETRY_ANNOTATION])
    assert (stamp["layers"], stamp["kv_heads"], stamp["head_dim"], stamp["kv_dtype"]) == (32, 8, 128, "bfloat16")
    [server] = tier_payoff.tiered_servers(resources)
    assert server.model.name == "acme/dense-7b" and server.model.kv_bytes_per_token.bytes == DENSE_KV == 131_072
    # per layer: Q and O 2 x 4096 x 4096, K and V 2 x 4096 x 1024, MLP 3 x 4096 x 14336 (test_model_configs.py)
    assert server.model.active_non_embedding_params == 32 * (33_554_432 + 8_388_608 + 176_160_768)
    assert tier_payoff.unjudged(resources) == []
    assert violations_of(TIERS, resources) == [] and violations_of(ROUTER, resources) == []
    # the router's index the plan sized: 4 GiB / (64 tokens x 131,072 bytes) = 512 entries; one more is caught
    _set_capacity(resources, TIER // (64 * DENSE_KV))
    assert violations_of(ROUTER, resources) == []
    _set_capacity(resources, 513)
    assert violations_of(ROUTER, resources) == [
        f"router lruCapacityPerServer 513 tracks {513 * 64 * 131_072} bytes per server, more than the {TIER}-byte CPU"
        f" tier a server of {WORKLOAD} reaches: the router would steer requests to evicted blocks (at most 512)"
    ]


def test_the_rules_judge_what_the_stamp_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stamp of twice the layers doubles the KV bytes a token takes: the router's 512 entries now track 8 GiB of
    the 4 GiB tier (at most 256). A host link slow enough fails the payoff, for the model the stamp names."""
    resources = _recorded()
    annotations = _annotations(resources)
    doubled = {**json.loads(annotations[labels.MODEL_GEOMETRY_ANNOTATION]), "layers": 64}
    annotations[labels.MODEL_GEOMETRY_ANNOTATION] = json.dumps(doubled)
    assert violations_of(ROUTER, resources) == [
        f"router lruCapacityPerServer 512 tracks {512 * 64 * 262_144} bytes per server, more than the {TIER}-byte CPU"
        f" tier a server of {WORKLOAD} reaches: the router would steer requests to evicted blocks (at most 256)"
    ]
    h100 = accelerators.ACCELERATORS["gpu"]
    slow = rates.HostLink("PCIe (slow)", ((1, 1.0e9),), "a link slow enough to fail the payoff")
    monkeypatch.setitem(
        accelerators.ACCELERATORS,
        "gpu",
        dataclasses.replace(h100, rates=dataclasses.replace(h100.rates, host_link=slow)),
    )
    [message] = violations_of(TIERS, _recorded())
    assert message.startswith(f"the CPU tier of {WORKLOAD} reloads at about 1.00 GB/s per pod (PCIe (slow) at"), message
    assert "recomputing acme/dense-7b on 1 x gpu" in message


def _refusals(resources: list[Resource]) -> tuple[list[str], list[str]]:
    return violations_of(TIERS, resources), violations_of(ROUTER, resources)


def test_a_removed_stamp_is_refused_by_each_rule_and_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    resources = _recorded()
    del _annotations(resources)[labels.MODEL_GEOMETRY_ANNOTATION]
    why = f"it carries no {labels.MODEL_GEOMETRY_ANNOTATION} stamp (the geometry the plan sized acme/dense-7b by)"
    assert _refusals(resources) == (
        [f"cannot judge whether the tiers of {WORKLOAD} reload faster than recomputing its model: {why}"],
        [
            f"cannot judge router lruCapacityPerServer 512 against the CPU tier of {WORKLOAD} without the KV bytes a"
            f" token of its model takes: {why}"
        ],
    )
    assert violations_of(IDENTITY, resources) == [
        f"its pods carry {labels.KV_CONNECTOR_LABEL}: native but it carries no {labels.MODEL_GEOMETRY_ANNOTATION}"
        " annotation: annotate the workload's own metadata with the geometry the plan sized its model by"
        " (components/catalog/geometry_stamp.py)"
    ]

    def forge(forged: list[Resource]) -> None:
        del _annotations(forged)[labels.MODEL_GEOMETRY_ANNOTATION]

    assert _fails_run_check("gpu-vllm-native-cpu", forge, monkeypatch) == [
        "identity-labels",
        "router-capacity-within-tier",
    ]


GEOMETRY = {f: getattr(MODELS["Qwen/Qwen3-0.6B"], f) for f in FIELDS}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("sixty-four layers", "not JSON"),
        ("[]", "not a JSON object"),
        (json.dumps({**GEOMETRY, "layers": 0}), "layers = 0: must be a whole number from 1 to 4,096"),
        (json.dumps({**GEOMETRY, "kv_heads": 8.5}), "kv_heads = 8.5: must be a whole number from 1 to 4,096"),
        (json.dumps({**GEOMETRY, "head_dim": True}), "head_dim = True: must be a whole number from 1 to 65,536"),
        (json.dumps({**GEOMETRY, "kv_dtype": "int3"}), "kv_dtype = 'int3': allowed: bfloat16, float16, fp8"),
        (json.dumps({k: v for k, v in GEOMETRY.items() if k != "vocab_size"}), "fields missing: vocab_size;"),
        (json.dumps({**GEOMETRY, "params": 7}), "fields missing: none; unknown: params"),
        (
            json.dumps({**GEOMETRY, "sliding_layers": 28, "sliding_window": 4096}),
            "28 sliding and 0 expert layers of 28",
        ),
        (json.dumps({**GEOMETRY, "sliding_layers": 4}), "4 sliding layers with a 0-token window"),
        (json.dumps({**GEOMETRY, "experts": 8, "experts_per_token": 9, "moe_layers": 28}), "9 of 8 experts a token"),
    ],
)
def test_a_stamp_that_is_no_geometry_is_refused_saying_why(value: str, why: str) -> None:
    with pytest.raises(StampError) as error:
        model_from_stamp("acme/dense-7b", value)
    assert str(error.value).startswith(why), str(error.value)
    resources = _recorded()
    _annotations(resources)[labels.MODEL_GEOMETRY_ANNOTATION] = value
    tiers, router = _refusals(resources)
    prefix = f"its {labels.MODEL_GEOMETRY_ANNOTATION} stamp is {why}"
    assert len(tiers) == 1 and prefix in tiers[0], tiers
    assert len(router) == 1 and prefix in router[0], router
    [identity] = violations_of(IDENTITY, resources)
    assert identity.startswith(f"it carries {labels.MODEL_GEOMETRY_ANNOTATION}: ") and why in identity, identity


def test_a_catalog_models_stamp_is_held_to_the_catalog() -> None:
    """Qwen3-32B has 64 layers: a stamp of 32 (half its KV, half its compute) is not judged by."""
    recording = offline.record(plan(loading.load_preset("gpu-vllm-native-cpu")), "gpu-vllm-native-cpu")
    resources = [Resource(r.type, r.name, copy.deepcopy(r.inputs)) for r in recording.resources]
    assert _refusals(resources) == ([], [])
    annotations = _annotations(resources)
    annotations[labels.MODEL_GEOMETRY_ANNOTATION] = json.dumps(
        {**json.loads(annotations[labels.MODEL_GEOMETRY_ANNOTATION]), "layers": 32}
    )
    why = f"its {labels.MODEL_GEOMETRY_ANNOTATION} stamp says layers 32 where the catalog's Qwen/Qwen3-32B has 64"
    tiers, router = _refusals(resources)
    assert tiers == [f"cannot judge whether the tiers of {WORKLOAD} reload faster than recomputing its model: {why}"]
    assert len(router) == 1 and router[0].endswith(why)
    assert violations_of(IDENTITY, resources) == []  # a geometry: whose it is, the judging rules say
