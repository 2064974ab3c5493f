"""The tier's payoff: break-even load bandwidth against recompute, per stack, with hand-computed numbers.

Arithmetic in the comments uses the catalog's figures: Qwen3-32B's 31,205,621,760 non-embedding parameters
(64 layers x (2 x 5120 x 8192 + 2 x 5120 x 1024 + 3 x 5120 x 25600)), so 62.411 GFLOP of GEMMs per token,
and 2 x 64 x 8192 = 1,048,576 attention FLOPs per token per prefix token (10.486 GFLOP at 10,000 tokens);
the H200 fit's shares of peak, GEMMs 0.52 at hidden 5120 and attention 0.67 (x 0.5/0.7 on MI300X, x 0.6/0.7 on
TPUs); H100 989.4 TFLOP/s bf16, MI300X 1307.4, TPU v6e 918, TPU7x 2307; the PCIe Gen5 x16 host-link curve
64 KiB 14, 256 KiB 36, 1 MiB 41, 4 MiB 53, 16 MiB 55 GB/s (a block takes the rate of the largest measured
size not above it). The alert's prefix length is 10,000 tokens unless configured.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import promql_parser
import pytest

from components.catalog import labels, rates
from components.catalog.accelerators import ACCELERATORS
from components.catalog.models import MODELS, ModelSpec
from components.formulas import payoff as formulas
from components.specs.payoff_table import Payoff
from components.units import GiB, KiB, MiB
from policies.checks import tier_payoff
from policies.checks.ruleset import RULES
from policies.resources import Resource, args, flag, pods, served_model
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import StackPlan, plan
from stacks.planning.resolution import Resolved, resolve
from stacks.review import offline
from stacks.review.check import check, stack_policy_config
from stacks.review.summary import summary
from tests.golden import GOLDEN, VARIANTS, golden_names
from tests.policy_cases import recorded, violations_of
from tests.test_alert_semantics import evaluate

RULE = next(r for r in RULES if r.name == "tiers-beat-recompute")
BLOCK_STAMP = labels.KV_TRANSFER_BLOCK_ANNOTATION
QWEN3_32B_KV = 2 * 64 * 8 * 128 * 2  # layers x KV heads x head dim x bf16, K and V: 262,144 B
GEMM_32B = 2 * 31_205_621_760  # FLOPs per token


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
    # (62.411e9 / 0.52 + 10.486e9 / 0.67 = 135.672e9 FLOP-equivalents) / (2 x 989.4e12) = 68.563 µs per token
    per_token = (GEMM_32B / 0.52 + 2 * 64 * 10_000 * 8192 / 0.67) / (2 * 989.4e12)
    assert payoff.prefix_tokens == formulas.ALERT_PREFIX_TOKENS == 10_000
    assert payoff.recompute_seconds == pytest.approx(per_token) == pytest.approx(68.563e-6, rel=1e-4)
    assert payoff.kv_bytes_per_pod == QWEN3_32B_KV
    # 262,144 B / 68.563 µs = 3.8234 GB/s per pod (1.91 GB/s per GPU)
    assert payoff.break_even == pytest.approx(3.8234e9, rel=1e-4)
    # block per GPU: 16 tokens x 262,144 B / 2 GPUs = 2 MiB -> the 1 MiB point, 41 GB/s; x 2 GPUs
    assert _tier(payoff, "CPU") == 82e9
    assert payoff.short_of_break_even() == []
    rows = {r.name: r.value for r in payoff.rows}
    assert rows["recompute time per token at 10,000 tokens"] == "68.6 µs"
    assert rows["CPU tier transfer block per device"] == "2 MiB"
    # 10,000 tokens: recompute 10,000 x 68.563 µs = 685.6 ms; reload 2.62144e9 B / 82e9 B/s = 32.0 ms
    at = next(a for a in payoff.lengths if a.prefix_tokens == 10_000)
    assert at.recompute_seconds == pytest.approx(0.68563, rel=1e-4)
    [reload] = at.reload_seconds
    assert reload == pytest.approx(0.031969, rel=1e-4)


def test_the_table_shows_each_prefix_length_and_the_cost_per_token_rises() -> None:
    payoff = _plan("gpu-vllm-native-cpu").payoff
    assert [a.prefix_tokens for a in payoff.lengths] == [1_024, 10_000, 32_768]
    per_token = [a.seconds_per_token for a in payoff.lengths]
    assert per_token == sorted(per_token)
    # 32,768 tokens: (62.411e9 / 0.52 + 2 x 64 x 32,768 x 8192 / 0.67) / 1978.8e12 = 86.30 µs
    assert per_token[-1] == pytest.approx((GEMM_32B / 0.52 + 2 * 64 * 32_768 * 8192 / 0.67) / 1978.8e12)
    assert [a.break_even for a in payoff.lengths] == sorted((a.break_even for a in payoff.lengths), reverse=True)
    # a hit: reload + a 128-token suffix over the cached prefix; a miss: prefill of both
    at, replica = payoff.lengths[1], _replica_32b()
    [reload], [speedup] = at.reload_seconds, at.hit_speedup
    assert reload is not None
    hit = reload + formulas.prefill_seconds(replica, 128, cached=10_000)
    assert speedup == pytest.approx(formulas.prefill_seconds(replica, 10_128) / hit)


def _replica_32b() -> formulas.Replica:
    return formulas.Replica(MODELS["Qwen/Qwen3-32B"], ACCELERATORS["gpu"].rates, 2)


def test_the_lengths_stop_at_the_models_context() -> None:
    """Qwen3's 40,960-token context leaves 40,832 tokens of prefix before a 128-token suffix."""
    model = MODELS["Qwen/Qwen3-32B"]
    assert formulas.table_lengths(model, 10_000) == (1_024, 10_000, 32_768)
    assert formulas.table_lengths(model, 40_832) == (1_024, 10_000, 32_768, 40_832)
    short = dataclasses.replace(model, context_tokens=8_192)
    assert formulas.table_lengths(short, 10_000) == (1_024, 8_064)
    payoff = _plan("gpu-vllm-native-cpu", "monitoring.alerts.prefix_tokens=40832").payoff
    assert payoff.prefix_tokens == 40_832 and payoff.lengths[-1].prefix_tokens == 40_832


