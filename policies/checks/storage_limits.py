"""The filesystem tier within its backend's documented limits: the plan's measured read and write rates (a
workload's replay) against the limits per file system and per client, stamped on the stack's Namespace
(`labels.FILESYSTEM_THROUGHPUT_ANNOTATION`, written by stacks/planning/workload/tier_throughput.py); nothing here
re-derives a rate or a limit. Without a workload nothing is stamped and nothing judged (the summary shows the
upper bound against the limits)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from components.catalog.labels import FILESYSTEM_THROUGHPUT_ANNOTATION
from policies.checks.rule_types import Settings, Violation, setting
from policies.resources import Resource

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"


@dataclass(frozen=True)
class StorageLimitsConfig(Settings):
    throttle_share: float = setting(
        "throttleShare",
        0.1,
        "the share by which a measured filesystem-tier rate may pass its backend's documented limit before the stack"
        " is refused (0.1: 10% over)",
    )


def _rows(stamp: Any) -> list[dict[str, Any]] | None:
    """The stamp's rows, each a limit with finite, positive figures; None where it is not that."""
    try:
        rows = json.loads(str(stamp))["limits"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(rows, list):
        return None
    for row in rows:
        figures = [row.get(k) if isinstance(row, dict) else None for k in ("demand", "limit")]
        if not all(isinstance(f, (int, float)) and math.isfinite(f) and f >= 0 for f in figures) or not figures[1]:
            return None
    return rows


def filesystem_tier_within_limits(resources: list[Resource], config: StorageLimitsConfig) -> list[Violation]:
    """A filesystem tier whose measured read or write rate (per file system, or through one node's client) passes
    its backend's documented limit by more than `throttleShare` is refused: it will throttle, and its stores, loads
    and per-GB bill are not what the plan shows."""
    out = []
    for namespace in (r for r in resources if r.type == NAMESPACE_TYPE):
        stamp = ((namespace.props.get("metadata") or {}).get("annotations") or {}).get(FILESYSTEM_THROUGHPUT_ANNOTATION)
        if stamp is None:
            continue
        rows = _rows(stamp)
        if rows is None:
            shown = str(stamp)[:200]
            out.append(Violation(namespace, f"the filesystem-throughput stamp is not rows of two numbers: {shown}"))
            continue
        head = json.loads(str(stamp))
        tier = f"{head.get('backend', 'its backend')} in {head.get('mode', 'its')} mode"
        for row in rows:
            demand, limit = float(row["demand"]), float(row["limit"])
            if demand > limit * (1 + config.throttle_share):
                out.append(
                    Violation(
                        namespace,
                        f"the filesystem tier ({tier}) will throttle: {row.get('what')} {demand / 1e9:,.2f} GB/s"
                        f" against its documented {limit / 1e9:,.2f} GB/s ({demand / limit:.0%}; {row.get('source')}),"
                        f" more than {config.throttle_share:.0%} over: spread the pods over more nodes (a per-client"
                        " limit), choose a throughput mode or backend with a higher limit, or shrink what the tier"
                        " stores",
                    )
                )
    return out
