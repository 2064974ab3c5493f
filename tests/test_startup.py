"""The cold-start model and the await budgets it gives every workload Pulumi waits for."""

import math
from typing import Any

import pytest

from components.catalog import startup_figures as figures
from components.catalog.models import MODELS
from components.specs.startup import ColdStart, StartupInputs, cold_start, probe_failure_threshold
from components.units import GB, MB
from stacks.config import loading
from stacks.planning.cold_starts import image_bytes, model_server_cold_start
from stacks.planning.plan import plan
from stacks.review import cold_start_table as cold_start_table
from tests.helpers import manifests, rendered

PRESETS = loading.preset_names()
AWAITED = ("Deployment", "DaemonSet", "Job", "LeaderWorkerSet")
PULUMI_DEFAULT_AWAIT = 600  # pulumi-kubernetes waits 10 minutes for a workload unless told otherwise


def _startup_window(container: dict[str, Any]) -> int:
    probe = container["startupProbe"]
    return int(probe.get("initialDelaySeconds", 0) + probe["periodSeconds"] * probe["failureThreshold"])


def test_qwen3_32b_from_hugging_face_on_h100_exceeds_the_engines_default_wait() -> None:
    """The issue's case: 65.6 GB of weights at 100 MB/s, load and compile calibrated to ~3 minutes on H100."""
    model = MODELS["Qwen/Qwen3-32B"]
    assert model.weight_bytes.bytes == 65_600_000_000
    cold = model_server_cold_start(
        loading.load_preset("gpu-vllm-native-cpu"), "gpu", model, "docker.io/vllm/vllm-openai:v0"
    )
    assert cold.image_pull == 200  # 12 GB at 60 MB/s
    assert cold.weight_fetch == 656
    assert cold.load + cold.compile == 88 + 90  # "about 3 minutes from container start to serving"
    assert cold.weight_source == "huggingface"
    assert cold.modeled > PULUMI_DEFAULT_AWAIT
    assert cold.budget >= cold.modeled + cold.margin and cold.budget % 60 == 0


def test_each_part_is_its_own_field_so_a_faster_source_replaces_only_its_part() -> None:
    inputs = StartupInputs(
        image="x",
        image_bytes=6 * GB,
        pull_bytes_per_second=60 * MB,
        weight_bytes=16 * GB,
        weight_source=figures.WeightSource("model-cache", 1000 * MB, "a shared volume"),
        load_bytes_per_second=800 * MB,
        compile_seconds=30,
        margin_ratio=0.5,
        margin_floor_seconds=60,
    )
    cold = cold_start(inputs)
    assert cold == ColdStart(
        image_pull=100, weight_fetch=16, load=20, compile=30, other=0, margin=83, weight_source="model-cache"
    )
    assert [name for name, _ in cold.parts()] == ["image pull", "weights (model-cache)", "load", "compile", "margin"]


def test_unknown_images_count_as_the_largest_and_tags_or_digests_do_not_matter() -> None:
    assert image_bytes("docker.io/vllm/vllm-openai:v9") == image_bytes("docker.io/vllm/vllm-openai@sha256:ab")
    assert image_bytes("registry.example/mine:1") == figures.UNKNOWN_IMAGE_BYTES


def test_the_probe_allows_the_budget_and_never_less_than_upstreams_hour() -> None:
    assert probe_failure_threshold(600, 15, 30, 120) == 120
    assert probe_failure_threshold(7215, 15, 30, 120) == 240


@pytest.mark.parametrize("name", PRESETS)
def test_every_awaited_workload_has_a_budget_above_its_modeled_cold_start(name: str) -> None:
    stack_plan = plan(loading.load_preset(name))
    budgets = {b.workload: b for b in stack_plan.budgets}
    workloads = [o for o in manifests(rendered(name)) if o["kind"] in AWAITED]
    assert workloads
    for workload in workloads:
        meta = workload["metadata"]
        budget = budgets[meta["name"]]
        seconds = int(meta["annotations"]["pulumi.com/timeoutSeconds"])
        assert seconds == budget.seconds
        assert seconds >= budget.cold_start.modeled * budget.waves
        if workload["kind"] == "LeaderWorkerSet":  # no built-in await: the generic one, on the set's condition
            assert meta["annotations"]["pulumi.com/waitFor"] == "condition=Available"
    for role in stack_plan.roles:
        budget = budgets[role.manifests[-1]["metadata"]["name"]]
        for container in _containers(role.manifests[-1]):
            if "startupProbe" in container:
                assert _startup_window(container) >= budget.cold_start.budget


def _containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    spec = workload["spec"]
    if workload["kind"] == "LeaderWorkerSet":
        templates = [spec["leaderWorkerTemplate"]["leaderTemplate"], spec["leaderWorkerTemplate"]["workerTemplate"]]
    else:
        templates = [spec["template"]]
    return [c for t in templates for c in t["spec"]["containers"]]


def test_a_480b_model_from_hugging_face_raises_the_startup_probe_above_upstreams_hour() -> None:
    stack_plan = plan(loading.load_preset("gke-tpu-v7-multi-host"))
    leader = _containers(stack_plan.roles[-1].manifests[-1])[0]
    assert leader["startupProbe"]["failureThreshold"] > 120
    assert _startup_window(leader) >= stack_plan.budgets[0].cold_start.budget


def test_the_summary_shows_each_budget_and_its_parts() -> None:
    text = rendered("gpu-vllm-native-cpu").summary
    line = next(row for row in text.splitlines() if row.startswith("| `gpu-vllm-decode`"))
    for part in ("image pull", "weights (huggingface)", "load", "compile", "margin", "x 2 in turn"):
        assert part in line


def test_streamed_images_shorten_later_pods_but_not_the_first_pull_or_the_budget() -> None:
    """GKE streams an image only once it has been pulled through Artifact Registry: the first pod pulls it
    whole (and the await budget assumes it), later pods on new nodes wait for what they read at start."""
    stack_plan = plan(loading.load_preset("gke-h100-lustre"))
    first, later = cold_start_table.cases(stack_plan)[:2]
    whole = math.ceil(image_bytes(stack_plan.model_server.image) / figures.PULL_BYTES_PER_SECOND)
    assert first.cold.image_pull == whole
    assert later.cold.image_pull == math.ceil(whole * figures.STREAMED_IMAGE_READ_RATIO) < whole
    (budget,) = [
        b for b in stack_plan.budgets if b.workload == stack_plan.model_server_manifests[-1]["metadata"]["name"]
    ]
    assert budget.cold_start.image_pull == whole
    unstreamed = plan(loading.load_preset("gke-h100-lustre", ["images.mirror=off"]))
    assert cold_start_table.cases(unstreamed)[1].cold.image_pull == whole
