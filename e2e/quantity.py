"""Kubernetes quantities as numbers, for comparing what the API server returns and summing pod requests."""

from __future__ import annotations

import re
from typing import Any

_QUANTITY = re.compile(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?")
_SUFFIX = {
    None: 1,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity's value (the API server rewrites 0.5 as 500m and 1024Mi as 1Gi), else None."""
    match = _QUANTITY.fullmatch(str(value))
    if match is None:
        return None
    return float(match[1]) * _SUFFIX[match[2]]
