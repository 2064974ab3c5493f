"""The workload's tier curve as a PNG beside the summary: the share of prompt tokens each tier serves at each
CPU-tier size (stacked), the configured and chosen sizes marked. Drawn with matplotlib's Agg backend, with no
timestamp or version in the file, so the same curve gives the same bytes."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from stacks.planning.workload.tier_curve import UNBOUNDED, TierCurve


def _workload_name(sized: TierCurve) -> str:
    """The source's name, without the config key it came from: "trace `x.jsonl`", "shared prefix"."""
    return sized.source.split(" (")[0]


def tier_curve_png(sized: TierCurve) -> bytes:
    c = sized.curve
    cfg_cpu, cfg_fs = sized.configured
    points = [(i, s) for i, s in enumerate(sized.cpu_sizes) if s.bytes and s != UNBOUNDED]
    x = [s.bytes / 2**30 for _, s in points]
    shares = [c.share(t)[:, cfg_fs] * 100 for t in (c.hbm_tokens, c.cpu_tokens, c.fs_tokens)]
    series = [[float(share[i]) for i, _ in points] for share in shares]
    panels = 2 if sized.fs_sizes else 1
    figure, all_axes = plt.subplots(1, panels, figsize=(7 * panels, 4.5), dpi=100, squeeze=False)
    axes = all_axes[0][0]
    labels = ["HBM", "CPU tier", "filesystem tier"] if sized.fs_sizes else ["HBM", "CPU tier"]
    axes.stackplot(x, *series[: len(labels)], labels=labels, alpha=0.8)
    axes.set_xscale("log")
    axes.set_xticks(x, [s.readable() for _, s in points], rotation=45, fontsize=7)
    axes.minorticks_off()
    axes.set_xlabel("CPU tier per pod (cache.tier.cpu)")
    axes.set_ylabel("prompt tokens served (%)")
    axes.set_title(
        f"{sized.shape.model.name} on {sized.shape.replicas} replicas: tier hits on {_workload_name(sized)}",
        fontsize=9,
    )
    hits = c.share(c.hit_tokens) * 100
    axes.axhline(float(hits[0, cfg_fs]), color="tab:gray", linestyle=":", linewidth=1, label="HBM alone")
    axes.axhline(float(hits.max()), color="tab:purple", linestyle="-.", linewidth=1, label="ceiling (unbounded)")
    configured = sized.cpu_sizes[cfg_cpu]
    marks = [(configured, f"configured {configured.readable()}", "black")]
    if sized.choice is not None:
        marks.append((sized.choice.size, f"auto {sized.choice.size.readable()}", "tab:red"))
    for size, name, color in marks:
        if size.bytes:
            axes.axvline(size.bytes / 2**30, color=color, linestyle="--", linewidth=1, label=name)
    axes.legend(loc="upper left", fontsize=7)
    axes.grid(True, which="major", alpha=0.3)
    if sized.fs_sizes:
        _filesystem_panel(all_axes[0][1], sized)
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()


def _filesystem_panel(axes: Axes, sized: TierCurve) -> None:
    """Every tier's share at the configured CPU tier, over the filesystem tier's size."""
    c = sized.curve
    cfg_cpu, cfg_fs = sized.configured
    points = [(j, s) for j, s in enumerate(sized.fs_sizes) if s.bytes and s != UNBOUNDED]
    x = [s.bytes / 2**30 for _, s in points]
    hits = c.share(c.hit_tokens)[cfg_cpu] * 100
    axes.plot(x, [float(hits[j]) for j, _ in points], marker="o", color="tab:green", label="all tiers")
    axes.set_xscale("log")
    axes.set_xticks(x, [s.readable() for _, s in points], rotation=45, fontsize=7)
    axes.minorticks_off()
    axes.axhline(float(hits[0]), color="tab:gray", linestyle=":", linewidth=1, label="no filesystem tier")
    if sized.fs_sizes[-1] == UNBOUNDED:
        axes.axhline(float(hits[-1]), color="tab:purple", linestyle="-.", linewidth=1, label="ceiling (unbounded)")
    configured = sized.fs_sizes[cfg_fs]
    if configured.bytes:
        axes.axvline(
            configured.bytes / 2**30,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"configured {configured.readable()}",
        )
    axes.set_xlabel("filesystem tier (storage.size)")
    axes.set_ylabel("prompt tokens served (%)")
    axes.set_title(f"the filesystem tier, CPU tier at {sized.cpu_sizes[cfg_cpu].readable()}", fontsize=9)
    axes.legend(loc="upper left", fontsize=7)
    axes.grid(True, which="major", alpha=0.3)
