"""`./run size`'s "Prefix routing" section: approximate and precise routing replayed on the same workload, replicas
and tiers (`workload_plan.routings_of`; the record: `capacity_records.RoutingComparison`), so a reader sees what
precise routing is worth for their traffic."""

from __future__ import annotations

from stacks.planning.workload.capacity_records import RoutingComparison, Run
from stacks.review.capacity_table import duration, tiers_of


def _row(label: str, run: Run) -> str:
    hits = run.hbm_share + run.cpu_share + run.fs_share
    ttft = " / ".join(duration(t) for t in run.ttft_s)
    return (
        f"| {label} | {run.hbm_share:.1%} | {run.cpu_share:.1%} | {run.fs_share:.1%} | {hits:.1%} | {ttft} |"
        f" {duration(run.tpot_s[1])} | {'yes' if run.fits else 'no'} |"
    )


def routing_lines(comparison: RoutingComparison) -> list[str]:
    first = comparison.runs[0].run
    lines = [
        "## Prefix routing: approximate vs precise",
        "",
        f"The workload replayed at the rendered {first.replicas} replicas with {tiers_of(first)}, once per routing,"
        f" each with the router it renders (this stack renders `{comparison.rendered}`). Approximate: the router's"
        " own LRUs of the prompts it sent each replica, at the derived capacities, which can hold what the server"
        " evicted and never see decode blocks. Precise: what each replica's tiers hold in the replay (their KV-cache"
        " events), each block at its medium's weight; the index is taken as current when a request is routed.",
        "",
        "| routing | HBM hits | CPU hits | filesystem hits | prompt hits | TTFT p50 / p90 / p99 | TPOT p90 | keeps"
        " up? |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for routed in comparison.runs:
        rendered = " (rendered)" if routed.routing == comparison.rendered else ""
        lines.append(_row(f"{routed.routing}{rendered}", routed.run))
    if comparison.refused is not None:
        lines.append(
            f"| {'precise' if comparison.rendered == 'approximate' else 'approximate'} | refused: "
            f"{comparison.refused} | | | | | | |"
        )
    approximate, precise = comparison.run("approximate"), comparison.run("precise")
    lines.append("")
    if approximate is not None and precise is not None:
        gained = _hits(precise) - _hits(approximate)
        ttft = precise.ttft_s[1] - approximate.ttft_s[1]
        change = ttft / approximate.ttft_s[1] if approximate.ttft_s[1] else 0.0
        sign = "+" if ttft >= 0 else "-"
        lines.append(
            f"Precise against approximate: prompt hits {gained * 100:+.1f} points, TTFT p90 {sign}{duration(abs(ttft))}"
            f" ({change:+.0%})."
        )
    for routed in comparison.runs:
        lines.append(f"- {routed.routing}: routed by {routed.source}.")
    lines.append("")
    return lines


def _hits(run: Run) -> float:
    return run.hbm_share + run.cpu_share + run.fs_share
