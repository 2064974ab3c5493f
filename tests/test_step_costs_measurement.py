"""The time model's engine step against the H200 and H100 measurements (tests/fixtures/device/, its SOURCE.md),
and the step costs' arithmetic worked by hand."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile
from components.catalog.models import MODELS
from components.catalog.rates import H100_DECODE, H200_DECODE, NVLINK4, Interconnect
from components.formulas.engine_costs import engine_costs
from components.formulas.hbm import HbmBudget
from components.formulas.load_costs import LoadCosts
from components.formulas.payoff import Replica
from components.formulas.serving_time import EngineCosts
from tests.helpers import script_module

DEVICE = Path(__file__).parent / "fixtures/device"
FIXTURE = DEVICE / "h200-step-costs-2026-12-04-b.json"
MEASURED = json.loads(FIXTURE.read_text())


FIT = script_module("fit_decode", Path(__file__).resolve().parents[1] / "benchmarks/device/fit_decode.py")
H100_CALLS = [
    json.loads((DEVICE / name).read_text())
    for name in ("h100-step-costs-2026-12-05.json", "h100-step-costs-2026-12-05-b.json")
]
# What `H100_DECODE` is fitted to: each decode cell the mean of the day's two calls.
H100_MEASURED = {**H100_CALLS[0], "runs": FIT.mean_of_calls(H100_CALLS)}
H200 = ACCELERATORS["h200"]
H100 = ACCELERATORS["gpu"]
# The measured models the catalog holds (the others are checked where the catalog gains them).
CATALOG_RUNS = ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B")
BAND = (0.8, 1.25)


def run_of(model: str, tp: int, measured: dict[str, Any] = MEASURED) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in measured["runs"] if r["model"] == model and r["tensor_parallel"] == tp)
    return found


def costs_of(model: str, tp: int = 1, accelerator: AcceleratorProfile = H200) -> EngineCosts:
    spec = MODELS[model]
    hbm = HbmBudget(spec, accelerator, tp, tp, 0.9, "test", 4096, "test")
    return engine_costs(Replica(spec, accelerator.rates, tp), hbm, None, None)


attention_fills_gpu = FIT.attention_fills_gpu


def test_the_measured_shapes_are_the_catalogs() -> None:
    for model in CATALOG_RUNS:
        shard, spec = run_of(model, 1)["shard"], MODELS[model]
        assert (shard["layers"], shard["hidden"], shard["heads"], shard["kv_heads"], shard["head_dim"]) == (
            spec.layers,
            spec.hidden_size,
            spec.attention_heads,
            spec.kv_heads,
            spec.head_dim,
        )
        assert (shard["intermediate"], shard["vocab"]) == (spec.intermediate_size, spec.vocab_size)
    assert MEASURED["machine"]["device"] == "NVIDIA H200"
    assert MEASURED["checks"]["graph_replay_equals_eager"] is True
    assert MEASURED["checks"]["decode_attention_rel_error_vs_float64"] < 1e-2  # bf16: 1e-3..1e-2


def decode_ratios(
    model: str, tp: int = 1, accelerator: AcceleratorProfile = H200, measured: dict[str, Any] = MEASURED
) -> list[tuple[int, int, float]]:
    """(batch, context, model / measured) over one measurement's compiled decode cells whose attention fills the
    GPU; a TP > 1 shard's model without its all-reduces (one GPU ran it; at TP=1 there are none)."""
    costs, run = costs_of(model, tp, accelerator), run_of(model, tp, measured)
    out = []
    for cell in run["decode"]:
        if cell["variant"] != "compiled" or not attention_fills_gpu(cell, run["shard"]["kv_heads"]):
            continue
        tokens = cell["batch"] * cell["context"]
        step = costs.step_seconds(cell["batch"], tokens, tokens)
        modelled = step - all_reduces_s(costs, model, accelerator, cell["batch"])
        out.append((cell["batch"], cell["context"], modelled / cell["step_s"]))
    return out


def shard_ratios(model: str, tp: int, accelerator: AcceleratorProfile, measured: dict[str, Any]) -> list[float]:
    return [ratio for _, _, ratio in decode_ratios(model, tp, accelerator, measured)]


def all_reduces_s(costs: EngineCosts, model: str, accelerator: AcceleratorProfile, tokens: int) -> float:
    """What a step of `tokens` tokens pays for its all-reduces (a shard measured on one GPU ran none)."""
    latency = costs.step_s - MODELS[model].layers * accelerator.rates.decode.layer_s
    return latency + tokens * costs.allreduce_s_per_token


H100_RUNS = (
    ("Qwen/Qwen3-0.6B", 1),
    ("Qwen/Qwen3-8B", 1),
    ("meta-llama/Llama-3.1-8B-Instruct", 1),
    ("Qwen/Qwen3-32B", 2),
)


def test_the_h100_measurement_is_an_h100s() -> None:
    assert H100_MEASURED["machine"]["device"] == "NVIDIA H100 80GB HBM3"
    assert H100_MEASURED["checks"]["graph_replay_equals_eager"] is True
    assert H100.rates.decode == H100_DECODE and H100.memory_bandwidth == 3.35e12


