"""The scale-down KEDA's HPA is given, derived from the stack's modeled cold start (and upstream's recipes,
which it replaces or keeps): the stabilization window and the rate at which replicas may go."""

from __future__ import annotations

from components.formulas.hpa import (
    MAX_POLICY_PERIOD_S,
    MAX_STABILIZATION_S,
    SYNC_PERIOD_S,
    Behavior,
    Policy,
    Rules,
)

# llm-d's KEDA + EPP recipes (llm-d/llm-d guides/workload-autoscaling/keda-epp, overlays k8s/queue and
# k8s/saturation): scale-down stabilization 300 s, Percent 100 per 15 s; scale-up 300 s ("size scaleUp near
# the Deployment's cold-start time") with Percent 100 per 15 s. The older keda-epp-queue recipe's scale-up
# window is 0 s, Kubernetes' default (KUBERNETES_DEFAULT above).
UPSTREAM_WINDOW_S = 300
UPSTREAM_BEHAVIOR = Behavior(
    scale_up=Rules(UPSTREAM_WINDOW_S, (Policy("Percent", 100, 15),)),
    scale_down=Rules(UPSTREAM_WINDOW_S, (Policy("Percent", 100, 15),)),
)
# k in window = max(300 s, k x cold start); see scale_down_rules.
COLD_STARTS_PER_READD = 2
# The load a returning peak may put on the replicas a scale-down period leaves (2x: half may go per period).
RETURN_OVERLOAD = 2


def scale_down_window(cold_start_s: int) -> int:
    """min(3600 s, max(300 s, 2 x cold start)): how long every proposal must stay lower before a scale-down.

    A replica removed and re-added costs at least two cold starts of pod-seconds: its accelerator is held
    for a cold start before it serves again, and the demand that came back goes without it for that same
    cold start (its CPU tier, refilled from prefill afterwards, comes on top and is not counted). Keeping
    an idle replica costs one pod-second per second. Waiting as long as the re-add would cost and then
    removing (the break-even rule of ski rental) is never worse than twice the best choice made in
    hindsight; so the window is the re-add's cost, k = 2 cold starts. Upstream's 300 s stays the floor
    (a stack with a short cold start still damps a flapping signal), the API's 3600 s the ceiling.
    """
    return min(MAX_STABILIZATION_S, max(UPSTREAM_WINDOW_S, COLD_STARTS_PER_READD * cold_start_s))


def scale_down_period(cold_start_s: int) -> int:
    """min(1800 s, max(15 s, cold start)): one scale-down policy period per cold start, so the HPA removes
    again only after the time it would take to undo its last removal; at least one sync period, at most the
    API's 1800 s."""
    return min(MAX_POLICY_PERIOD_S, max(SYNC_PERIOD_S, cold_start_s))


def scale_down_rules(cold_start_s: int) -> Rules:
    """The scale-down side: the window above, and at most half the replicas per period (Percent 50).

    Half per period bounds what a returning peak costs: the replicas left carry it at most
    RETURN_OVERLOAD = 2x their load, for one cold start, until the removed half is back. (The HPA truncates
    a Percent scale-down: 3 replicas at 50% may go to 1; from 2 replicas up it always removes one.)
    """
    percent = round(100 * (1 - 1 / RETURN_OVERLOAD))
    return Rules(scale_down_window(cold_start_s), (Policy("Percent", percent, scale_down_period(cold_start_s)),))


def derived_behavior(cold_start_s: int) -> Behavior:
    """Upstream's scale-up (its 300 s window damps the overshoot of a queue that grows while replicas load)
    and the scale-down derived from the stack's cold start."""
    return Behavior(UPSTREAM_BEHAVIOR.scale_up, scale_down_rules(cold_start_s))
