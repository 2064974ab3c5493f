"""`autoscaling.scale_in: cache-value` as the plan holds it (stacks/planning/scale_in.py resolves it): a record
beneath the plan's records, so the stack plan that carries it stands no higher than its own fields."""

from __future__ import annotations

from dataclasses import dataclass

from components.formulas.drain import Drain
from components.specs import metric_family


@dataclass(frozen=True)
class ScaleIn:
    """`autoscaling.scale_in: cache-value` resolved: what the annotator reads, how often, over what, and the drain."""

    counters: metric_family.CacheValue
    tier_counted: bool  # the connector's tier dies with the pod (its hits are part of the value)
    interval_s: int
    window_s: int
    scrape_timeout_s: int
    max_pods: int
    drain: Drain

    @property
    def tier_counter(self) -> str | None:
        return self.counters.tier if self.tier_counted else None