@pytest.mark.parametrize(("model", "tp"), H100_RUNS)
def test_the_h100s_modelled_decode_step_is_within_a_tenth_of_its_measured(model: str, tp: int) -> None:
    # Fitted over the TP=1 cells (largest miss 4.5%); the Qwen3-32B shard was not read by the fit (0.92-1.01).
    ratios = shard_ratios(model, tp, H100, H100_MEASURED)
    assert len(ratios) >= 5
    assert min(ratios) >= 0.9 and max(ratios) <= 1.06, (model, [round(r, 3) for r in ratios])


def test_the_h200s_decode_figures_would_overstate_every_h100_step() -> None:
    """Why the H100 has a fit of its own: the H200's shares, taken for the H100 as before, model every one of the 25
    measured H100 cells slow (1.01-1.16); its own fit misses by 9% at most (the Qwen3-32B shard's 128 x 1k cell)."""
    taken = replace(H100, rates=replace(H100.rates, decode=H200_DECODE))
    ratios = [r for model, tp in H100_RUNS for r in shard_ratios(model, tp, taken, H100_MEASURED)]
    own = [r for model, tp in H100_RUNS for r in shard_ratios(model, tp, H100, H100_MEASURED)]
    assert len(ratios) == 25 and min(ratios) > 1.0
    assert max(abs(math.log(r)) for r in ratios) > 0.12 > max(abs(math.log(r)) for r in own)


def test_the_h100s_figures_are_the_fit_of_its_two_calls() -> None:
    """benchmarks/device/fit_decode.py over the two calls' mean gives the catalog's figures, 4.5% at worst."""
    cells = FIT.cells_of(H100_MEASURED["runs"], H100)
    best = FIT.fit(cells)
    assert (best.weights, best.kv) == (H100_DECODE.weights, H100_DECODE.kv)
    assert best.layer_s == pytest.approx(H100_DECODE.layer_s) and best.worst < 0.046
    assert int(cells.fitted.sum()) == 20  # three TP=1 models' filling cells; the Qwen3-32B shard not among them
    # The script's vectorised step is the time model's: the same ratios as EngineCosts.step_seconds gives.
    fitted = cells.model(best.weights, best.kv, best.layer_s)[cells.fitted] / cells.measured[cells.fitted]
    by_engine = [r for model, tp in H100_RUNS if tp == 1 for r in shard_ratios(model, tp, H100, H100_MEASURED)]
    assert sorted(fitted) == pytest.approx(sorted(by_engine), rel=1e-9)


def test_the_h200s_figures_are_near_the_fit_of_the_models_the_catalog_then_held() -> None:
    """Fitted on 2026-12-04 over the Qwen3 models (the catalog held no Llama then): the script gives 0.77, 0.86,
    54 us (8.7% at worst) against the catalog's 0.76, 0.86, 54 us (9.5%); kept, as the renders and bench stand on
    them."""
    runs = [r for r in MEASURED["runs"] if r["model"].startswith("Qwen/")]
    cells = FIT.cells_of(runs, H200)
    best = FIT.fit(cells)
    assert abs(best.weights - H200_DECODE.weights) <= 0.011 and abs(best.kv - H200_DECODE.kv) <= 0.011
    assert best.layer_s == pytest.approx(H200_DECODE.layer_s)
    catalog = cells.model(H200_DECODE.weights, H200_DECODE.kv, H200_DECODE.layer_s) / cells.measured
    assert best.worst <= float(np.abs(np.log(catalog[cells.fitted])).max()) < 0.1


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "not step_costs.py outputs of one grid"),
        ('{"runs": [1, 2]}', "not step_costs.py outputs of one grid"),
        ("zero", "a decode cell of batch 1, context 1024, 0.0 s"),
        (" " * (1024 * 1024 + 1), "larger than 1,048,576 bytes"),
    ],
)
def test_the_fit_refuses_a_bad_measurement_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, content: str, words: str
) -> None:
    path = tmp_path / "m.json"
    if content == "zero":
        call = json.loads(json.dumps(H100_CALLS[0]))
        call["runs"][0]["decode"][0]["step_s"] = 0
        content = json.dumps(call)
    path.write_text(content)
    monkeypatch.setattr(sys, "argv", ["fit_decode.py", "gpu", str(path)])
    with pytest.raises(SystemExit) as exited:
        FIT.main()
    err = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and words in err[-1] and err[-1].startswith("./run fit-decode: error: measurements:")


def test_calls_of_different_grids_are_not_averaged() -> None:
    other = json.loads(json.dumps(H100_CALLS[1]))
    other["runs"][0]["decode"][0]["batch"] += 1
    with pytest.raises(ValueError, match="decode grids differ"):
        FIT.mean_of_calls([H100_CALLS[0], other])


