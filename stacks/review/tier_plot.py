"""The workload's tier curve as a PNG beside the summary: the share of prompt tokens each tier serves at each
CPU-tier size (stacked), the configured and chosen sizes marked. Drawn with matplotlib's Agg backend, with no
timestamp or version in the file, so the same curve gives the same bytes."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from stacks.planning.workload_sizing import UNBOUNDED, TierCurve


def tier_curve_png(sized: TierCurve) -> bytes:
    c = sized.curve
    cfg_cpu, cfg_fs = sized.configured
    points = [(i, s) for i, s in enumerate(sized.cpu_sizes) if s.bytes and s != UNBOUNDED]
    x = [s.bytes / 2**30 for _, s in points]
    shares = [c.share(t)[:, cfg_fs] * 100 for t in (c.hbm_tokens, c.cpu_tokens, c.fs_tokens)]
    series = [[float(share[i]) for i, _ in points] for share in shares]
    figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
    labels = ["HBM", "CPU tier", "filesystem tier"] if sized.fs_sizes else ["HBM", "CPU tier"]
    axes.stackplot(x, *series[: len(labels)], labels=labels, alpha=0.8)
    axes.set_xscale("log")
    axes.set_xlabel("CPU tier per pod (GiB, cache.tier.cpu)")
    axes.set_ylabel("prompt tokens served (%)")
    axes.set_title(f"{sized.shape.model.name}: tier hits on the workload", fontsize=10)
    marks = [(sized.cpu_sizes[cfg_cpu], "configured", "black")]
    if sized.choice is not None:
        marks.append((sized.choice.size, "auto", "tab:red"))
    for size, name, color in marks:
        if size.bytes:
            axes.axvline(size.bytes / 2**30, color=color, linestyle="--", linewidth=1, label=name)
    axes.legend(loc="upper left", fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()
