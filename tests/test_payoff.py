"""The tier's payoff: break-even load bandwidth against recompute, per stack, with hand-computed numbers.

Arithmetic in the comments uses the catalog's figures: H100 989.4 TFLOP/s bf16 x 0.7, MI300X 1307.4 x 0.5,
TPU v6e 918 x 0.6, TPU7x 2307 x 0.6; the PCIe Gen5 x16 host-link curve 64 KiB 14, 256 KiB 36, 1 MiB 41,
4 MiB 53, 16 MiB 55 GB/s (a block takes the rate of the largest measured size not above it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import promql_parser
import pytest

from components.catalog import rates
from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS
from components.specs.payoff import REFERENCE_PREFIX_TOKENS, Payoff
from policies.resources import Resource
from policies.rules import RULES
from stacks import loading, offline
from stacks.plan import StackPlan, plan
from stacks.summary import summary
from tests.test_alert_semantics import evaluate

RULE = next(r for r in RULES if r.name == "tiers-beat-recompute")
QWEN3_32B_KV = 2 * 64 * 8 * 128 * 2  # layers x KV heads x head dim x bf16, K and V: 262,144 B


def _plan(name: str, *overrides: str) -> StackPlan:
    return plan(loading.load_preset(name, list(overrides)))


def _tier(payoff: Payoff, prefix: str) -> float | None:
    return next(t.bandwidth for t in payoff.tiers if t.tier.startswith(prefix))


def _load_alert_threshold(stack_plan: StackPlan) -> int:
    alert = next(a for a in stack_plan.alerts if a.name == "TieredCacheLoadTooSlow")
    return int(alert.expr.split(" < ")[1].split(" ")[0])


def test_the_seeds_default_stack() -> None:
    """Qwen3-32B, TP=2 on H100s, native OffloadingConnector with 16-token blocks."""
    payoff = _plan("gpu-vllm-native-cpu").payoff
    # 2 x 32.8e9 FLOPs / (2 GPUs x 989.4e12 x 0.7 = 1385.16e12 FLOP/s) = 47.359 µs per token
    assert payoff.recompute_seconds == pytest.approx(65.6e9 / 1385.16e12) == pytest.approx(47.359e-6, rel=1e-4)
    assert payoff.kv_bytes_per_pod == QWEN3_32B_KV
    # 262,144 B / 47.359 µs = 5.5352 GB/s per pod (2.77 GB/s per GPU, the "about 2.8")
    assert payoff.break_even == pytest.approx(5.5352e9, rel=1e-4)
    # block per GPU: 16 tokens x 262,144 B / 2 GPUs = 2 MiB -> the 1 MiB point, 41 GB/s; x 2 GPUs
    assert _tier(payoff, "CPU") == 82e9
    assert payoff.short_of_break_even() == []
    rows = {r.name: r.value for r in payoff.rows}
    # 10,000 tokens: recompute 10,000 x 47.359 µs = 473.6 ms; reload 2.62144e9 B / 82e9 B/s = 32.0 ms
    assert REFERENCE_PREFIX_TOKENS == 10_000
    assert rows["10,000-token prefix: recompute"] == "473.6 ms"
    assert rows["10,000-token prefix: reload from the CPU tier"] == "32.0 ms"
    assert rows["CPU tier transfer block per device"] == "2 MiB"


def test_a_tpu_stack() -> None:
    """Qwen3-32B on a TPU v6e host: 8 chips, the TPU offload connector's 128-token blocks."""
    payoff = _plan("tpu-v6-vllm-native-cpu").payoff
    # 65.6e9 / (8 x 918e12 x 0.6 = 4406.4e12) = 14.887 µs; 262,144 B / 14.887 µs = 17.608 GB/s
    assert payoff.recompute_seconds == pytest.approx(14.887e-6, rel=1e-4)
    assert payoff.break_even == pytest.approx(17.608e9, rel=1e-4)
    # block per chip: 128 x 262,144 / 8 = 4 MiB -> 53 GB/s; x 8 chips
    assert _tier(payoff, "CPU") == 8 * 53e9


