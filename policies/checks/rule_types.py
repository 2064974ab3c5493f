"""A rule and what it reports: pure functions over resource inputs, so the same checks run under
`pulumi preview --policy-pack policies` and offline (`python -m stacks check NAME`).

Each rule takes every resource of the stack and its own config, and returns its violations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from policies.resources import (
    Resource,
)

Enforcement = Literal["mandatory", "advisory"]


@dataclass(frozen=True)
class Violation:
    resource: Resource | None
    message: str


Check = Callable[[list[Resource], dict[str, Any]], list[Violation]]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    enforcement: Enforcement
    check: Check
    config: dict[str, Any] = field(default_factory=dict)  # defaults; the pack exposes them as its schema
