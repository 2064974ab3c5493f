"""An accelerator's decode figures (`components/catalog/rates.py` `DecodeEfficiency`) fitted to step_costs.py's
measured decode steps.

The time model's decode step is layers x layer_s + max(GEMM FLOPs, weights / (bandwidth x weights share)) +
max(attention FLOPs, KV bytes / (bandwidth x KV share)) (`EngineCosts.step_seconds`, the step's all-reduces aside:
one GPU ran each shard). The fit is the grid point (shares by 0.01, layer_s by 1 us) that minimises the largest
|log(model / measured)| over the `compiled` cells of the TP=1 runs whose attention fills the GPU (batch x KV heads
>= its multiprocessors, or a context of at most 1k: PyTorch's flash kernel splits no context, vLLM's does). Given
several calls of the same grid, each cell is their mean. The other runs (TP > 1 shards) are printed, not fitted.

    ./run fit-decode gpu tests/fixtures/device/h100-step-costs-2026-12-05.json \\
        tests/fixtures/device/h100-step-costs-2026-12-05-b.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile  # noqa: E402
from components.catalog.models import MODELS  # noqa: E402
from components.catalog.rates import DecodeEfficiency  # noqa: E402
from components.formulas.engine_costs import engine_costs  # noqa: E402
from components.formulas.hbm import HbmBudget  # noqa: E402
from components.formulas.payoff import Replica  # noqa: E402

MULTIPROCESSORS = 132  # H100 SXM and H200: one flash block per sequence and KV head fills them
SHARES = np.round(np.arange(0.50, 1.0001, 0.01), 2)
LAYER_S = np.arange(20, 101) * 1e-6
MAX_CALLS = 8  # calls averaged at most
MAX_FILE_BYTES = 1024 * 1024  # a step_costs.py output is 15-35 KB


def attention_fills_gpu(cell: dict[str, Any], kv_heads: int) -> bool:
    return bool(cell["batch"] * kv_heads >= MULTIPROCESSORS or cell["context"] <= 1024)


def mean_of_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first call's runs with each decode cell's time the mean over the calls (the same runs and grid)."""
    runs: list[dict[str, Any]] = json.loads(json.dumps(calls[0]["runs"]))
    for index, run in enumerate(runs):
        for k, cell in enumerate(run["decode"]):
            same = [call["runs"][index]["decode"][k] for call in calls]
            if any(
                (c["batch"], c["context"], c["variant"]) != (cell["batch"], cell["context"], cell["variant"])
                for c in same
            ):
                raise ValueError(f"{run['model']}: the calls' decode grids differ at cell {k}")
            cell["step_s"] = sum(c["step_s"] for c in same) / len(same)
    return runs


@dataclass(frozen=True)
class Cells:
    """Per measured cell: its run, the time, and the model's parts at shares of 1 and no per-layer cost."""

    names: list[tuple[str, int, int, int]]  # model, TP, batch, context
    measured: np.ndarray
    fitted: np.ndarray  # bool: a TP=1 cell whose attention fills the GPU
    layers: np.ndarray
    gemm: np.ndarray  # the GEMMs' FLOPs at the peak share
    weights: np.ndarray  # the weights read at the full bandwidth
    attention: np.ndarray
    kv: np.ndarray

    def model(self, weights: float, kv: float, layer_s: float) -> np.ndarray:
        step: np.ndarray = (
            self.layers * layer_s
            + np.maximum(self.gemm, self.weights / weights)
            + np.maximum(self.attention, self.kv / kv)
        )
        return step


