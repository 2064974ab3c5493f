"""Where a workload's requests come from: the stack's `workload` (a trace file or a shared-prefix shape) or a trace
named on the command line, each read as a stream once per replay, or held once read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from components.formulas.requests import Request
from components.formulas.shared_prefix import SharedPrefixShape, shared_prefix_requests
from stacks.config import StackConfig
from stacks.config.workload_trace import read_project_trace, read_trace


@dataclass(frozen=True)
class WorkloadSource:
    """Where the requests come from (the summary names it) and how to read them, once per replay."""

    description: str
    block_tokens: int
    requests: Callable[[], Iterator[Request]]

    def requests_list(self) -> list[Request]:
        return list(self.requests())


def in_memory(source: WorkloadSource) -> WorkloadSource:
    """The requests read once and held: the capacity plan and the curve both replay them."""
    held = source.requests_list()
    return WorkloadSource(source.description, source.block_tokens, lambda: iter(held))


def config_source(config: StackConfig, project_dir: Path) -> WorkloadSource | None:
    workload = config.workload
    if workload is None:
        return None
    bt = workload.block_tokens
    if workload.trace is not None:
        trace = workload.trace
        return WorkloadSource(
            f"trace `{trace}` (workload.trace)", bt, lambda: read_project_trace(trace, bt, project_dir)
        )
    shared = workload.shared_prefix
    assert shared is not None, "a workload is a trace or a shared prefix (check_workload)"
    shape = f"{shared.num_groups} groups x {shared.num_prompts_per_group} prompts, system prompt"
    shape += f" {shared.system_prompt_len}, question {shared.question_len}, output {shared.output_len} tokens"
    shape += f", {arrivals_line(shared.shape)}"
    return WorkloadSource(
        f"shared prefix ({shape}; workload.shared_prefix)",
        bt,
        lambda: shared_prefix_requests(shared.shape, bt, shared.seed),
    )


def arrivals_line(shape: SharedPrefixShape) -> str:
    """How the requests arrive, as the summary and `./run size` say it (a single constant stage as before)."""
    if not shape.stages:
        return f"{shape.request_rate:g}/s for {shape.duration} s"
    stages = ", ".join(f"{s.rate:g}/s x {s.duration} s" for s in shape.stages)
    if shape.arrivals == "constant":
        return f"constant arrivals in stages {stages}"
    seeds = ", ".join(str(shape.arrival_seed + d) for d in range(shape.draws))
    draws = "1 draw" if shape.draws == 1 else f"{shape.draws} draws"
    return (
        f"Poisson arrivals in stages {stages}; {draws} (arrival seeds {seeds}) one after another, every percentile"
        " pooled over them"
    )


def file_source(path: str, block_tokens: int) -> WorkloadSource:
    """A trace named on the command line: any regular file."""
    return WorkloadSource(
        f"trace `{path}` (--trace)", block_tokens, lambda: read_trace(path, block_tokens, source="--trace")
    )
