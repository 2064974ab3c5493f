"""llm-d's published Qwen3-32B 16xH100 CPU-offload benchmark (tests/fixtures/llm-d-benchmark/): the copy is
whole and consistent with itself, and the shared-prefix working-set formula gives the report's working set.
The copy against the documents themselves is refresh.py --check (it needs the network or a llm-d clone)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.formulas.shared_prefix import SharedPrefixShape, working_set_tokens
from tests.helpers import script_module

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "llm-d-benchmark"
DATA: dict[str, Any] = json.loads((FIXTURES / "qwen3-32b-h100-tiered.json").read_text(encoding="utf-8"))
METRICS = {"ttft_mean_s", "ttft_p90_s", "e2e_latency_mean_s", "e2e_latency_p90_s", "throughput_tok_s"}


def test_every_stage_has_both_configurations_with_positive_figures() -> None:
    for stage in DATA["stages"]:
        for config in ("hbm_only", "hbm_plus_cpu"):
            assert set(stage[config]) == METRICS, (stage["rate_qps"], config)
            assert all(value > 0 for value in stage[config].values()), (stage["rate_qps"], config)


def test_stages_are_the_configured_ladder_in_ascending_order() -> None:
    rates = [stage["rate_qps"] for stage in DATA["stages"]]
    assert rates == sorted(set(rates))
    assert rates == [stage["rate_qps"] for stage in DATA["workload"]["load"]["stages"]]
    assert all(stage["duration_s"] > 0 for stage in DATA["workload"]["load"]["stages"])
    # The report prints four of the eight stages; the rest come from the README that first published the run.
    assert [stage["rate_qps"] for stage in DATA["stages"] if stage["in_report"]] == [5.0, 10.0, 20.0, 40.0]


@pytest.mark.parametrize("stage", DATA["stages"], ids=lambda stage: f"{stage['rate_qps']:g}qps")
def test_published_changes_match_the_copied_figures(stage: dict[str, Any]) -> None:
    """Each printed '(±x%)' is the offload row against the baseline row to its 0.1 rounding: a digit copied
    wrong in either row shows here."""
    assert set(stage["published_change_pct"]) == METRICS
    for metric, published in stage["published_change_pct"].items():
        change = (stage["hbm_plus_cpu"][metric] / stage["hbm_only"][metric] - 1) * 100
        assert change == pytest.approx(published, abs=0.1), metric


def test_hardware_and_tier_sizes_add_up() -> None:
    hardware, cache = DATA["hardware"], DATA["cache"]
    assert hardware["gpus"] == hardware["model_servers"] * hardware["gpus_per_server"]
    assert hardware["gpus_per_server"] == hardware["tensor_parallel"]
    assert cache["cpu_total_GiB"] == hardware["model_servers"] * cache["cpu_per_replica_GiB"]
    # The run's point: the working set overflows HBM and fits the CPU tier.
    assert cache["gpu_total_tokens"] < cache["working_set_tokens"] < cache["cpu_total_tokens"]


def test_working_set_formula_gives_the_reports_working_set() -> None:
    first = DATA["workload"]["load"]["stages"][0]
    shape = SharedPrefixShape(
        **DATA["workload"]["shared_prefix"], request_rate=first["rate_qps"], duration=int(first["duration_s"])
    )
    assert working_set_tokens(shape) == DATA["cache"]["working_set_tokens"] == 4_640_000


def test_source_md_and_the_json_pin_the_same_documents() -> None:
    refresh = script_module("llmd_benchmark_refresh", FIXTURES / "refresh.py")
    pins = refresh.pinned((FIXTURES / "SOURCE.md").read_text(encoding="utf-8"))
    documents = DATA["source"]["documents"]
    assert {role: (d["commit"], d["path"], d["sha256"]) for role, d in documents.items()} == pins
    assert DATA["source"]["repository"] == "llm-d/llm-d" and DATA["source"]["license"] == "Apache-2.0"


SGLANG: dict[str, Any] = json.loads((FIXTURES / "qwen3-32b-h100-sglang-tiered.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("stage", SGLANG["stages"], ids=lambda stage: f"sglang-{stage['rate_qps']:g}qps")
def test_sglang_published_changes_match_the_copied_figures(stage: dict[str, Any]) -> None:
    """The SGLang run's table (the same workload, another engine): every printed '(±x%)' holds."""
    assert set(stage["hbm_only"]) == set(stage["hbm_plus_cpu"]) == METRICS
    assert set(stage["published_change_pct"]) == METRICS
    for metric, published in stage["published_change_pct"].items():
        change = (stage["hbm_plus_cpu"][metric] / stage["hbm_only"][metric] - 1) * 100
        assert change == pytest.approx(published, abs=0.1), metric


