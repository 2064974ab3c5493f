"""The HorizontalPodAutoscaler's algorithm, as KEDA drives it, and a replay of a load step through it.

KEDA does not scale by itself past activation: a ScaledObject becomes an HPA (autoscaling/v2) whose
external metrics KEDA's metrics server answers; the HPA controller decides every sync period. This module
is that controller's arithmetic (kubernetes/kubernetes `pkg/controller/podautoscaler`: `horizontal.go`,
`replica_calculator.go`), one function per step, so the replay and the scale-down derivation below use the
rules the cluster runs:

1. Per metric, a proposal. An external `AverageValue` metric (KEDA's default metricType, and upstream's
   for every EPP trigger) is a total the HPA divides over the current replicas: desired =
   ceil(current x metric / target) with metric the per-replica average, i.e. ceil(total / target). A
   `Value` metric is a ratio for the whole target: desired = ceil(ready pods x value / target). Either
   way a usage ratio within the tolerance (0.1, `--horizontal-pod-autoscaler-tolerance`) of 1 keeps the
   current count. Several metrics: the largest proposal.
2. Stabilization: the recommendation is held between the lowest proposal of the scale-up window and the
   highest of the scale-down window (`stabilizeRecommendationWithBehaviors`): scaling up waits until
   every proposal in its window is higher, scaling down until every one in its window is lower.
3. Rate: each policy allows, per its period, `Pods` replicas or `Percent` of the count at the period's
   start (scale-up rounds up, scale-down truncates); `selectPolicy` Max takes the policy that allows the
   most change, Min the least, Disabled none. Then the min/max replica clamps.

The replay steps that controller every sync period (15 s) over a load step and a queue at the router:
arrivals beyond what the serving replicas serve wait in the EPP's flow-control queue (accumulating);
a replica added serves after the cold start; a serving replica removed drops its whole CPU tier (a
filesystem tier or MooncakeStore outlives it, and is not counted). Metrics are read without the scrape
lag (Prometheus interval and KEDA's cache add up to one more interval in the cluster).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from components.units import ByteSize

SYNC_PERIOD_S = 15  # kube-controller-manager --horizontal-pod-autoscaler-sync-period (default)
TOLERANCE = 0.1  # kube-controller-manager --horizontal-pod-autoscaler-tolerance (default)
MAX_STABILIZATION_S = 3600  # autoscaling/v2 HPAScalingRules.stabilizationWindowSeconds: 0..3600
MAX_POLICY_PERIOD_S = 1800  # autoscaling/v2 HPAScalingPolicy.periodSeconds: 1..1800

PolicyType = Literal["Pods", "Percent"]
Select = Literal["Max", "Min", "Disabled"]
MetricType = Literal["AverageValue", "Value"]
Signal = Literal["queue", "running", "saturation", "backlog", "kv"]


@dataclass(frozen=True)
class Policy:
    type: PolicyType
    value: int
    period_s: int


@dataclass(frozen=True)
class Rules:
    """One direction of `behavior` (HPAScalingRules)."""

    stabilization_s: int
    policies: tuple[Policy, ...]
    select: Select = "Max"


@dataclass(frozen=True)
class Behavior:
    scale_up: Rules
    scale_down: Rules


# What the HPA does when `behavior` is unset (autoscaling/v2 API docs, "Default Behavior").
KUBERNETES_DEFAULT = Behavior(
    scale_up=Rules(0, (Policy("Percent", 100, 15), Policy("Pods", 4, 15))),
    scale_down=Rules(300, (Policy("Percent", 100, 15),)),
)


# 1. Proposals -------------------------------------------------------------------------------------------


def average_value_proposal(current: int, total: float, target: float, tolerance: float = TOLERANCE) -> int:
    """An external AverageValue metric (`GetExternalPerPodMetricReplicas`): the total over the current
    replicas is the per-replica metric; within the tolerance the count stays."""
    if current == 0:
        return math.ceil(total / target)
    if abs(1.0 - total / (target * current)) <= tolerance:
        return current
    return math.ceil(total / target)  # ceil(current x metric / target), metric = total / current


def value_proposal(current: int, ready: int, value: float, target: float, tolerance: float = TOLERANCE) -> int:
    """An external Value metric (`GetExternalMetricReplicas`): the ratio times the *ready* pods, so pods
    still starting do not count (unlike AverageValue, which divides by every replica)."""
    ratio = value / target
    if current == 0:
        return math.ceil(ratio)
    if abs(1.0 - ratio) <= tolerance:
        return current
    return math.ceil(ratio * ready)


# 2 and 3. Stabilization and rate -----------------------------------------------------------------------


def _changed_in_period(events: list[tuple[float, int]], now: float, period_s: int) -> int:
    """`getReplicasChangePerPeriod`: the replicas added (or removed) by the events inside the period."""
    return sum(change for at, change in events if at > now - period_s)


def _period_start(
    current: int, up: list[tuple[float, int]], down: list[tuple[float, int]], period_s: int, now: float
) -> int:
    """The replicas at the start of a policy's period: now's, less what the period added, plus what it removed."""
    return current - _changed_in_period(up, now, period_s) + _changed_in_period(down, now, period_s)


def scale_up_limit(
    current: int, up: list[tuple[float, int]], down: list[tuple[float, int]], rules: Rules, now: float
) -> int:
    """`calculateScaleUpLimitWithScalingRules`: the most replicas the policies allow now."""
    if rules.select == "Disabled":
        return current
    proposals = []
    for policy in rules.policies:
        start = _period_start(current, up, down, policy.period_s, now)
        if policy.type == "Pods":
            proposals.append(start + policy.value)
        else:
            proposals.append(math.ceil(start * (1 + policy.value / 100)))
    return min(proposals) if rules.select == "Min" else max(proposals)


def scale_down_limit(
    current: int, up: list[tuple[float, int]], down: list[tuple[float, int]], rules: Rules, now: float
) -> int:
    """`calculateScaleDownLimitWithBehaviors`: the fewest replicas the policies allow now."""
    if rules.select == "Disabled":
        return current
    proposals = []
    for policy in rules.policies:
        start = _period_start(current, up, down, policy.period_s, now)
        if policy.type == "Pods":
            proposals.append(start - policy.value)
        else:
            proposals.append(int(start * (1 - policy.value / 100)))
    return max(proposals) if rules.select == "Min" else min(proposals)


@dataclass
class Autoscaler:
    """One HPA's state across syncs: its recommendations and the scale events of its policies' periods."""

    min_replicas: int
    max_replicas: int
    behavior: Behavior
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    up_events: list[tuple[float, int]] = field(default_factory=list)
    down_events: list[tuple[float, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not 0 <= self.min_replicas <= self.max_replicas:
            raise ValueError(f"replica bounds {self.min_replicas}..{self.max_replicas} are not ordered")

    def stabilize(self, now: float, current: int, proposal: int) -> int:
        """The proposal held between the scale-up window's lowest and the scale-down window's highest."""
        if not self.recommendations:  # `maybeInitScaleDownStabilizationWindow`: a new HPA starts at current
            self.recommendations.append((now, current))
        up_window, down_window = self.behavior.scale_up.stabilization_s, self.behavior.scale_down.stabilization_s
        up, down = proposal, proposal
        for at, recommended in self.recommendations:
            if at > now - up_window:
                up = min(up, recommended)
            if at > now - down_window:
                down = max(down, recommended)
        keep = max(up_window, down_window)
        self.recommendations = [(at, r) for at, r in self.recommendations if at > now - keep]
        self.recommendations.append((now, proposal))
        return min(max(current, up), down)

    def limit(self, now: float, current: int, desired: int) -> int:
        """The stabilized count within the policies' rates and the replica bounds."""
        if desired > current:
            ceiling = max(
                scale_up_limit(current, self.up_events, self.down_events, self.behavior.scale_up, now), current
            )
            return min(desired, self.max_replicas, ceiling)
        if desired < current:
            floor = min(
                scale_down_limit(current, self.up_events, self.down_events, self.behavior.scale_down, now), current
            )
            return max(desired, self.min_replicas, floor)
        return desired

    def sync(self, now: float, current: int, proposal: int) -> int:
        """One reconcile: the replica count the HPA writes to the scale subresource."""
        if current > self.max_replicas:
            new = self.max_replicas
        elif current < self.min_replicas:
            new = self.min_replicas
        else:
            new = self.limit(now, current, self.stabilize(now, current, proposal))
        if new > current:
            self.up_events.append((now, new - current))
        elif new < current:
            self.down_events.append((now, current - new))
        longest = max(
            (p.period_s for r in (self.behavior.scale_up, self.behavior.scale_down) for p in r.policies), default=0
        )
        self.up_events = [(at, n) for at, n in self.up_events if at > now - longest]
        self.down_events = [(at, n) for at, n in self.down_events if at > now - longest]
        return new


