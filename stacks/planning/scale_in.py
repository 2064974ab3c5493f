"""How a scale-in goes (`autoscaling.scale_in`): with `cache-value`, the annotator that writes each model-server pod's
cache value as its deletion cost (components/specs/cache_annotator.py) and the drain every model server does before
it stops (components/formulas/drain.py), each setting derived; with `newest` (the default), nothing of either.
"""

from __future__ import annotations

from components.catalog import labels, versions
from components.formulas import hpa
from components.formulas.drain import drain
from components.formulas.engine_costs import engine_costs
from components.formulas.hbm import HbmBudget
from components.formulas.payoff import Replica
from components.specs import cache_annotator, metric_family
from components.specs.metric_family import MetricFamily
from components.specs.servers import ServerSpec
from components.specs.startup import AwaitBudget
from components.specs.workloads import NAMESPACE, Await, Workload
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.planning import cold_starts
from stacks.planning.autoscaling import Autoscaling
from stacks.planning.resolution import Resolved
from stacks.planning.scale_in_record import ScaleIn

# What an operator watches of it (the stack's metricsToWatch).
ANNOTATOR_METRICS = [
    "cache_annotator_last_sync_timestamp_seconds (the last loop that left every model-server pod with its deletion"
    " cost), cache_annotator_unanswered_pods, cache_annotator_write_failures_total (the cache annotator)",
]
# A rollout's surge at most doubles the pods a workload runs (maxSurge is at most 100%).
SURGE = 2


def annotator_window(auto: Autoscaling) -> int:
    """What the annotator reads each pod's value over: the HPA's scale-down stabilization window (what it looked
    back over before it removed a pod), at least one sync period."""
    return max(hpa.SYNC_PERIOD_S, auto.behavior.scale_down.stabilization_s)


def resolve(
    stack: Resolved, decode: ServerSpec, hbm: HbmBudget, auto: Autoscaling | None, exports: tuple[MetricFamily, ...]
) -> ScaleIn | None:
    """None unless autoscaling is on with `scale_in: cache-value` (the config refuses the key with autoscaling
    off); a stack whose pods a deletion cost cannot order, or whose connector exports no hit-token counter, is
    refused in one line."""
    config = stack.config
    if auto is None or config.autoscaling.scale_in != "cache-value":
        return None
    if decode.host_type == "multi-host":
        raise ConfigError(
            "autoscaling.scale_in",
            "cache-value",
            "a LeaderWorkerSet scales in from its highest group index, whatever its pods' deletion costs; allowed:"
            " newest",
        )
    counters = metric_family.cache_value(exports)
    if counters is None:
        families = ", ".join(f.key for f in exports) or "none"
        raise ConfigError(
            "autoscaling.scale_in",
            "cache-value",
            f"connector {stack.connector.key} exports no counter of the prompt tokens its pods served from their"
            f" caches (its metric families: {families}); allowed: newest",
        )
    replica = Replica(decode.model, decode.accelerator.rates, stack.devices, stack.group_size)
    costs = engine_costs(replica, hbm, None, None)  # the decode steps; no tier load is timed here
    interval = hpa.SYNC_PERIOD_S
    return ScaleIn(
        counters=counters,
        tier_counted=stack.connector.cpu_scope == "replica",
        interval_s=interval,
        window_s=annotator_window(auto),
        scrape_timeout_s=interval // 3,
        max_pods=SURGE * auto.max_replicas * stack.group_size * stack.connector.roles(stack.choice),
        drain=drain(costs, hbm.max_model_len, hbm.max_model_len_from),
    )


def annotator_workload(config: StackConfig, scale_in: ScaleIn, decode: ServerSpec) -> Workload:
    """One replica beside the model servers, after the namespace (the pods it annotates come and go on their own),
    on the pinned Python image the project's other scripts run; its egress NetworkPolicy first among its objects
    where the stack has NetworkPolicies (the pass puts its ingress one before it)."""
    image = versions.VERIFICATION_IMAGE
    spec = cache_annotator.AnnotatorSpec(
        namespace=config.namespace,
        image=image,
        selector={labels.GUIDE_LABEL: decode.guide},  # every role's pods (the router's selector adds multi-host's)
        servers_port=labels.MODEL_SERVER_PORT,
        hbm_counter=scale_in.counters.hbm,
        tier_counter=scale_in.tier_counter,
        interval_s=scale_in.interval_s,
        window_s=scale_in.window_s,
        scrape_timeout_s=scale_in.scrape_timeout_s,
        max_pods=scale_in.max_pods,
    )
    egress = [cache_annotator.egress(spec)] if config.network_policies.enabled else []
    return Workload(
        cache_annotator.WORKLOAD,
        [*egress, *cache_annotator.annotator_manifests(spec)],
        needs=(NAMESPACE,),
        rolls="default",
        awaited=Await(
            AwaitBudget(cache_annotator.NAME, cold_starts.daemon_cold_start(image, 0), 1), "Deployment", "beside"
        ),
        ingress=cache_annotator.ingress,
        api_access=True,  # it lists and annotates the model-server pods (its Role)
    )