def test_an_amd_stack() -> None:
    """Qwen3-32B, TP=2 on MI300X: a higher peak at an assumed lower efficiency."""
    payoff = _plan("amd-vllm-native-cpu").payoff
    # 65.6e9 / (2 x 1307.4e12 x 0.5 = 1307.4e12) = 50.176 µs; 262,144 B / 50.176 µs = 5.2245 GB/s
    assert payoff.recompute_seconds == pytest.approx(50.176e-6, rel=1e-4)
    assert payoff.break_even == pytest.approx(5.2245e9, rel=1e-4)
    assert _tier(payoff, "CPU") == 2 * 41e9


def test_a_multi_host_replica_splits_its_work_and_its_kv() -> None:
    """Qwen3-Coder-480B (35B active) over 2 pods x 4 TPU7x chips: each pod does half of both."""
    payoff = _plan("tpu-v7-vllm-native-cpu-multi-host").payoff
    kv = 2 * 62 * 8 * 128 * 2  # 253,952 B
    # 70e9 / (8 x 2307e12 x 0.6 = 11073.6e12) = 6.3213 µs; per pod 126,976 B / 6.3213 µs = 20.087 GB/s
    assert payoff.kv_bytes_per_pod == kv / 2
    assert payoff.recompute_seconds == pytest.approx(70e9 / 11073.6e12)
    assert payoff.break_even == pytest.approx(20.087e9, rel=1e-4)
    # block per chip: 128 x 253,952 / 8 = 3.875 MiB -> the 1 MiB point, 41 GB/s; x 4 chips per pod
    assert _tier(payoff, "CPU") == 4 * 41e9


def test_the_filesystem_tier_on_each_backend() -> None:
    efs = _plan("eks-h100-efs").payoff
    # min(20 GiB/s / 2 pods, 1,500 MiB/s per client) = 1,572,864,000 B/s, below 5.54 GB/s
    assert _tier(efs, "filesystem") == 1500 * 2**20
    assert [t.tier for t in efs.short_of_break_even()] == ["filesystem tier (aws-efs)"]
    lustre = _plan("gke-h100-lustre").payoff
    # 1,000 MB/s per TiB x 9,000 GiB / 1,024 = 8.789 GB/s over 2 pods = 4.395 GB/s: short
    assert _tier(lustre, "filesystem") == pytest.approx(1000e6 * 9000 / 1024 / 2)
    assert lustre.short_of_break_even()
    # twice the capacity, twice the throughput: 8.789 GB/s per pod beats 5.54 GB/s
    assert not _plan("gke-h100-lustre", "storage.size=18000Gi").payoff.short_of_break_even()
    # an existing class: unknown until configured; then its share, capped by the CPU path (110 GB/s)
    assert _tier(_plan("gpu-vllm-native-fs").payoff, "filesystem") is None
    assert _tier(_plan("gpu-vllm-native-fs", "storage.read_bandwidth=40GB").payoff, "filesystem") == 20e9


def test_the_load_alert_defaults_to_the_derived_break_even_per_device() -> None:
    default, tpu = _plan("gpu-vllm-native-cpu"), _plan("tpu-v6-vllm-native-cpu")
    assert _load_alert_threshold(default) == round(default.payoff.break_even / 2) == 2_767_617_249  # TP=2
    override = _plan("gpu-vllm-native-cpu", "monitoring.alerts.min_load_bandwidth=3GB")
    assert _load_alert_threshold(override) == 3_000_000_000
    # TPU stacks export no load-time counters; per stack, the thresholds differ as derived
    assert default.payoff.break_even != tpu.payoff.break_even


def test_the_geometry_gives_the_model_cards_parameters() -> None:
    """Each model's geometry counts its model card's total (and, for the MoE, its 35 B activated)."""
    for model in MODELS.values():
        assert model.total_params / 1e9 == pytest.approx(model.params_billion, rel=0.01)
    coder = MODELS["Qwen/Qwen3-Coder-480B-A35B-Instruct"]
    assert (coder.active_non_embedding_params + coder.embedding_params) / 1e9 == pytest.approx(35, rel=0.02)