# The replay --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trigger:
    """One KEDA trigger as the HPA sees it: the router signal, its threshold and its metricType.

    queue: requests waiting in the EPP's flow control (a total, like `sum(llm_d_epp_flow_control_queue_size)`);
    running: requests being served (`sum(llm_d_epp_request_running)`); saturation: the pool's offered load
    over what its ready replicas serve (`max(llm_d_epp_flow_control_pool_saturation)`, 0.0 to 1.0 and up);
    backlog: seconds to prefill the waiting requests' prompt tokens at the peak prefill rate (the token-aware
    variant's `sum(llm_d_epp_inflight_tokens) / rate`); kv: pods' worth of KV cache in use, modelled as the
    replicas' worth of load being served (`sum(vllm:kv_cache_usage_perc)`).
    """

    signal: Signal
    target: float
    metric_type: MetricType = "AverageValue"


@dataclass(frozen=True)
class LoadStep:
    """Arrivals in multiples of the initial replicas' serving capacity: `base`, `peak` from `start_s` for
    `duration_s`, then `base` again until `total_s`."""

    base: float = 1.0
    peak: float = 4.0
    start_s: int = 60
    duration_s: int = 1800
    total_s: int = 5400

    def factor(self, t: float) -> float:
        return self.peak if self.start_s <= t < self.start_s + self.duration_s else self.base