def test_a_prefix_beyond_the_context_is_one_clear_line() -> None:
    with pytest.raises(ConfigError) as raised:
        _plan("gpu-vllm-native-cpu", "monitoring.alerts.prefix_tokens=40833")
    message = str(raised.value)
    assert "\n" not in message
    assert "monitoring.alerts.prefix_tokens = 40833" in message
    assert "at most 40832" in message and "Qwen/Qwen3-32B's 40960-token context" in message
    with pytest.raises(ConfigError, match=r"monitoring\.alerts\.prefix_tokens"):
        _plan("gpu-vllm-native-cpu", "monitoring.alerts.prefix_tokens=0")


def test_the_alert_length_moves_the_break_even() -> None:
    """A longer prefix costs more per token to recompute, so a slower load still beats it."""
    short = _plan("gpu-vllm-native-cpu", "monitoring.alerts.prefix_tokens=1024")
    long = _plan("gpu-vllm-native-cpu", "monitoring.alerts.prefix_tokens=32768")
    assert short.payoff.break_even > long.payoff.break_even
    assert _load_alert_threshold(short) == round(short.payoff.break_even / 2)
    assert _load_alert_threshold(long) == round(long.payoff.break_even / 2)


def test_a_tpu_stack() -> None:
    """Qwen3-32B on a TPU v6e host: 8 chips, the TPU offload connector's 128-token blocks."""
    payoff = _plan("tpu-v6-vllm-native-cpu").payoff
    # (62.411e9 / (0.52 x 6/7) + 10.486e9 / (0.67 x 6/7)) / (8 x 918e12) = 21.553 µs; 262,144 B / it = 12.163 GB/s
    assert payoff.recompute_seconds == pytest.approx(21.553e-6, rel=1e-4)
    assert payoff.break_even == pytest.approx(12.163e9, rel=1e-4)
    # block per chip: 128 x 262,144 / 8 = 4 MiB -> 53 GB/s; x 8 chips
    assert _tier(payoff, "CPU") == 8 * 53e9


def test_an_amd_stack() -> None:
    """Qwen3-32B, TP=2 on MI300X: a higher peak at an assumed lower share of it."""
    payoff = _plan("amd-vllm-native-cpu").payoff
    # (62.411e9 / (0.52 x 5/7) + 10.486e9 / (0.67 x 5/7)) / (2 x 1307.4e12) = 72.641 µs; 3.6088 GB/s
    assert payoff.recompute_seconds == pytest.approx(72.641e-6, rel=1e-4)
    assert payoff.break_even == pytest.approx(3.6088e9, rel=1e-4)
    assert _tier(payoff, "CPU") == 2 * 41e9


