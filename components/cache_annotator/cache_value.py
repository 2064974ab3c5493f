"""A pod's recent cache value from its engine's own counters: the prompt tokens it served from its caches instead of
computing them, increased over a window, read from the Prometheus text exposition its `/metrics` serves.

A counter is named by a sample selector, `name` or `name{label="value",...}` (components/specs/metric_family.py
`CacheValue`, per connector): every sample of that name whose labels include those is summed (vLLM labels its
samples by engine and model; SGLang its cached tokens by `cache_source`). Stdlib only.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

_SELECTOR = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


@dataclass(frozen=True)
class Selector:
    name: str
    labels: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def parse(text: str) -> Selector:
        """`name` or `name{k="v",...}`; anything else is refused with what was given."""
        match = _SELECTOR.match(text.strip())
        if not match:
            raise ValueError(f'not a sample selector (name or name{{label="value"}}): {text!r}')
        return Selector(match.group(1), _labels(match.group(2) or "", text))

    def matches(self, labels: dict[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.labels)


def _labels(body: str, text: str) -> tuple[tuple[str, str], ...]:
    out, at = [], 0
    while at < len(body.rstrip()):
        match = _LABEL.match(body, at)
        if not match:
            raise ValueError(f"bad labels in sample selector {text!r} at {body[at:]!r}")
        out.append((match.group(1), match.group(2).replace('\\"', '"').replace("\\\\", "\\")))
        at = match.end()
    return tuple(out)


def counter_value(exposition: str, selector: Selector) -> float | None:
    """The sum of the selector's samples in one scrape; None where the scrape has none of them."""
    total, seen = 0.0, False
    prefix = selector.name
    for line in exposition.splitlines():
        if not line.startswith(prefix) or line.startswith("#"):
            continue
        rest = line[len(prefix) :]
        if rest[:1] == "{":
            close = rest.rfind("}")
            if close < 0:
                continue
            try:
                labels = dict(_labels(rest[1:close], line))
            except ValueError:
                continue
            rest = rest[close + 1 :]
        elif rest[:1] not in (" ", "\t"):
            continue  # another metric whose name begins with this one
        else:
            labels = {}
        fields = rest.split()
        if not fields or not selector.matches(labels):
            continue
        try:
            total += float(fields[0])
        except ValueError:
            continue
        seen = True
    return total if seen else None


class Window:
    """One pod's counter samples over the last `seconds`: its increase as Prometheus' `increase()` counts it (a
    drop is a restart of the counter, which counts from zero again), without extrapolation."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.samples: deque[tuple[float, float]] = deque()

    def add(self, at: float, value: float) -> None:
        self.samples.append((at, value))
        while len(self.samples) > 2 and self.samples[1][0] <= at - self.seconds:
            self.samples.popleft()  # keep one sample at or before the window's start: its increase spans it

    def increase(self) -> float:
        total, previous = 0.0, None
        for _, value in self.samples:
            if previous is not None:
                total += value - previous if value >= previous else value
            previous = value
        return total