@dataclass(frozen=True)
class ReplayInputs:
    initial_replicas: int
    capacity_rps: float  # requests per second one serving replica serves
    concurrency: float  # requests in flight on a replica serving at capacity (capacity x latency, Little's law)
    cold_start_s: int  # from the replica's creation until it serves
    min_replicas: int
    max_replicas: int  # what the node pools hold (or less)
    cpu_tier: ByteSize  # one pod's CPU tier, dropped with the pod
    triggers: tuple[Trigger, ...]
    behavior: Behavior
    load: LoadStep = LoadStep()
    sync_s: int = SYNC_PERIOD_S
    prompt_tokens: float = 0.0  # uncached prompt tokens per request (the backlog signal's numerator)
    prefill_rate: float = 0.0  # tokens one replica prefills per second (its divisor); 0: no backlog signal

    def __post_init__(self) -> None:
        if not self.triggers:
            raise ValueError("a replay needs at least one trigger")
        if self.capacity_rps <= 0 or self.sync_s <= 0 or self.cold_start_s < 0:
            raise ValueError("capacity and sync period must be positive, the cold start not negative")


@dataclass(frozen=True)
class Sample:
    t_s: int
    replicas: int  # the count the HPA set
    serving: int  # replicas past their cold start
    queue: float  # requests waiting at the router


@dataclass(frozen=True)
class Replay:
    samples: tuple[Sample, ...]
    peak_queue: float
    peak_replicas: int
    first_serving_s: int | None  # from the step's start until the first replica added for it serves
    scaled_serving_s: int | None  # ... until the last replica added during the step (and kept) serves
    queue_drained_s: int | None  # ... until the queue is empty again after its peak
    removed_warm: int  # serving replicas removed (each drops its CPU tier)
    cpu_tier_dropped: ByteSize


@dataclass
class _Pod:
    added_s: int
    ready_s: int
    removed_s: int | None = None


def _serving_fraction(pod: _Pod, start: int, end: int) -> float:
    """How much of [start, end) the pod serves."""
    return max(0, end - max(start, pod.ready_s)) / (end - start)


SETTLE_LIMIT_S = 24 * 3600


