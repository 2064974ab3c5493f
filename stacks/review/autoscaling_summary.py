"""The summary's autoscaling section: the trigger, the bounds and where they come from, the scale-down and
what each removed pod drops, and the replay of a load step."""

from __future__ import annotations

from components.catalog import labels, versions
from components.formulas import drain, hpa
from components.formulas.victims import DELETION_COST_ANNOTATION
from components.specs import keda
from components.units import GiB
from stacks.config.providers import provider_of
from stacks.planning.autoscaling import Autoscaling
from stacks.planning.plan import StackPlan
from stacks.planning.scale_in_record import ScaleIn


def _rules(rules: hpa.Rules) -> str:
    policies = ", ".join(
        f"{p.value}{'%' if p.type == 'Percent' else ' pods'} per {p.period_s} s" for p in rules.policies
    )
    return f"window {rules.stabilization_s} s, at most {policies}"


def _at(seconds: int | None, otherwise: str) -> str:
    return otherwise if seconds is None else f"{seconds} s after the step"


def replay_rows(auto: Autoscaling) -> list[tuple[str, str]]:
    """The replay's figures, as the summary and `./run bench` print them."""
    r, load = auto.replay, hpa.LoadStep()
    return [
        (
            "load step",
            f"{load.base:g}x -> {load.peak:g}x the initial replicas' capacity for {load.duration_s} s, then back",
        ),
        ("first added replica serves", _at(r.first_serving_s, "none added (no room above the initial count)")),
        ("last added replica serves", _at(r.scaled_serving_s, "none added")),
        ("peak queue", f"{r.peak_queue:,.0f} requests at the router"),
        ("queue drained", _at(r.queue_drained_s, "not within a day after the step")),
        ("peak replicas", f"{r.peak_replicas} of at most {auto.max_replicas}"),
        (
            "warm CPU tier dropped on the way down",
            f"{r.cpu_tier_dropped.bytes / GiB:,.0f} GiB ({r.removed_warm} serving"
            f" {'replica' if r.removed_warm == 1 else 'replicas'} removed)"
            if auto.tier_per_pod is not None
            else "none: a per-node daemon holds the tier",
        ),
    ]


def autoscaling_lines(stack_plan: StackPlan) -> list[str]:
    auto = stack_plan.autoscaling
    if auto is None:
        return []
    drops = (
        f"{auto.tier_per_pod.bytes / GiB:,.0f} GiB of warm CPU tier per replica removed (the filesystem tier, where"
        " the stack has one, survives)"
        if auto.tier_per_pod is not None
        else "no CPU tier: the per-node daemon keeps it when a model-server pod goes"
    )
    if auto.prefill_rate is not None:
        rate = auto.prefill_rate
        trigger = (
            f"tokens: the prefill backlog, in-flight tokens / {rate.whole} tok/s, {auto.token_thresholds.backlog_s:g} s"
            f" per replica; KV cache in use {auto.token_thresholds.kv_usage:g} pods' worth per replica (AverageValue)"
        )
    else:
        signals = ", ".join(f"`{keda.SIGNAL_METRICS[s]}` {t.target:g} ({t.metric_type})" for s, t in _targets(auto))
        trigger = f"{auto.mode}: {signals}"
    keda_row = (
        f"installed by the stack (kedacore/keda {versions.KEDA_VERSION}, namespace `keda`)"
        if provider_of(stack_plan.config).creates
        else f"a prerequisite: KEDA {versions.KEDA_VERSION} or later on the cluster, its CRDs before `pulumi up`"
    )
    rows = [
        ("KEDA", keda_row),
        ("trigger", trigger),
        *(
            [
                (
                    "peak prefill rate",
                    f"{auto.prefill_rate.whole} tok/s: {auto.prefill_rate.formula}, the router's"
                    " prefix-cache-affinity-filter's and the trigger's divisor",
                )
            ]
            if auto.prefill_rate is not None
            else []
        ),
        ("metrics from", auto.source.server_address),
        (
            "replicas",
            f"{auto.min_replicas}..{auto.max_replicas}; initial {stack_plan.model_server.replicas} (cache.replicas)",
        ),
        ("max_replicas from", auto.max_from),
        ("one added replica's cold start", f"{auto.cold_start_s} s (modeled)"),
        ("scale-up", _rules(auto.behavior.scale_up)),
        ("scale-down", f"{_rules(auto.behavior.scale_down)}: {auto.behavior_from}"),
        ("each scale-down drops", drops),
        ("a replica serves", f"{auto.capacity_rps:.2f} requests/s (prefill-bound at the payoff's prefix length)"),
        *replay_rows(auto),
        *(scale_in_rows(stack_plan.scale_in) if stack_plan.scale_in is not None else []),
    ]
    return [
        "## Autoscaling",
        "",
        "KEDA scales the model servers on the router's own signals; Pulumi leaves `spec.replicas` to it.",
        "",
        "| what | value |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in rows),
        "",
    ]


def scale_in_rows(scale: ScaleIn) -> list[tuple[str, str]]:
    """`autoscaling.scale_in: cache-value`: what the annotator reads and writes, and the drain with its formula."""
    d, tier = scale.drain, scale.counters.tier
    own_tier = (
        f" + `{tier}` (its own CPU tier, which goes with it)"
        if scale.tier_counted
        else f"; not `{tier}`: the connector's CPU tier is pooled and outlives the pod"
    )
    return [
        (
            "scale-in",
            f"cache-value: the `{labels.CACHE_ANNOTATOR}` Deployment writes each ready model-server pod's rank by its"
            f" cache value as `{DELETION_COST_ANNOTATION}` every {scale.interval_s} s (the HPA's sync period); the"
            " ReplicaSet controller removes the lowest first (a pod that does not answer: lowest of all)",
        ),
        (
            "cache value",
            f"prompt tokens served from its caches over the last {scale.window_s} s (the scale-down window):"
            f" `{scale.counters.hbm}` (HBM){own_tier}, read from :{labels.MODEL_SERVER_PORT}/metrics",
        ),
        (
            "drain before stop",
            f"{drain.PRE_STOP_SECONDS} s preStop (the router stops picking the pod), then SIGTERM: the engine refuses"
            f" new requests and finishes its own for up to {d.shutdown_timeout_s} s (vLLM's `--shutdown-timeout`;"
            f" SGLang drains by itself), then {drain.TEARDOWN_SECONDS} s of teardown",
        ),
        (
            "the longest request",
            f"{d.longest_request_s:,.0f} s = its {d.max_model_len:,}-token prompt prefilled alone"
            f" ({d.prefill_s:.1f} s) + {d.max_model_len:,} decode steps of {d.step_s * 1000:.2f} ms ({d.max_seqs:,}"
            f" sequences over the full {d.kv_tokens:,}-token KV pool, the time model's step); max_model_len from"
            f" {d.max_model_len_from}",
        ),
        ("terminationGracePeriodSeconds", d.formula()),
        (
            "what it costs",
            f"one pod ({labels.CACHE_ANNOTATOR}, 50m CPU); at most {scale.max_pods} pod patches a loop, none while the"
            " order holds; a pod being removed keeps its accelerators until its requests finish (at most the grace)",
        ),
    ]


def _targets(auto: Autoscaling) -> list[tuple[str, hpa.Trigger]]:
    return [(t.signal, t) for t in keda.hpa_triggers(auto.mode, auto.thresholds)]
