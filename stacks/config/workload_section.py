"""The workload the stack is sized for: a recorded trace (the Mooncake format), or a synthetic shared-prefix
workload in the shape inference-perf defines. Unset: no workload."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components.formulas import replay_work
from components.formulas.shared_prefix import SharedPrefixShape, Stage
from stacks.config import formats
from stacks.config.errors import MISSING, ConfigError
from stacks.config.fields import Section, check_with

# Far above any model's context (a few million tokens), far below what would overflow a replay's int64.
MAX_TOKENS = 10_000_000
DEFAULT_BLOCK_TOKENS = 512  # the Mooncake trace's hash block
MAX_BLOCK_TOKENS = 65_536  # above any KV block or transfer chunk (vLLM 16, LMCache 256, the Mooncake trace 512)
MAX_PROMPTS = 100_000  # per group, and groups
MAX_RATE = 10_000.0  # requests per second
MAX_DURATION = 7 * 24 * 3600  # a week of arrivals, in seconds
MAX_SEED = 2**63 - 1
MAX_STAGES = 100  # load stages (llm-d's tiered benchmark runs 8)
# Poisson draws: each draw is the whole load again with its own arrival seed, and multiplies the replay's work;
# three give every percentile three samples of the bursts (the plan names the draws and their seeds).
DEFAULT_POISSON_DRAWS = 3
MAX_DRAWS = 20


class LoadStageConfig(Section):
    """One load stage (inference-perf's `load.stages[]`)."""

    rate: float = Field(gt=0, le=MAX_RATE)
    """requests per second in this stage (inference-perf's load.stages[].rate); required"""
    duration: int = Field(ge=1, le=MAX_DURATION)
    """seconds of this stage's arrivals (inference-perf's load.stages[].duration); required"""


class LoadConfig(Section):
    """The arrivals as inference-perf's `load` section writes them (kubernetes-sigs/inference-perf,
    inference_perf/config/loadgen/config.py `LoadConfig`): its type and stages (components/formulas/shared_prefix.py
    says how each is drawn)."""

    type: Literal["constant", "poisson"] = "constant"
    """constant: evenly spaced at the stage's rate (inference-perf jitters them; here exact); poisson: int(rate x
    duration) requests at a Poisson process's times within each stage; default constant"""
    stages: list[LoadStageConfig] = Field(min_length=1, max_length=MAX_STAGES)
    """the stages, one after another, each `rate` requests a second for `duration` seconds (inference-perf's
    load.stages); required"""
    base_seed: int = Field(default=0, ge=0, le=MAX_SEED)
    """poisson: the first draw's arrival seed, the next draws' base_seed + 1, ... (inference-perf's load.base_seed);
    default 0"""
    draws: int | None = Field(default=None, ge=1, le=MAX_DRAWS)
    """poisson: independent draws of the arrivals, one after another, whose requests' percentiles the plan pools;
    default 3 (constant arrivals are one draw)"""


class SharedPrefixConfig(Section):
    """inference-perf's `data.shared_prefix` (kubernetes-sigs/inference-perf, inference_perf/config/datagen/
    config.py `SharedPrefix`, fixed lengths only), with its arrivals: one constant-rate stage (`request_rate`,
    `duration`) or inference-perf's `load` section."""

    num_groups: int = Field(ge=1, le=MAX_PROMPTS)
    """distinct system prompts, each shared by its group's prompts (inference-perf's
    data.shared_prefix.num_groups); required"""
    num_prompts_per_group: int = Field(ge=1, le=MAX_PROMPTS)
    """prompts sharing one system prompt, each with its own question (inference-perf's
    data.shared_prefix.num_prompts_per_group); required"""
    system_prompt_len: int = Field(ge=0, le=MAX_TOKENS)
    """tokens of each group's system prompt, a multiple of workload.block_tokens (inference-perf's
    data.shared_prefix.system_prompt_len, a fixed value); required"""
    question_len: int = Field(ge=1, le=MAX_TOKENS)
    """tokens of each prompt's own question after the system prompt (inference-perf's
    data.shared_prefix.question_len, a fixed value); required"""
    output_len: int = Field(ge=1, le=MAX_TOKENS)
    """tokens each request generates (inference-perf's data.shared_prefix.output_len, a fixed value); required"""
    request_rate: float | None = Field(default=None, gt=0, le=MAX_RATE)
    """requests per second, evenly spaced, each asking a prompt drawn uniformly from all groups' prompts
    (inference-perf's load.stages[].rate of a constant load); unset: load"""
    duration: int | None = Field(default=None, ge=1, le=MAX_DURATION)
    """seconds of arrivals (inference-perf's load.stages[].duration); unset: load"""
    load: LoadConfig | None = None
    """the arrivals as inference-perf's load section: type (constant or poisson) and stages; unset: request_rate and
    duration"""
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    """seed of the prompt draws, so a plan is reproducible (inference-perf's data.shared_prefix.seed);
    default 0"""

    @property
    def shape(self) -> SharedPrefixShape:
        """The workload's shape (check_workload has held it to one form of arrivals)."""
        data = (self.num_groups, self.num_prompts_per_group, self.system_prompt_len, self.question_len, self.output_len)
        load = self.load
        if load is None:
            assert self.request_rate is not None and self.duration is not None, "check_workload"
            return SharedPrefixShape(*data, request_rate=self.request_rate, duration=self.duration)
        poisson = load.type == "poisson"
        return SharedPrefixShape(
            *data,
            stages=tuple(Stage(s.rate, s.duration) for s in load.stages),
            arrivals=load.type,
            draws=(load.draws or DEFAULT_POISSON_DRAWS) if poisson else 1,
            arrival_seed=load.base_seed,
        )


MAX_SLO_SECONDS = 3600.0  # an hour to a first token, or per output token: past any interactive target


class SloConfig(Section):
    """What the replicas must meet on the workload, by the capacity plan's time model (at least one target)."""

    ttft_p90: float | None = Field(default=None, gt=0, le=MAX_SLO_SECONDS)
    """time to first token, 90th percentile over the workload's requests, in seconds; unset: no TTFT target"""
    tpot_p90: float | None = Field(default=None, gt=0, le=MAX_SLO_SECONDS)
    """time per output token after the first, 90th percentile over the requests, in seconds; unset: no TPOT
    target"""


class WorkloadConfig(Section):
    """Exactly one of `trace` and `shared_prefix`."""

    trace: Annotated[str, check_with(formats.relative_jsonl_path)] | None = None
    """a trace in the Mooncake format (JSON lines: timestamp in ms, input_length, output_length, hash_ids),
    a regular .jsonl file inside the project, relative to its root, at most 512 MiB; unset: shared_prefix"""
    shared_prefix: SharedPrefixConfig | None = None
    """a synthetic shared-prefix workload (inference-perf's shared_prefix data shape and a constant rate);
    unset: trace"""
    block_tokens: int = Field(default=DEFAULT_BLOCK_TOKENS, ge=1, le=MAX_BLOCK_TOKENS)
    """prompt tokens per hash block: a trace's hash_ids hold one id per block; default 512, the Mooncake
    traces'"""
    slo: SloConfig | None = None
    """the latency targets the replicas must meet on this workload (`cache.replicas: auto` takes the fewest that
    do); unset: the replicas need only keep up"""


def dividing_block(system_prompt_len: int, block_tokens: int) -> int:
    """The largest power of two up to `block_tokens` that divides the system prompt (1 divides any)."""
    block = 1
    while block * 2 <= block_tokens and system_prompt_len % (block * 2) == 0:
        block *= 2
    return block


def check_workload(workload: WorkloadConfig | None) -> None:
    """Exactly one source, and a system prompt of whole blocks (one line naming the field otherwise)."""
    if workload is None:
        return
    if workload.trace is None and workload.shared_prefix is None:
        raise ConfigError(
            "workload",
            sorted(workload.model_fields_set),
            "set workload.trace (a Mooncake trace file) or workload.shared_prefix, or leave workload unset",
        )
    if workload.trace is not None and workload.shared_prefix is not None:
        raise ConfigError("workload.shared_prefix", "(set)", "set workload.trace or workload.shared_prefix, not both")
    if workload.slo is not None and workload.slo.ttft_p90 is None and workload.slo.tpot_p90 is None:
        raise ConfigError("workload.slo", {}, "set workload.slo.ttft_p90 and/or workload.slo.tpot_p90 (seconds)")
    shared = workload.shared_prefix
    if shared is not None:
        _check_arrivals(shared)
    if shared is not None and shared.system_prompt_len % workload.block_tokens:
        suggested = dividing_block(shared.system_prompt_len, workload.block_tokens)
        raise ConfigError(
            "workload.shared_prefix.system_prompt_len",
            shared.system_prompt_len,
            f"must be a multiple of workload.block_tokens ({workload.block_tokens}): the system prompt is whole"
            f" blocks its group shares; workload.block_tokens: {suggested} would (the largest power of two up to"
            " it that divides the prompt)",
        )
    if shared is not None:  # its work in closed form: billions of requests are refused before one is made
        work = replay_work.shared_prefix_work(shared.shape, workload.block_tokens)
        where = "workload.shared_prefix" if shared.load is None else "workload.shared_prefix.load"
        if work.requests == 0:
            raise ConfigError(where, "0 requests", "int(rate x duration) is 0 in every stage: no request arrives")
        problem = replay_work.problem(work)
        if problem is not None:
            raise ConfigError(where, f"{work.requests:,} requests", problem)


def _check_arrivals(shared: SharedPrefixConfig) -> None:
    """One form of arrivals: request_rate and duration (one constant stage), or load; draws only for poisson."""
    short = {k for k in ("request_rate", "duration") if getattr(shared, k) is not None}
    if shared.load is not None and short:
        raise ConfigError(
            f"workload.shared_prefix.{sorted(short)[0]}",
            getattr(shared, sorted(short)[0]),
            "set request_rate and duration (one constant stage) or load (its stages), not both",
        )
    if shared.load is None and len(short) < 2:
        missing = "request_rate" if "request_rate" not in short else "duration"
        raise ConfigError(
            f"workload.shared_prefix.{missing}",
            MISSING,
            "required with no workload.shared_prefix.load: request_rate and duration make one constant stage",
        )
    if shared.load is not None and shared.load.type == "constant" and shared.load.draws is not None:
        raise ConfigError(
            "workload.shared_prefix.load.draws",
            shared.load.draws,
            "applies to poisson arrivals: constant arrivals are one draw",
        )
