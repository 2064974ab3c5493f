"""The filesystem tier against its backend's documented limits (stacks/planning/workload/tier_throughput.py):
the summary's section and `./run size`'s (the demand per file system and per client, each limit with its source,
whether the tier will throttle, the backend's own throttling metric). The Cost section sets its modes side by side
(stacks/review/cost_summary.py)."""

from __future__ import annotations

from stacks.planning.workload.cost_records import Against, TierThroughput
from stacks.planning.workload.tier_throughput import gbps


def _against(items: list[Against]) -> str:
    return "; ".join(f"{a.what} {gbps(a.demand)} against {gbps(a.limit)} ({a.share:.0%})" for a in items)


def throughput_lines(throughput: TierThroughput | None) -> list[str]:
    if throughput is None or throughput.demand is None:
        return []
    backend, running, demand = throughput.backend, throughput.running, throughput.demand
    if not running.against and not backend.throttle_metric:  # nothing documented to compare with
        return []
    where = f" in {throughput.region}" if throughput.region else ""
    sharing = (
        f"; {demand.pods} pods on {demand.clients} node{'s' if demand.clients > 1 else ''}, at least"
        f" {demand.pods_per_client} on one node's client"
        if running.mode.per_client is not None
        else ""
    )
    lines = [
        "## Filesystem tier throughput",
        "",
        f"{backend.title} ({running.mode.title}){where} against its documented limits{sharing}. The demand:"
        f" {demand.source}.",
        "",
    ]
    if running.against:
        lines += ["| limit | demand | limit | share | from |", "|---|---|---|---|---|"]
        lines += [
            f"| {a.what} | {gbps(a.demand)} | {gbps(a.limit)} | {a.share:.0%} | {a.source} |" for a in running.against
        ]
        lines.append("")
    throttled = running.throttled()
    if throttled and demand.measured:
        lines.append(
            f"**The {backend.short} tier will throttle** ({running.mode.title}): {_against(throttled)}. Its stores and"
            " loads wait on the file system: the hits above arrive later than the replay counts them, and a per-GB"
            " bill is for what can move (the Cost section)."
        )
    elif throttled:
        lines.append(
            f"At this upper-bound store rate (no workload measured it) the {backend.short} tier would throttle:"
            f" {_against(throttled)}. A workload's replay says whether it will; the policy pack judges measured"
            " rates only."
        )
    elif running.against:
        top = max(running.against, key=lambda a: a.share)
        lines.append(f"Within its limits: the nearest is {top.what}, {top.share:.0%} of its limit.")
    else:
        lines.append(f"No documented limit to compare with: {running.file_system.source}.")
    if backend.throttle_metric:
        lines += ["", f"Its throttling metric: {backend.throttle_metric}."]
    return [*lines, ""]
