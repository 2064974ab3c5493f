"""The capacity plan's keys checked against the rest of the config: `cache.replicas: auto` sizes from a workload,
and is a fixed count."""

from __future__ import annotations

from stacks.config import StackConfig
from stacks.config.errors import ConfigError


def check_replicas_auto(config: StackConfig, *, trace_given: bool = False) -> None:
    """`cache.replicas: auto` is planned from a workload (the stack's, or `trace_given`: `./run size --trace`'s), and
    is a fixed count (KEDA would own it otherwise)."""
    if config.cache.replicas != "auto":
        return
    if config.workload is None and not trace_given:
        raise ConfigError(
            "cache.replicas",
            "auto",
            "needs a workload to size from: set workload.trace or workload.shared_prefix (and workload.slo for a"
            " latency target), or give a count",
        )
    if config.autoscaling.enabled:
        raise ConfigError(
            "cache.replicas",
            "auto",
            "plans a fixed count from the workload, and autoscaling.enabled lets KEDA own the count: give a count"
            " (the initial one) or turn autoscaling off",
        )