def test_a_multi_host_replica_splits_its_work_and_its_kv() -> None:
    """Qwen3-Coder-480B (8 of 160 experts active) over 2 pods x 4 TPU7x chips: each pod does half of both."""
    payoff = _plan("tpu-v7-vllm-native-cpu-multi-host").payoff
    kv = 2 * 62 * 8 * 128 * 2  # 253,952 B
    # 62 x (2 x 6144 x 12288 + 2 x 6144 x 1024 + 8 x 3 x 6144 x 2560 + 6144 x 160) = 33,606,991,872 parameters;
    # hidden 6144 is above the largest fitted (5120): its share, 0.52 x 6/7
    gemm, attention = 2 * 33_606_991_872, 2 * 62 * 10_000 * 12288
    seconds = (gemm / (0.52 * 6 / 7) + attention / (0.67 * 6 / 7)) / (8 * 2307e12)  # 9.6084 µs
    assert payoff.kv_bytes_per_pod == kv / 2
    assert payoff.recompute_seconds == pytest.approx(seconds) == pytest.approx(9.6084e-6, rel=1e-4)
    # per pod 126,976 B / 9.6084 µs = 13.215 GB/s
    assert payoff.break_even == pytest.approx(13.215e9, rel=1e-4)
    # block per chip: 128 x 253,952 / 8 = 3.875 MiB -> the 1 MiB point, 41 GB/s; x 4 chips per pod
    assert _tier(payoff, "CPU") == 4 * 41e9


def test_the_filesystem_tier_on_each_backend() -> None:
    efs = _plan("eks-h100-efs").payoff
    # min(20 GiB/s / 2 pods, 1,500 MiB/s per client) = 1,572,864,000 B/s, below 3.82 GB/s
    assert _tier(efs, "filesystem") == 1500 * 2**20
    assert [t.tier for t in efs.short_of_break_even()] == ["filesystem tier (aws-efs)"]
    lustre = _plan("gke-h100-lustre").payoff
    # 1,000 MB/s per TiB x 9,000 GiB / 1,024 = 8.789 GB/s over 2 pods = 4.395 GB/s: beats 3.82 GB/s
    assert _tier(lustre, "filesystem") == pytest.approx(1000e6 * 9000 / 1024 / 2)
    assert not lustre.short_of_break_even()
    # four pods share it: 2.197 GB/s each, short
    assert _plan("gke-h100-lustre", "cache.replicas=4").payoff.short_of_break_even()
    # an existing class: unknown until configured; then its share, capped by the CPU path (110 GB/s)
    assert _tier(_plan("gpu-vllm-native-fs").payoff, "filesystem") is None
    assert _tier(_plan("gpu-vllm-native-fs", "storage.read_bandwidth=40GB").payoff, "filesystem") == 20e9


def test_the_load_alert_defaults_to_the_derived_break_even_per_device() -> None:
    default, tpu = _plan("gpu-vllm-native-cpu"), _plan("tpu-v6-vllm-native-cpu")
    assert _load_alert_threshold(default) == round(default.payoff.break_even / 2) == 1_911_708_046  # TP=2
    override = _plan("gpu-vllm-native-cpu", "monitoring.alerts.min_load_bandwidth=3GB")
    assert _load_alert_threshold(override) == 3_000_000_000
    # TPU stacks export no load-time counters; per stack, the thresholds differ as derived
    assert default.payoff.break_even != tpu.payoff.break_even


def _total_params(model: ModelSpec) -> int:
    """Every weight: all experts, embeddings and LM head (what the model card counts)."""
    mlp = (
        3 * model.hidden_size * model.expert_intermediate_size * model.experts + model.hidden_size * model.experts
        if model.experts
        else model.mlp_params_per_layer
    )
    return model.layers * (model.attention_params_per_layer + mlp) + model.embedding_params


def test_the_geometry_gives_the_model_cards_parameters() -> None:
    """Each model's geometry counts its model card's total (and, for the MoE, its 35 B activated)."""
    for model in MODELS.values():
        assert _total_params(model) / 1e9 == pytest.approx(model.params_billion, rel=0.01)
    coder = MODELS["Qwen/Qwen3-Coder-480B-A35B-Instruct"]
    assert (coder.active_non_embedding_params + coder.embedding_params) / 1e9 == pytest.approx(35, rel=0.02)


