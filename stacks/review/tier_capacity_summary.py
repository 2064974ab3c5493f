"""The summary's shared-tier capacity section: the store rate and where it comes from, the time to fill, the
evictor's watermarks with their formulas, and (evictor off) what that costs."""

from __future__ import annotations

from components.formulas import shared_tier_capacity as formulas
from components.units import GiB, MiB
from stacks.planning.plan import StackPlan


def _gb(rate: float) -> str:
    return f"{rate / 1e9:.2f} GB/s"


def _size(value: float) -> str:
    return f"{value / GiB:,.0f} GiB" if value >= GiB else f"{value / MiB:,.1f} MiB"


def tier_capacity_lines(stack_plan: StackPlan) -> list[str]:
    tier = stack_plan.shared_tier
    if tier is None:
        return []
    c, d, backend = tier.capacity, formulas.duration, tier.backend
    rate = c.store_rate.bytes_per_second
    rows = [
        ("store rate R", _gb(rate), c.store_rate.source),
        (
            "held C",
            _size(c.capacity_bytes),
            f"the evictor's budget: {backend.short} is elastic, its claim's size nominal (storage.evictor.budget)"
            if backend.elastic
            else "the claim's size (storage.size)",
        ),
        ("time to fill, nothing evicting", d(c.fill_seconds), "C / R"),
    ]
    if not tier.managed:
        cost = (
            f"the tier grows by {rate * 86400 / 2**40:,.0f} TiB a day, every byte billed each month, and holds every"
            " block ever stored (a vLLM upgrade's new layout leaves the old one as garbage)"
            if backend.elastic
            else f"the claim is full {d(c.fill_seconds)} after it starts filling: from then on every store fails and"
            " the tier serves only what it held when it filled"
        )
        return [
            "## Shared tier capacity",
            "",
            f"No evictor (storage.evictor.mode off) and the connectors never delete from the shared tier: {cost}.",
            "",
            *_table(rows),
            "",
        ]
    scans = backend.evictor_usage == "scan"
    poll = "a scan (the usage is what each scan counts)" if scans else f"{c.poll_seconds:.0f} s"
    margin = f"{c.margin:g}" if c.margin is not None else "none holds"
    rows += [
        ("one block file F", _size(c.file_bytes), "the connector's transfer block x KV bytes per token / TP"),
        ("files when full N", f"{c.files_when_full:,}", "C / F"),
        (
            "scan T",
            d(c.scan_seconds),
            f"N / S, S = {c.scan_rate:,.0f} files/s (modeled: storage.evictor.scan_rate; the evictor measures"
            " tier_evictor_scan_seconds)",
        ),
        ("usage read every P", poll, "statvfs where the file system reports its usage"),
    ]
    if c.derived and c.margin is not None:
        rows += [
            ("high watermark h", f"{c.high:.0%}", f"min(95%, 1 - m x R x (P + T) / C), m = {margin}, rounded down"),
            ("low watermark l", f"{c.low:.0%}", "h - m x R x T / C, rounded down"),
        ]
    elif c.derived:
        rows += [
            ("high watermark h", f"{c.high:.0%}", "the reference evictor's default: no margin holds the bounds below"),
            ("low watermark l", f"{c.low:.0%}", "the reference evictor's default (llm-d-kv-cache pvc_evictor)"),
        ]
    else:
        rows += [
            ("high watermark h", formulas.percent(c.high), "storage.evictor.high_watermark"),
            ("low watermark l", formulas.percent(c.low), "storage.evictor.low_watermark"),
        ]
    rows += [
        (
            "above h",
            d(c.headroom_seconds),
            f"(1 - h) x C / R: must outlast P + T = {d(c.poll_seconds + c.scan_seconds)}",
        ),
        ("from l back to h", d(c.refill_seconds), f"(h - l) x C / R: must outlast a scan, T = {d(c.scan_seconds)}"),
        (
            "files one pass deletes",
            f"{c.files_per_pass:,}",
            f"((h - l) x C + R x T) / F; it keeps the {c.max_candidates:,} oldest (x{formulas.CANDIDATE_MARGIN:g}),"
            " its memory bound",
        ),
        ("never deletes a file younger than", d(c.min_age_seconds), "a scan of a full tier, at least a minute"),
        ("oldest first by", backend.evictor_timestamp, backend.timestamp_why),
    ]
    problems = c.problems()
    warning = (
        [
            f"**At this store rate the evictor cannot keep up**: {'; '.join(problems)}. The rate is an upper bound"
            " (no workload measured it): a real workload stores less, and `storage.evictor` can set the watermarks"
            " (checked against the same bounds) once one does.",
            "",
        ]
        if problems
        else []
    )
    return [
        "## Shared tier capacity",
        "",
        "The connectors never delete from the shared tier: the `tier-evictor` Deployment deletes its least recently"
        " used files above h, down to l, and `TieredCacheSharedTierAboveHighWatermark` fires when the usage stays"
        " above h.",
        "",
        *warning,
        *_table(rows),
        "",
    ]


def _table(rows: list[tuple[str, str, str]]) -> list[str]:
    lines = ["| quantity | value | from |", "|---|---|---|"]
    return lines + [f"| {a} | {b} | {c.replace('|', '/')} |" for a, b, c in rows]