def test_every_catalog_entry_has_its_figures() -> None:
    assert set(rates.ACCELERATOR_RATES) == set(ACCELERATORS)
    assert all(m.active_params_billion > 0 for m in MODELS.values())
    for r in rates.ACCELERATOR_RATES.values():
        assert r.bf16_peak.source and r.prefill_efficiency.source and r.host_link.source
        assert [s for s, _ in r.host_link.curve] == sorted(s for s, _ in r.host_link.curve)


def _resources(name: str) -> tuple[StackPlan, list[Resource], offline.Recording]:
    stack_plan = plan(loading.load_preset(name))
    recording = offline.record(stack_plan, name)
    return stack_plan, [Resource(r.type, r.name, r.inputs) for r in recording.resources], recording


@pytest.mark.parametrize("name", loading.preset_names())
def test_the_rule_warns_exactly_where_a_tier_cannot_beat_recompute(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    stack_plan, resources, recording = _resources(name)
    assert "## Payoff" in summary(stack_plan, name, recording)
    short = stack_plan.payoff.short_of_break_even()
    messages = [v.message for v in RULE.check(resources, dict(RULE.config))]
    assert bool(messages) == bool(short)
    for tier in short:
        assert any(tier.tier.split(" (")[0] in m and "time to first token" in m for m in messages)
    # The rule reads this stack's servers: on a host link of 1 B/s, every CPU tier is short.
    key = stack_plan.config.cache.accelerator
    slow = dataclasses.replace(rates.ACCELERATOR_RATES[key].host_link, curve=((1, 1.0),))
    monkeypatch.setitem(rates.ACCELERATOR_RATES, key, dataclasses.replace(rates.ACCELERATOR_RATES[key], host_link=slow))
    assert any("the CPU tier" in v.message for v in RULE.check(resources, dict(RULE.config)))


def test_the_rule_fires_on_a_preset_whose_tier_cannot_pay_off() -> None:
    _, resources, _ = _resources("eks-h100-efs")
    [message] = [v.message for v in RULE.check(resources, dict(RULE.config))]
    assert "filesystem tier" in message and "1.57 GB/s" in message and "5.54 GB/s" in message
    assert "saves accelerator time" in message and "does not shorten time to first token" in message


def test_the_rule_judges_an_existing_class_by_its_configured_bandwidth() -> None:
    _, resources, _ = _resources("gpu-vllm-native-fs")
    config: dict[str, Any] = {"filesystemReadBandwidth": 4 * 10**9}  # 2 GB/s per pod of 2
    assert RULE.check(resources, dict(RULE.config)) == []
    [violation] = RULE.check(resources, config)
    assert "2.00 GB/s" in violation.message


def _rank_counters(pod_bandwidth: float, devices: int, kv_bytes: float = 8e9) -> dict[str, float]:
    """vLLM 0.26.0's load counters after one pod loaded `kv_bytes`: each rank copies its shard (1/devices)
    at its share of the pod's bandwidth and reports its bytes and CUDA-event time; the engine sums both
    over the ranks (offloading/common.py `DirectionalTransferStats.aggregate`)."""
    shard, seconds = kv_bytes / devices, kv_bytes / pod_bandwidth  # the ranks copy in parallel
    return {
        "vllm:kv_offload_load_bytes_total": shard * devices,
        "vllm:kv_offload_load_time_total": seconds * devices,
    }


@pytest.mark.parametrize("name", ["gpu-vllm-native-cpu", "gpu-vllm-native-fs", "amd-vllm-native-cpu"])
def test_the_load_alert_fires_exactly_when_the_pods_loads_lose_to_recompute(name: str) -> None:
    """The alert reads the summed counters: a pod loading 10% faster than break-even must stay quiet, one
    10% slower must fire, whatever the pod's tensor parallelism."""
    stack_plan = _plan(name)
    alert = next(a for a in stack_plan.alerts if a.name == "TieredCacheLoadTooSlow")
    expr = promql_parser.parse(alert.expr)
    devices = stack_plan.model_server.devices
    break_even = stack_plan.payoff.break_even
    assert evaluate(expr, _rank_counters(1.1 * break_even, devices)) is None
    assert evaluate(expr, _rank_counters(0.9 * break_even, devices)) is not None
