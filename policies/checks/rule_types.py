"""A rule and what it reports: pure functions over resource inputs, so the same checks run under
`pulumi preview --policy-pack policies` and offline (`python -m stacks check NAME`).

Each rule takes every resource of the stack and its own config in typed form (a `Settings` dataclass,
read from the engine's config: the `--policy-pack-config` keys merged over the rule's defaults), and
returns its violations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, Literal, Self, TypeVar

from policies.resources import Resource

Enforcement = Literal["mandatory", "advisory"]
T = TypeVar("T")


@dataclass(frozen=True)
class Violation:
    resource: Resource | None
    message: str


def setting(key: str, default: T) -> T:
    """A config field: its key in the pack's config (camelCase, as `--policy-pack-config` names it) and its default."""
    value: T = field(default=default, metadata={"key": key})
    return value


@dataclass(frozen=True)
class Settings:
    """A rule's config, typed. A rule with config subclasses it (a frozen dataclass of `setting` fields) and
    reads the engine's config in `read`; this base is the config of a rule that takes none."""

    @classmethod
    def read(cls, config: Mapping[str, Any]) -> Self:
        return cls()

    def keys(self) -> dict[str, Any]:
        """Each config key with this value (tuples as lists): on the defaults, the pack's config schema."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.metadata["key"]] = list(value) if isinstance(value, tuple) else value
        return out


NoConfig = Settings
S = TypeVar("S", bound=Settings)


@dataclass(frozen=True)
class Rule(Generic[S]):
    name: str
    description: str
    enforcement: Enforcement
    run: Callable[[list[Resource], S], list[Violation]]
    settings: type[S]

    @property
    def config(self) -> dict[str, Any]:
        """The rule's config keys and defaults; the pack exposes them as its schema."""
        return self.settings().keys()

    def check(self, resources: list[Resource], config: Mapping[str, Any]) -> list[Violation]:
        """Its violations under the engine's config (the keys it sets; the defaults for the rest)."""
        return self.run(resources, self.settings.read(config))
