"""A rule and what it reports: pure functions over resource inputs, so the same checks run under
`pulumi preview --policy-pack policies` and offline (`python -m stacks check NAME`).

Each rule takes every resource of the stack and its own config in typed form (a `Settings` dataclass,
read from the engine's config: the `--policy-pack-config` keys merged over the rule's defaults), and
returns its violations.
"""

from __future__ import annotations

import typing
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


def setting(key: str, default: T, description: str) -> T:
    """A config field, written once: its key in the pack's config (camelCase, as `--policy-pack-config` names
    it), its default and what it does. The pack's schema, `Settings.read` and docs/policy-rules.md read it."""
    value: T = field(default=default, metadata={"key": key, "description": description})
    return value


@dataclass(frozen=True)
class SettingRecord:
    """One config key of a rule, as the pack's schema and the docs list it."""

    key: str
    default: Any  # tuples as lists, as JSON has them
    description: str


def _read_value(kind: Any, value: Any) -> Any:
    """The engine's value as the field's type (a JSON list as a tuple, a number as int or float)."""
    return tuple(value) if typing.get_origin(kind) is tuple else kind(value)


@dataclass(frozen=True)
class Settings:
    """A rule's config, typed. A rule with config subclasses it (a frozen dataclass of `setting` fields); this
    base is the config of a rule that takes none."""

    @classmethod
    def read(cls, config: Mapping[str, Any]) -> Self:
        """The engine's config over the defaults: a key it leaves unset, null or empty (an empty list, 0) takes
        its default; a boolean it sets is taken as set."""
        kinds = typing.get_type_hints(cls)
        values = {}
        for f in fields(cls):
            value = config.get(f.metadata["key"])
            if value is None or (not value and not isinstance(f.default, bool)):
                continue
            values[f.name] = _read_value(kinds[f.name], value)
        return cls(**values)

    @classmethod
    def records(cls) -> list[SettingRecord]:
        """Each config key with its default and description."""
        defaults = cls().keys()
        return [
            SettingRecord(f.metadata["key"], defaults[f.metadata["key"]], f.metadata["description"])
            for f in fields(cls)
        ]

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