def test_every_catalog_entry_has_its_figures() -> None:
    assert all(m.active_non_embedding_params > 0 and m.context_tokens > 0 for m in MODELS.values())
    for key, r in ((key, profile.rates) for key, profile in ACCELERATORS.items()):
        assert r.bf16_peak.source and r.prefill_efficiency.source and r.host_link.source
        # prefill measured on an H200 (the H100 shares its chip), decode on both: every other accelerator's shares of
        # peak say they are assumed
        assert r.prefill_efficiency.assumed == (key not in ("gpu", "h200"))
        assert r.decode.assumed == (key not in ("gpu", "h200")) and r.decode.source and r.interconnect.source
        assert [s for s, _ in r.prefill_efficiency.gemm] == sorted(s for s, _ in r.prefill_efficiency.gemm)
        assert [s for s, _ in r.host_link.curve] == sorted(s for s, _ in r.host_link.curve)


def _resources(name: str) -> tuple[StackPlan, list[Resource], offline.Recording]:
    stack_plan = plan(loading.load_preset(name))
    recording = offline.record(stack_plan, name)
    return stack_plan, [Resource(r.type, r.name, r.inputs) for r in recording.resources], recording


@pytest.mark.parametrize("name", loading.preset_names())
def test_the_rule_warns_exactly_where_a_tier_cannot_beat_recompute(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    stack_plan, resources, recording = _resources(name)
    text = summary(stack_plan, name, recording)
    assert "## Payoff" in text
    # the table by prefix length: a row per length, the alert's marked, none beyond the model's context
    lengths = [a.prefix_tokens for a in stack_plan.payoff.lengths]
    assert len(lengths) >= 3 and max(lengths) <= stack_plan.model_server.model.context_tokens - 128
    for n in lengths:
        marker = " (alert)" if n == stack_plan.payoff.prefix_tokens else ""
        assert f"\n| {n:,} tokens{marker} | " in text
    short = stack_plan.payoff.short_of_break_even()
    messages = [v.message for v in RULE.check(resources, dict(RULE.config))]
    assert bool(messages) == bool(short)
    for tier in short:
        assert any(tier.tier.split(" (")[0] in m and "time to first token" in m for m in messages)
    # The rule reads this stack's servers: on a host link of 1 B/s, every CPU tier is short.
    key = stack_plan.config.cache.accelerator
    profile = ACCELERATORS[key]
    slow = dataclasses.replace(profile.rates, host_link=dataclasses.replace(profile.rates.host_link, curve=((1, 1.0),)))
    monkeypatch.setitem(ACCELERATORS, key, dataclasses.replace(profile, rates=slow))
    assert any("the CPU tier" in v.message for v in RULE.check(resources, dict(RULE.config)))


def test_the_rule_fires_on_a_preset_whose_tier_cannot_pay_off() -> None:
    _, resources, _ = _resources("eks-h100-efs")
    [message] = [v.message for v in RULE.check(resources, dict(RULE.config))]
    assert "filesystem tier" in message and "1.57 GB/s" in message and "3.82 GB/s" in message
    assert "at 10,000-token prefixes" in message
    assert "saves accelerator time" in message and "does not shorten time to first token" in message


@pytest.mark.parametrize("prefix", [10_000, 40_832])
def test_the_rule_and_the_summary_judge_at_the_stacks_prefix_length(prefix: int) -> None:
    """Three pods share a 9,000 GiB Lustre: 2.93 GB/s each. At 10,000 tokens the break-even is 3.82 GB/s (short);
    at 40,832 a token costs (62.411e9 / 0.52 + 2 x 64 x 40,832 x 8192 / 0.67) / 1978.8e12 = 92.95 µs to recompute,
    so 2.82 GB/s is enough. `stacks check` passes the stack's length to the rule, which agrees with the table."""
    stack_plan = _plan("gke-h100-lustre", "cache.replicas=3", f"monitoring.alerts.prefix_tokens={prefix}")
    short = [t.tier for t in stack_plan.payoff.short_of_break_even()]
    assert short == (["filesystem tier (gcp-lustre)"] if prefix == 10_000 else [])
    findings = [
        f.violation.message
        for f in check(offline.record(stack_plan, "lustre"), stack_policy_config(stack_plan.config))
        if f.rule.name == RULE.name
    ]
    assert [m.split(" of ")[0].removeprefix("the ") for m in findings] == [s.split(" (")[0] for s in short]
    for message in findings:
        assert f"below the {stack_plan.payoff.break_even / 1e9:.2f} GB/s" in message


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


def test_managed_lustre_reads_its_tiers_rate_per_provisioned_tib() -> None:
    # 500 MB/s per TiB x 9,000 GiB (8.789 TiB) = 4.395 GB/s; 18,000 GiB doubles it
    assert formulas.lustre_aggregate(500, 9_000 * GiB) == pytest.approx(500e6 * 9_000 / 1024)
    assert formulas.lustre_aggregate(500, 18_000 * GiB) == 2 * formulas.lustre_aggregate(500, 9_000 * GiB)
    assert formulas.lustre_tib(1024 * GiB) == 1


def _golden(name: str) -> tuple[Resolved, list[Resource]]:
    preset, overrides = VARIANTS.get(name, (name, ()))
    rows = json.loads((GOLDEN / name / "resources.json").read_text())
    return resolve(loading.load_preset(preset, list(overrides))), [
        Resource(r["type"], r["name"], r["inputs"]) for r in rows
    ]


def _stamps(resources: list[Resource]) -> dict[str, Any]:
    """The transfer-block stamp of each workload whose pods carry a connector's key, by workload."""
    return {
        pod.owner.name: ((pod.owner.props.get("metadata") or {}).get("annotations") or {}).get(BLOCK_STAMP)
        for pod in pods(resources)
        if pod.labels.get(labels.KV_CONNECTOR_LABEL)
    }


@pytest.mark.parametrize("name", golden_names())
def test_every_model_server_workload_is_stamped_with_its_connectors_transfer_block(name: str) -> None:
    """The rule reads the block from the workload's stamp, the plan's payoff table from the connector: on every
    golden, each model-server role's workload is stamped with what the connector says for the preset's choice, the
    rule judges it at that block and the summary's table shows it."""
    stack, resources = _golden(name)
    tokens, _ = stack.connector.transfer_block(stack.choice)
    stamps = _stamps(resources)
    assert len(stamps) == stack.connector.roles(stack.choice)  # prefill and decode, where the stack splits them
    assert set(stamps.values()) == {str(tokens)}
    assert {s.block_tokens for s in tier_payoff.tiered_servers(resources)} == {tokens}
    row = next(
        line
        for line in (GOLDEN / name / "summary.md").read_text().splitlines()
        if "transfer block per device |" in line
    )
    assert int(row.split(" | ")[2].split(" tokens")[0]) == tokens


@pytest.mark.parametrize("name", golden_names())
def test_where_the_connector_moves_vllms_kv_block_the_server_runs_that_block(name: str) -> None:
    """The stamp is the block vLLM runs (its `--block-size`, else the profile's default): on XPU both are the
    profile's 64 (the stamp said 16 while the overlays' flag said 64, until the profile carried it)."""
    stack, resources = _golden(name)
    if stack.connector.transfer_block(stack.choice)[1] != "vLLM KV block":
        return
    run = {
        int(flag(args(c), "--block-size") or stack.accelerator.kv_block_tokens)
        for pod in pods(resources)
        if pod.labels.get(labels.KV_CONNECTOR_LABEL)
        for c in pod.containers(init=False)
        if served_model(c)
    }
    [stamp] = {int(v) for v in _stamps(resources).values()}
    assert run == {stamp}


def test_the_rule_judges_a_pod_at_the_block_its_workload_is_stamped_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a host link slow below 1 MiB and fast from it, two H100s moving the stamped 16-token blocks (16 x
    262,144 B / 2 = 2 MiB per GPU) reload fast enough; the same render stamped with 1-token blocks (128 KiB per
    GPU, 1 GB/s each, 2 GB/s per pod) does not, and the rule names that block. Only the stamp changes, not the
    server's arguments."""
    resources = recorded("gpu-vllm-native-cpu")
    gpu = ACCELERATORS["gpu"]
    link = rates.HostLink("stepped", ((64 * KiB, 1e9), (MiB, 50e9)), "slow below 1 MiB")
    monkeypatch.setitem(
        ACCELERATORS, "gpu", dataclasses.replace(gpu, rates=dataclasses.replace(gpu.rates, host_link=link))
    )
    [owner] = {id(p.owner): p.owner for p in pods(resources) if p.labels.get(labels.KV_CONNECTOR_LABEL)}.values()
    annotations = owner.props["metadata"]["annotations"]
    assert annotations[BLOCK_STAMP] == "16"
    assert violations_of(RULE, resources) == []
    annotations[BLOCK_STAMP] = "1"
    [message] = violations_of(RULE, resources)
    assert message.startswith(
        "the CPU tier of llmd-model-server-gpu-vllm-decode reloads at about 2.00 GB/s per pod (stepped at 131072 B"
        " blocks), below the 3.82 GB/s"
    )
    annotations[BLOCK_STAMP] = "8"  # 1 MiB per GPU: the fast point again
    assert violations_of(RULE, resources) == []