def _settled(queue: float, replicas: int, inputs: ReplayInputs) -> bool:
    """Back where the step found it: nothing queued, no more replicas than before it (or the floor)."""
    return queue <= 1e-9 and replicas <= max(inputs.min_replicas, inputs.initial_replicas)


def proposal(inputs: ReplayInputs, live: int, serving: int, queue: float, served_rps: float, arrival: float) -> int:
    """The triggers' largest proposal from the router's signals at one sync: `queue` requests waiting, `served_rps`
    served over the last period, `arrival` requests a second offered (of `live` replicas, `serving` past their cold
    start)."""
    signals = {
        "queue": queue,
        "running": served_rps / inputs.capacity_rps * inputs.concurrency,
        "saturation": arrival / (serving * inputs.capacity_rps) if serving else (math.inf if arrival else 0.0),
        "backlog": queue * inputs.prompt_tokens / inputs.prefill_rate if inputs.prefill_rate else 0.0,
        "kv": served_rps / inputs.capacity_rps,
    }
    proposals = []
    for trigger in inputs.triggers:
        value = signals[trigger.signal]
        if trigger.metric_type == "Value":
            proposals.append(value_proposal(live, serving, value, trigger.target))
        else:
            proposals.append(average_value_proposal(live, value, trigger.target))
    return max(min(p, 2**31 - 1) for p in proposals)


def replay(inputs: ReplayInputs) -> Replay:
    """The load step through the HPA, sync period by sync period."""
    dt, load = inputs.sync_s, inputs.load
    scaler = Autoscaler(inputs.min_replicas, inputs.max_replicas, inputs.behavior)
    live = [_Pod(-inputs.cold_start_s, 0) for _ in range(inputs.initial_replicas)]
    gone: list[_Pod] = []
    queue, served_rps = 0.0, 0.0
    samples: list[Sample] = []
    t = 0
    # Past `total_s` while the queue still drains or the replicas still come down (the figures on the way
    # down need the whole descent), up to a day beyond it.
    while t < load.total_s or (t < load.total_s + SETTLE_LIMIT_S and not _settled(queue, len(live), inputs)):
        arrival = load.factor(t) * inputs.initial_replicas * inputs.capacity_rps
        serving = sum(1 for p in live if p.ready_s <= t)
        wanted = scaler.sync(t, len(live), proposal(inputs, len(live), serving, queue, served_rps, arrival))
        if wanted > len(live):
            live += [_Pod(t, t + inputs.cold_start_s) for _ in range(wanted - len(live))]
        elif wanted < len(live):
            # The ReplicaSet controller deletes pods that are not ready first, then the most recently ready.
            live.sort(key=lambda p: p.ready_s)
            for pod in live[wanted:]:
                pod.removed_s = t
            gone += live[wanted:]
            live = live[:wanted]
        samples.append(Sample(t, len(live), serving, queue))
        capacity = inputs.capacity_rps * dt * sum(_serving_fraction(p, t, t + dt) for p in live)
        served = min(capacity, queue + arrival * dt)
        queue, served_rps = queue + arrival * dt - served, served / dt
        t += dt
    return _summarize(inputs, samples, live + gone)


def _summarize(inputs: ReplayInputs, samples: list[Sample], pods: list[_Pod]) -> Replay:
    load = inputs.load
    step_end = load.start_s + load.duration_s
    added = [p for p in pods if load.start_s <= p.added_s < step_end]
    kept = [p for p in added if p.removed_s is None or p.ready_s <= p.removed_s]
    peak = max(samples, key=lambda s: s.queue)
    drained = next((s.t_s for s in samples if s.t_s > peak.t_s and s.queue <= 1e-9), None)
    warm = [p for p in pods if p.removed_s is not None and p.ready_s <= p.removed_s]
    return Replay(
        samples=tuple(samples),
        peak_queue=peak.queue,
        peak_replicas=max(s.replicas for s in samples),
        first_serving_s=min(p.ready_s for p in kept) - load.start_s if kept else None,
        scaled_serving_s=max(p.ready_s for p in kept) - load.start_s if kept else None,
        queue_drained_s=drained - load.start_s if drained is not None and peak.queue > 0 else None,
        removed_warm=len(warm),
        cpu_tier_dropped=inputs.cpu_tier * len(warm),
    )
