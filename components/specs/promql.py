"""PromQL built once for the alert rules and the dashboard: per-pod rates and their ratios."""

from __future__ import annotations


def rate(metric: str, window: str, by: str = "pod", offset: str = "") -> str:
    shift = f" offset {offset}" if offset else ""
    return f"sum by ({by}) (rate({metric}[{window}]{shift}))"


def ratio(numerator: str, denominator: str, window: str, offset: str = "") -> str:
    """Per-pod rate of one counter over another's, parenthesized so it composes in comparisons."""
    return f"({rate(numerator, window, offset=offset)} / {rate(denominator, window, offset=offset)})"
