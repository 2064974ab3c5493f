"""A registry's keys as the config reads and says them: the `Literal` type a field is typed with, and the
keys spoken in a message ("gke or eks"). Every list of provider, platform, accelerator or connector keys is
built from its registry here, so a new entry is in every allowed list, message and generated doc at once
(`tests/test_registries.py` fails on a `Literal` of those keys written by hand)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal


def literal_of(keys: Iterable[str]) -> Any:
    """`Literal[k1, k2, ...]` of the keys, in their order: pydantic validates it, refuses another value with
    its own line ("input should be 'a', 'b' or 'c'") and writes it into the schema as an enum, as it does a
    `Literal` written out. mypy cannot evaluate it: modules alias it to `str` under `TYPE_CHECKING`."""
    return Literal[tuple(keys)]


def spoken(keys: Iterable[str], last: str = "or") -> str:
    """`a`, `a or b`, `a, b or c` (`last` joins the final two)."""
    names = list(keys)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"