def test_the_sglang_run_is_the_same_workload_on_the_same_fleet() -> None:
    assert [stage["rate_qps"] for stage in SGLANG["stages"]] == [5.0, 10.0, 20.0, 40.0]
    assert SGLANG["workload"] == DATA["workload"]  # assumed, and said so in the JSON
    assert "assumed" in SGLANG["workload_assumed"]
    hardware = SGLANG["hardware"]
    assert (hardware["model_servers"], hardware["tensor_parallel"], hardware["engine"]) == (
        8,
        2,
        "SGLang v0.5.13.post1",
    )
    # 819,200 tokens of Qwen3-32B's 256 KiB each are the 200 GiB a replica the report says.
    assert SGLANG["cache"]["cpu_tokens_per_replica"] * 256 * 1024 == SGLANG["cache"]["cpu_per_replica_GiB"] * 2**30


def test_source_md_and_the_sglang_json_pin_the_same_documents() -> None:
    refresh = script_module("llmd_benchmark_refresh_sglang", FIXTURES / "refresh_sglang.py")
    pins = refresh.pins((FIXTURES / "SOURCE.md").read_text(encoding="utf-8"))
    documents = SGLANG["source"]["documents"]
    assert {role: (d["commit"], d["path"], d["sha256"]) for role, d in documents.items()} == pins
    assert pins["workload"] == tuple(DATA["source"]["documents"]["workload"].values())


GPT_OSS: dict[str, Any] = json.loads((FIXTURES / "gpt-oss-120b-h100-tiered.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("stage", GPT_OSS["stages"], ids=lambda stage: f"gpt-oss-{stage['rate_qps']:g}qps")
def test_gpt_oss_published_changes_match_the_copied_figures(stage: dict[str, Any]) -> None:
    """The gpt-oss-120b run's table (another model, TP=1): every printed '(±x%)' holds, within the rounding of
    figures printed to two decimals (0.45 s against 0.44 s is 2%)."""
    assert set(stage["hbm_only"]) == set(stage["hbm_plus_cpu"]) == METRICS
    for metric, published in stage["published_change_pct"].items():
        change = (stage["hbm_plus_cpu"][metric] / stage["hbm_only"][metric] - 1) * 100
        assert change == pytest.approx(published, abs=2.5), metric


def test_the_gpt_oss_run_is_the_qwen3_workload_on_16_single_gpu_servers() -> None:
    assert [stage["rate_qps"] for stage in GPT_OSS["stages"]] == [5.0 * k for k in range(1, 9)]
    assert GPT_OSS["workload"]["shared_prefix"] == DATA["workload"]["shared_prefix"]
    assert GPT_OSS["workload"]["load"] == DATA["workload"]["load"]
    hardware, servers = GPT_OSS["hardware"], GPT_OSS["servers"]
    assert (hardware["model_servers"], hardware["tensor_parallel"], hardware["model"]) == (16, 1, "openai/gpt-oss-120b")
    assert servers["cpu_bytes_to_use"] == 100 * 2**30 == GPT_OSS["cache"]["cpu_per_replica_GiB"] * 2**30
    # The summary's output tokens/s over its requests/s: 382 and 359 output tokens a request as counted, the
    # per-stage "Throughput" column is output tokens/s (5 QPS x 382 is 1,910 against 1,983 printed).
    summary = GPT_OSS["summary"]
    assert round(summary["hbm_only"]["output_tokens_per_s"] / summary["hbm_only"]["requests_per_s"]) == 382
    assert round(summary["hbm_plus_cpu"]["output_tokens_per_s"] / summary["hbm_plus_cpu"]["requests_per_s"]) == 359


def test_source_md_and_the_gpt_oss_json_pin_the_same_documents() -> None:
    refresh = script_module("llmd_benchmark_refresh_gpt_oss", FIXTURES / "refresh_gpt_oss.py")
    pins = refresh.pins((FIXTURES / "SOURCE.md").read_text(encoding="utf-8"))
    documents = GPT_OSS["source"]["documents"]
    assert {role: (d["commit"], d["path"], d["sha256"]) for role, d in documents.items()} == pins
