"""`./run size`'s "Scale-in: the day replayed" section: an autoscaled stack's day (stacks/planning/workload/
scale_in_day.py) for each victim choice, newest (the ReplicaSet controller's own order) against random and against
the cache annotator's lowest cache value first."""

from __future__ import annotations

from components.formulas.hpa import Sample
from stacks.planning.workload.scale_in_day import ScaleInDay

TIMELINE_POINTS = 16  # the replica changes a line shows before it elides the rest


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.0f} s"


def timeline(samples: tuple[Sample, ...]) -> str:
    """The replica count where it changed: "0 s: 2, 630 s: 4, ..."."""
    changes = [s for k, s in enumerate(samples) if k == 0 or s.replicas != samples[k - 1].replicas]
    shown = ", ".join(f"{s.t_s:,} s: {s.replicas}" for s in changes[:TIMELINE_POINTS])
    more = len(changes) - TIMELINE_POINTS
    return shown + (f", ... ({more} more changes)" if more > 0 else "")


def _fewer(share: float | None, what: str) -> str:
    if share is None:
        return f"newest had no prompt token {what} after a scale-in"
    return f"{share:.0%} fewer prompt tokens {what} after a scale-in" if share >= 0 else f"{-share:.0%} more {what}"


def scale_in_day_lines(day: ScaleInDay) -> list[str]:
    if not day.days:
        return ["## Scale-in: the day replayed", "", f"{day.shape[0].upper()}{day.shape[1:]}.", ""]
    lines = [
        "## Scale-in: the day replayed",
        "",
        f"The workload: {day.shape}. The HPA as rendered steps every sync period over a fluid queue; a scale-in removes"
        " pods not yet ready first, then by the victim choice; a removed pod's HBM and CPU tier go with it"
        " (components/formulas/scale_in_replay.py).",
        "",
    ]
    for d in day.days:
        lines.append(f"- replicas over time ({d.choice}): {timeline(d.samples)}")
    lines += [
        "",
        "| victim choice | pods removed | HBM hits | CPU-tier hits | filesystem hits | TTFT p50 / p90 |"
        " prompt tokens recomputed: a scale-in removed their only holder |"
        " loaded from a shared tier: a scale-in removed the only pod holding them |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in day.days:
        ttft = " / ".join(_ms(t) for t in d.ttft_s)
        lines.append(
            f"| {d.choice} | {d.removed} | {d.share(d.hbm_tokens):.1%} | {d.share(d.cpu_tokens):.1%} |"
            f" {d.share(d.fs_tokens):.1%} | {ttft} | {d.lost_tokens:,} ({d.share(d.lost_tokens):.2%}) |"
            f" {d.moved_tokens:,} ({d.share(d.moved_tokens):.2%}) |"
        )
    lines += [
        "",
        f"cache-value against newest: {_fewer(day.fewer_lost, 'recomputed')};"
        f" {_fewer(day.fewer_moved, 'loaded from a shared tier')}",
        "",
    ]
    return lines
