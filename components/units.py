"""Typed byte sizes: parse "300GiB" / "200GB" / "20Gi", compute exactly, print Kubernetes quantities."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4
KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4

_UNITS: dict[str, int] = {
    "": 1,
    "B": 1,
    "Ki": KiB,
    "KiB": KiB,
    "Mi": MiB,
    "MiB": MiB,
    "Gi": GiB,
    "GiB": GiB,
    "Ti": TiB,
    "TiB": TiB,
    "k": KB,
    "K": KB,
    "KB": KB,
    "M": MB,
    "MB": MB,
    "G": GB,
    "GB": GB,
    "T": TB,
    "TB": TB,
}
# ASCII digits and spaces only, the whole text (no Unicode digits, no trailing newline).
_PATTERN = re.compile(r" *([0-9]+(?:\.[0-9]+)?) *([A-Za-z]*) *", re.ASCII)
# The quantity printer takes the first unit that divides exactly: large binary units, then large
# decimal ones (200GB prints as 200G, not 195312500Ki), then the small ones.
_QUANTITY_SUFFIXES = (("Ti", TiB), ("Gi", GiB), ("Mi", MiB), ("T", TB), ("G", GB), ("M", MB), ("Ki", KiB), ("k", KB))
_BINARY_SUFFIXES = (("Ti", TiB), ("Gi", GiB), ("Mi", MiB), ("Ki", KiB))
ALLOWED_FORMS = "a byte count or a number with a unit (B, KiB/Ki, MiB/Mi, GiB/Gi, TiB/Ti, KB, MB, GB, TB), e.g. 300GiB"


@dataclass(frozen=True, order=True)
class ByteSize:
    """A whole number of bytes. Arithmetic stays exact; formatting picks the unit."""

    bytes: int

    def __post_init__(self) -> None:
        if self.bytes < 0:
            raise ValueError(f"a size cannot be negative: {self.bytes}")

    @classmethod
    def parse(cls, value: str | int | ByteSize) -> ByteSize:
        if isinstance(value, ByteSize):
            return value
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a size; allowed: {ALLOWED_FORMS}")
        if isinstance(value, int):
            return cls(value)
        match = _PATTERN.fullmatch(str(value))
        if not match or match.group(2) not in _UNITS:
            raise ValueError(f"{value!r} is not a size; allowed: {ALLOWED_FORMS}")
        number, unit = match.groups()
        exact = Fraction(number) * _UNITS[unit]  # exact: a float would round a long byte count
        if exact.denominator != 1:
            raise ValueError(f"{value!r} is not a whole number of bytes")
        return cls(int(exact))

    def __add__(self, other: ByteSize) -> ByteSize:
        return ByteSize(self.bytes + other.bytes)

    def __sub__(self, other: ByteSize) -> ByteSize:
        return ByteSize(self.bytes - other.bytes)

    def __mul__(self, factor: int) -> ByteSize:
        return ByteSize(self.bytes * factor)

    __rmul__ = __mul__

    def ceil_to(self, unit: int) -> ByteSize:
        """Round up to a whole multiple of `unit` bytes (e.g. GiB for memory requests)."""
        return ByteSize(math.ceil(self.bytes / unit) * unit)

    def floor_to(self, unit: int) -> ByteSize:
        """Round down to a whole multiple of `unit` bytes (e.g. GiB for what is available)."""
        return ByteSize(self.bytes // unit * unit)

    def quantity(self) -> str:
        """The Kubernetes quantity: the first unit of _QUANTITY_SUFFIXES that divides exactly, else bytes."""
        for suffix, size in _QUANTITY_SUFFIXES:
            if self.bytes and self.bytes % size == 0:
                return f"{self.bytes // size}{suffix}"
        return str(self.bytes)

    def human(self) -> str:
        """Readable form for summaries (and config round trips): MiB and up, then decimal GB, then KiB."""
        for suffix, size in (*_BINARY_SUFFIXES[:3], ("G", GB), ("Ki", KiB)):
            if self.bytes and self.bytes % size == 0:
                return f"{self.bytes // size} {suffix}B"
        return f"{self.bytes} B"

    def readable(self) -> str:
        """A size for a planner to read (not to parse back): TiB from 1 TiB, GiB from 1 GiB, to at most two
        decimals ("5.87 TiB", "300 GiB", not "6159872 MiB"); smaller sizes as `human`."""
        for suffix, size in (("TiB", TiB), ("GiB", GiB)):
            if self.bytes >= size:
                return f"{self.bytes / size:.2f}".rstrip("0").rstrip(".") + f" {suffix}"
        return self.human()

    def __str__(self) -> str:
        return self.human()

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls.parse,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda v: v.human().replace(" ", "")),
        )