def cells_of(runs: list[dict[str, Any]], accelerator: AcceleratorProfile) -> Cells:
    unit = replace(accelerator.rates, decode=DecodeEfficiency(1.0, 1.0, 0.0, "unit shares"))
    rows: list[tuple[Any, ...]] = []
    for run in runs:
        if run.get("error") or run["model"] not in MODELS:
            continue
        spec, tp = MODELS[run["model"]], run["tensor_parallel"]
        costs = engine_costs(
            Replica(spec, unit, tp), HbmBudget(spec, accelerator, tp, tp, 0.9, "fit", 4096, "fit"), None, None
        )
        for cell in run["decode"]:
            if cell["variant"] != "compiled":
                continue
            batch, context = cell["batch"], cell["context"]
            if not cell["step_s"] > 0 or batch < 1 or context < 1:
                raise ValueError(
                    f"{run['model']}: a decode cell of batch {batch}, context {context}, {cell['step_s']} s"
                )
            tokens = batch * context
            rows.append(
                (
                    (run["model"], tp, batch, context),
                    cell["step_s"],
                    tp == 1 and attention_fills_gpu(cell, run["shard"]["kv_heads"]),
                    spec.layers,
                    batch * costs.gemm_s_per_token,
                    costs.weights_read_s,
                    tokens * costs.attention_s_per_pair,
                    tokens * costs.kv_read_s_per_token,
                )
            )
    columns = list(zip(*rows, strict=True))
    return Cells(
        list(columns[0]),
        np.array(columns[1]),
        np.array(columns[2], dtype=bool),
        *(np.array(c, dtype=float) for c in columns[3:]),
    )


@dataclass(frozen=True)
class Fit:
    weights: float
    kv: float
    layer_s: float
    worst: float  # the largest |log(model / measured)| over the fitted cells


def fit(cells: Cells) -> Fit:
    if not cells.fitted.any():
        raise ValueError("no TP=1 cell whose attention fills the GPU: nothing to fit")
    best = Fit(0.0, 0.0, 0.0, float("inf"))
    sel = cells.fitted
    for weights in SHARES:
        for kv in SHARES:
            base = np.maximum(cells.gemm[sel], cells.weights[sel] / weights) + np.maximum(
                cells.attention[sel], cells.kv[sel] / kv
            )
            # every layer_s at once: [layer_s, cell]
            worst = np.abs(np.log((base + np.outer(LAYER_S, cells.layers[sel])) / cells.measured[sel])).max(axis=1)
            k = int(np.argmin(worst))
            if worst[k] < best.worst - 1e-12:
                best = Fit(float(weights), float(kv), float(round(LAYER_S[k] * 1e6)) * 1e-6, float(worst[k]))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="./run fit-decode", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("accelerator", help=f"a catalog profile: {', '.join(sorted(ACCELERATORS))}")
    parser.add_argument("measurements", nargs="+", type=Path, help="step_costs.py outputs of the same grid")
    args = parser.parse_args()
    if args.accelerator not in ACCELERATORS:
        parser.error(f"accelerator: {args.accelerator!r} is not one of {sorted(ACCELERATORS)}")
    if len(args.measurements) > MAX_CALLS:
        parser.error(f"measurements: {len(args.measurements)} files, at most {MAX_CALLS}")
    missing = [str(p) for p in args.measurements if not p.is_file()]
    if missing:
        parser.error(f"measurements: no such file: {', '.join(missing)}")
    large = [f"{p} ({p.stat().st_size:,} bytes)" for p in args.measurements if p.stat().st_size > MAX_FILE_BYTES]
    if large:
        parser.error(f"measurements: larger than {MAX_FILE_BYTES:,} bytes: {', '.join(large)}")
    try:
        calls = [json.loads(p.read_text()) for p in args.measurements]
        cells = cells_of(mean_of_calls(calls), ACCELERATORS[args.accelerator])
        best = fit(cells)
    except (
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
    ) as error:  # json's decode errors are ValueErrors
        parser.error(f"measurements: not step_costs.py outputs of one grid: {error!r}"[:300])
    print(
        f"weights {best.weights:.2f}, kv {best.kv:.2f}, layer_s {best.layer_s * 1e6:.0f} us:"
        f" largest |log(model / measured)| {best.worst:.3f} over {int(cells.fitted.sum())} cells"
    )
    ratios = cells.model(best.weights, best.kv, best.layer_s) / cells.measured
    for name, r, fitted in zip(cells.names, ratios, cells.fitted, strict=True):
        print(f"  {name[0]} TP={name[1]} {name[2]} x {name[3]}: {r:.3f}{' (fitted)' if fitted else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
