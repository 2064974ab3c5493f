"""The SLO's band (issue 47, item 6): `workload.slo.ttft_p90` is held at the pessimistic edge of the time model's
TTFT error on comparable published runs (components/catalog/time_model_band.py), or the plan says plainly that it
sizes at the model's central estimate; the band's figures are the bench's (tests/fixtures/time-model/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.catalog.engines import EngineKey
from components.catalog.time_model_band import TTFT_BANDS, TtftBand, ttft_band
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review.capacity_table import capacity_lines

RATIOS = Path(__file__).parent / "fixtures/time-model/published-ratios.json"
# which of the bench's runs (its `run` names) each band is over
BANDED_RUNS: dict[tuple[str, EngineKey], str] = {("gpu", "vllm"): "vLLM", ("gpu", "sglang"): "SGLang HiCache"}


def test_each_band_is_its_runs_lowest_and_highest_ttft_p90_ratio_in_the_bench() -> None:
    """Rerun `./run bench` after a change to the time model and this fails until the catalog's band follows."""
    stages = json.loads(RATIOS.read_text(encoding="utf-8"))["stages"]
    assert set(TTFT_BANDS) == set(BANDED_RUNS)
    for key, run in BANDED_RUNS.items():
        ratios = [s["TTFT p90"] for s in stages if s["run"] == run]
        band = TTFT_BANDS[key]
        assert (band.low, band.high, band.stages) == (min(ratios), max(ratios), len(ratios))


def test_the_edge_divides_by_the_models_most_optimistic_ratio() -> None:
    band = TtftBand(0.25, 2.0, "a run", 4)
    assert band.edge(0.1) == pytest.approx(0.4)


def test_only_comparable_stacks_have_a_band() -> None:
    assert ttft_band("gpu", "vllm", mixture_of_experts=False) is TTFT_BANDS[("gpu", "vllm")]
    assert ttft_band("gpu", "vllm", mixture_of_experts=True) is None  # gpt-oss-120b's misses are not latency's
    assert ttft_band("h200", "vllm", mixture_of_experts=False) is None  # no published run on it


SMALL = [  # tests/test_capacity_plan.py's small workload at 20 requests/s
    "workload.shared_prefix.num_groups=20",
    "workload.shared_prefix.num_prompts_per_group=5",
    "workload.shared_prefix.system_prompt_len=2048",
    "workload.shared_prefix.question_len=512",
    "workload.shared_prefix.output_len=64",
    "workload.shared_prefix.request_rate=20",
    "workload.shared_prefix.duration=60",
    "cache.replicas=auto",
]


@pytest.mark.parametrize(
    ("target", "accelerator", "replicas", "words"),
    [
        # modelled p90 63 ms on one replica, 42 ms on two (tests/test_capacity_plan.py): at the vLLM H100 band's
        # edge (/ 0.5881) 107 and 71 ms, so 0.1 s takes two and 0.12 s one; H200 has no band: central, 0.1 s one.
        ("0.1", "gpu", 2, "sized at the time model's error band's pessimistic edge"),
        ("0.12", "gpu", 1, "sized at the time model's error band's pessimistic edge"),
        ("0.1", "h200", 1, "sized at the time model's central estimate"),
    ],
)
def test_auto_meets_the_target_at_the_edge_and_says_which(
    target: str, accelerator: str, replicas: int, words: str
) -> None:
    stack_plan = plan(
        loading.load_named(
            "gpu-vllm-native-cpu", [*SMALL, f"workload.slo.ttft_p90={target}", f"cache.accelerator={accelerator}"]
        )
    )
    assert stack_plan.model_server.replicas == replicas
    capacity = stack_plan.capacity
    assert capacity is not None and capacity.configured.slo_met
    lines = "\n".join(capacity_lines(capacity, auto=True))
    assert words in lines
