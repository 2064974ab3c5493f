"""How far the time model's TTFT p90 lies from the published runs it replays: the band `workload.slo` sizes
against.

`./run bench` (benchmarks/published_runs.py) replays every published tiered-cache run the repository holds, stage
by stage, and writes each stage's model / published ratios to tests/fixtures/time-model/published-ratios.json;
tests/test_time_model_band.py holds the figures here to that file. A band is the lowest and highest TTFT p90 ratio
over every stage (both tiers) of the runs comparable to a stack: the same engine, the same accelerator profile and
a dense model (the one mixture-of-experts run, gpt-oss-120b, misses by a KV pool the model overstates, not by
latency: no band). Where none is comparable the plan sizes at the model's central estimate and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.engines import EngineKey


@dataclass(frozen=True)
class TtftBand:
    """Model / published TTFT p90 over a set of published stages."""

    low: float  # the model at its most optimistic
    high: float  # at its most pessimistic
    runs: str  # which runs, in words
    stages: int  # how many stage rows the band is over

    def edge(self, modelled_s: float) -> float:
        """A modelled TTFT at the band's pessimistic edge: what the engine may take when the model is as optimistic
        as its worst published stage."""
        return modelled_s / self.low


def judged_ttft(band: TtftBand | None, modelled_s: float) -> float:
    """The TTFT a target is held to: at the band's pessimistic edge where published runs comparable to the stack
    band the model, else the model's central estimate (no band)."""
    return band.edge(modelled_s) if band is not None else modelled_s


# accelerator profile key, engine -> the band over the published runs of that engine on that profile (dense models)
TTFT_BANDS: dict[tuple[str, EngineKey], TtftBand] = {
    ("gpu", "vllm"): TtftBand(0.5881, 2.1053, "llm-d's vLLM Qwen3-32B TP=2 H100 run", 16),
    ("gpu", "sglang"): TtftBand(0.4386, 1.4647, "llm-d's SGLang HiCache Qwen3-32B TP=2 H100 run", 8),
}


def ttft_band(accelerator: str, engine: EngineKey, mixture_of_experts: bool) -> TtftBand | None:
    """The band of the runs comparable to a stack (None: none is; the plan sizes at the central estimate)."""
    if mixture_of_experts:
        return None
    return TTFT_BANDS.get((accelerator, engine))
