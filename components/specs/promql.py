"""PromQL built once for the alert rules, the dashboard and the autoscaling triggers: per-pod rates and their
ratios, and label selectors."""

from __future__ import annotations


def rate(metric: str, window: str, by: str = "pod", offset: str = "") -> str:
    shift = f" offset {offset}" if offset else ""
    return f"sum by ({by}) (rate({metric}[{window}]{shift}))"


def ratio(numerator: str, denominator: str, window: str, offset: str = "") -> str:
    """Per-pod rate of one counter over another's, parenthesized so it composes in comparisons."""
    return f"({rate(numerator, window, offset=offset)} / {rate(denominator, window, offset=offset)})"


def quoted(value: str) -> str:
    """A PromQL double-quoted string: backslashes and quotes escaped, so a value is never read as syntax."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def selector(metric: str, matchers: dict[str, str]) -> str:
    """`metric{label="value",...}`: equality matchers in the given order."""
    if not matchers:
        return metric
    return metric + "{" + ",".join(f"{k}={quoted(v)}" for k, v in matchers.items()) + "}"