@pytest.mark.parametrize("model", ("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B"))
def test_the_h100s_modelled_prefill_is_within_the_band_of_its_measured(model: str) -> None:
    """The H100 takes the H200's prefill fit (the same bf16 peak and tensor cores): the H100's chunks of 512 tokens
    and more agree."""
    tp = 2 if model == "Qwen/Qwen3-32B" else 1
    costs, run = costs_of(model, tp, H100), run_of(model, tp, H100_MEASURED)
    rows = [p for p in run["prefill"] if p["chunk"] >= 512]
    assert len(rows) >= 4
    for row in rows:
        modelled = costs.prefill_seconds(row["chunk"], row["cached"]) - all_reduces_s(costs, model, H100, row["chunk"])
        assert BAND[0] <= modelled / row["step_s"] <= BAND[1], (model, row["chunk"], row["cached"])


@pytest.mark.parametrize("model", CATALOG_RUNS)
def test_the_modelled_decode_step_at_tp1_is_within_the_band_of_the_measured(model: str) -> None:
    ratios = decode_ratios(model)
    assert len(ratios) >= 6  # the grid's cells whose attention fills the GPU
    outside = [(b, c, round(r, 2)) for b, c, r in ratios if not BAND[0] <= r <= BAND[1]]
    assert not outside, f"{model}: (batch, context, model / measured) outside {BAND}: {outside}"


def test_the_excluded_cells_are_the_kernels_not_the_model() -> None:
    # Qwen3-32B: at 16k context, 8 sequences' steps take what one sequence's takes plus 1.2 ms though they read
    # 8x the KV (4.3 GB more): one block per sequence and KV head, the context not split.
    run = run_of("Qwen/Qwen3-32B", 1)
    step = {(c["batch"], c["context"]): c["step_s"] for c in run["decode"] if c["variant"] == "compiled"}
    one, eight = step[(1, 16384)] - step[(1, 1024)], step[(8, 16384)] - step[(8, 1024)]
    assert eight / one < 1.1


@pytest.mark.parametrize("model", CATALOG_RUNS[1:])
def test_the_modelled_prefill_is_within_the_band_of_the_measured(model: str) -> None:
    costs, run = costs_of(model), run_of(model, 1)
    rows = [p for p in run["prefill"] if p["variant"] == "compiled" and p["chunk"] >= 512]
    assert len(rows) >= 4
    for row in rows:
        ratio = costs.prefill_seconds(row["chunk"], row["cached"]) / row["step_s"]
        assert BAND[0] <= ratio <= BAND[1], (model, row["chunk"], row["cached"], round(ratio, 2))


def test_an_all_reduce_is_its_latency_and_its_ring_bytes() -> None:
    link = Interconnect("x", 100e9, 10e-6, "test")
    assert link.all_reduce_seconds(1e6, 1) == 0.0
    assert link.all_reduce_seconds(1e6, 2) == pytest.approx(10e-6 + 1e6 / 100e9)  # 2 (n-1)/n = 1
    assert link.all_reduce_seconds(1e6, 8) == pytest.approx(10e-6 + 1.75 * 1e6 / 100e9)


def test_tensor_parallel_step_costs_by_hand() -> None:
    # Qwen3-32B at TP=2 on H100s: 64 layers x 49 us of small kernels + 128 all-reduces x 8.7 us per step;
    # per token, 128 all-reduces of one 5,120-wide bf16 vector (10,240 B) over NVLink's 450 GB/s.
    gpu = ACCELERATORS["gpu"]
    spec = MODELS["Qwen/Qwen3-32B"]
    hbm = HbmBudget(spec, gpu, 2, 2, 0.9, "test", 4096, "test")
    costs = engine_costs(Replica(spec, gpu.rates, 2), hbm, None, None)
    assert gpu.rates.interconnect == NVLINK4
    assert costs.step_s == pytest.approx(64 * 49e-6 + 128 * 8.7e-6)
    assert costs.allreduce_s_per_token == pytest.approx(128 * 10_240 / 450e9)
    # Weights: 32.8 B parameters x 2 bytes over 2 devices, read at the H100's measured 0.85 of 3.35 TB/s.
    assert costs.weights_read_s == pytest.approx(32.8e9 / (3.35e12 * 0.85))
    # TP=1 pays no all-reduce.
    one = costs_of("Qwen/Qwen3-32B")
    assert one.allreduce_s_per_token == 0.0
    assert one.step_s == pytest.approx(64 * 54e-6)


def test_a_step_sums_its_gemms_and_its_attention() -> None:
    costs = EngineCosts(
        1e-4, 1e-9, 0.01, 1e-6, LoadCosts(0.0, 0.0), 1000, 10, 10**6, step_s=0.002, allreduce_s_per_token=1e-5
    )
    # 10 decoding tokens over 5,000 tokens of context: 2 ms + 0.1 ms + max(1 ms, 10 ms) + max(5 us, 5 ms).
    assert costs.step_seconds(10, 5000, 5000) == pytest.approx(0.002 + 0.0001 + 0.01 + 0.005)
    # A 1,000-token prefill chunk: its GEMMs are compute (100 ms > 10 ms) and its attention too.
    assert costs.step_seconds(1000, 500_000, 0) == pytest.approx(0.002 + 0.01 + 0.1 + 0.0005)
