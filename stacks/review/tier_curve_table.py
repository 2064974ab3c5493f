"""The summary's "Tier sizes for the workload" section: what each tier catches at each size, what it saves and
what it writes, and the size `cache.tier.cpu: auto` takes (stacks/planning/workload/workload_sizing.py)."""

from __future__ import annotations

from components.formulas.tier_grid import Floats
from components.units import ByteSize
from stacks.planning.workload.tier_curve import UNBOUNDED, TierCurve

PLOT_FILE = "tier-curve.png"


def _size(size: ByteSize, what: str) -> str:
    if size == UNBOUNDED:
        return "unbounded"
    return f"none ({what})" if not size.bytes else size.readable()


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _rate(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.2f} GB/s"


def _saved(sized: TierCurve, i: int, j: int) -> str:
    per_request = sized.curve.seconds_saved_per_request
    return f"{float(per_request[i, j]):.2f} s" if per_request is not None else "-"


def _fill(size: ByteSize, rate: float) -> str:
    if size == UNBOUNDED or not size.bytes or rate <= 0:
        return "-"
    minutes = size.bytes / rate / 60
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


Shares = tuple[Floats, Floats, Floats, Floats]  # HBM, CPU tier, filesystem tier, recomputed


def _band_shares(sized: TierCurve) -> Shares | None:
    b = sized.band
    if b is None:
        return None
    return (b.share(b.hbm_tokens), b.share(b.cpu_tokens), b.share(b.fs_tokens), b.share(b.recomputed_tokens))


def _cell(shares: Floats, band: Shares | None, column: int, i: int, j: int) -> str:
    """A share, and where the second routing gives another (by a tenth of a point or more), the band between."""
    first = float(shares[i, j])
    if band is None or _pct(float(band[column][i, j])) == _pct(first):
        return _pct(first)
    low, high = sorted((first, float(band[column][i, j])))
    return f"{low:.1%}-{high:.1%}"


def _band_line(sized: TierCurve) -> list[str]:
    if sized.band is None or sized.band_size is None:
        return []
    return [
        "A share given as a band was replayed with two routings: as at the configured size and as at"
        f" {sized.band_size.readable()} (the time model's router with its CPU index at that size); routed at its own"
        " size, a row's figure would lie near or between them (the configured row is routed at its own size; the"
        " largest is, in the second figure). The filesystem rows are routed as at the configured CPU tier.",
        "",
    ]


def tier_curve_lines(sized: TierCurve, chosen_by_auto: bool, plotted: bool = True) -> list[str]:
    c, shape = sized.curve, sized.shape
    hbm, cpu, fs, miss = (c.share(x) for x in (c.hbm_tokens, c.cpu_tokens, c.fs_tokens, c.recomputed_tokens))
    cfg_cpu, cfg_fs = sized.configured
    ceiling = c.share(c.hit_tokens).max()
    lines = [
        "## Tier sizes for the workload",
        "",
        f"Workload: {sized.source}: {c.requests:,} requests over {sized.duration_s:,.0f} s, {c.prompt_tokens:,} prompt"
        f" tokens ({c.prompt_tokens // max(c.requests, 1):,} a request), a working set of"
        f" {ByteSize(c.working_set_blocks * sized.block_bytes).readable()} ({c.working_set_tokens:,} tokens, output"
        f" included) in blocks of {c.tiers.block_tokens}"
        f" tokens. Replayed on {shape.replicas} replicas with {shape.hbm.kv_tokens // c.tiers.block_tokens:,} blocks"
        f" of HBM KV each (HBM KV per replica: {shape.hbm.derivation()}; {shape.cpu_scope} CPU tier,"
        f" {shape.relation} of HBM), routed {sized.routing}; the best any size here reaches is {_pct(ceiling)}"
        " of prompt tokens.",
        "",
        "| CPU tier (`cache.tier.cpu`) | HBM | CPU tier | filesystem tier | recomputed | prefill saved per request |"
        " CPU tier writes (all pods) |",
        "|---|---|---|---|---|---|---|",
    ]
    band = _band_shares(sized)
    for i, size in enumerate(sized.cpu_sizes):
        row_band = band if i != cfg_cpu else None  # the configured row is routed at its own size: exact
        mark = " (configured)" if i == cfg_cpu else ""
        mark += " (chosen)" if sized.choice is not None and size == sized.choice.size else ""
        rate = sized.store_rate(int(c.cpu_stored_blocks[i, cfg_fs]))
        lines.append(
            f"| {_size(size, 'HBM only')}{mark} | {_cell(hbm, row_band, 0, i, cfg_fs)} |"
            f" {_cell(cpu, row_band, 1, i, cfg_fs)} | {_cell(fs, row_band, 2, i, cfg_fs)} |"
            f" {_cell(miss, row_band, 3, i, cfg_fs)} | {_saved(sized, i, cfg_fs)} |"
            f" {_rate(rate) if size.bytes else '-'} |"
        )
    if sized.fs_sizes:
        lines += [
            "",
            "| filesystem tier (`storage.size`) | HBM + CPU tier | filesystem tier | recomputed |"
            " prefill saved per request | filesystem writes | full in |",
            "|---|---|---|---|---|---|---|",
        ]
        for j, size in enumerate(sized.fs_sizes):
            rate = sized.store_rate(int(c.fs_stored_blocks[cfg_cpu, j]))
            mark = " (configured)" if j == cfg_fs else ""
            lines.append(
                f"| {_size(size, 'no filesystem tier')}{mark} | {_pct(hbm[cfg_cpu, j] + cpu[cfg_cpu, j])} |"
                f" {_pct(fs[cfg_cpu, j])} | {_pct(miss[cfg_cpu, j])} | {_saved(sized, cfg_cpu, j)} |"
                f" {_rate(rate) if size.bytes else '-'} | {_fill(size, rate)} |"
            )
    lines += ["", *_band_line(sized), *_choice_lines(sized, chosen_by_auto), ""]
    lines += [
        "Shares are of prompt tokens; writes are what each tier stores over the workload's span (every block"
        " computed or loaded that it does not hold). Prefill saved is the payoff model's (the Payoff section)"
        " against recomputing every prompt, HBM hits included; it takes a hit's reload as the only cost, so it"
        " is optimistic where loads queue." + (f" The plot is `{PLOT_FILE}`." if plotted else ""),
        "",
    ]
    return lines


def _choice_lines(sized: TierCurve, chosen_by_auto: bool) -> list[str]:
    if sized.curve.seconds_saved is None:
        unknown = (
            "Prefill saved is not derivable: the filesystem's read bandwidth is not known (storage.read_bandwidth)."
        )
        return [unknown, *_auto_lines(sized, chosen_by_auto)]
    return _auto_lines(sized, chosen_by_auto)


def _auto_lines(sized: TierCurve, chosen_by_auto: bool) -> list[str]:
    if sized.choice is None:
        return [
            "`cache.tier.cpu: auto` chooses from this curve on a node pool whose host memory is known"
            " (`cache.node_pool`); this stack names none, so the sizes above run to four times the configured one."
        ]
    verb = "took" if chosen_by_auto else "would take"
    return [f"`cache.tier.cpu: auto` {verb} {sized.choice.size.readable()}: {sized.choice.reason}."]
