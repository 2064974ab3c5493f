"""The shared filesystem tier as the plan sized it (`stacks/planning/tier_capacity.py` derives it): the evictor's
watermarks against the store rate, whether an evictor manages it, and its backend."""

from __future__ import annotations

from dataclasses import dataclass

from components.formulas.shared_tier_capacity import Capacity


@dataclass(frozen=True)
class SharedTier:
    """The filesystem tier's claim against its store rate: the evictor's watermarks and the time to fill."""

    capacity: Capacity
    managed: bool  # False: storage.evictor.mode off (the claim fills, or grows, unchecked)
    backend: str  # gcp-lustre | aws-efs | existing
