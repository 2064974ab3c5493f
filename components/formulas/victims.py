"""Which pods a scale-in removes: the ReplicaSet controller's order among a workload's ready pods, and the deletion
costs the cache-value annotator writes (each pod's rank by the prompt tokens it served from its caches).

The controller deletes, among ready running pods, in the order of kubernetes' `ActivePodsWithRanks.Less`
(pkg/controller/controller_utils.go, v1.34; `LogarithmicScaleDown` on, the default since 1.22):
1. the lower `controller.kubernetes.io/pod-deletion-cost` first;
2. the pod with more ready pods of the set on its node first ("doubled up");
3. the pod ready for the shorter time first, compared as floor(log2(nanoseconds ready)), ties by UID;
4. the pod whose container restarted more first;
5. the newer pod first, compared as in 3.
Without an annotator every cost is 0 and the order is 2, 3, 4, 5: the newest pods go, whatever their caches hold.

Stdlib only: the annotator's ConfigMap carries this module beside its own (components/specs/cache_annotator.py).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
LOWEST_COST = -(2**31)  # int32's least (the annotation's range): what a pod that does not answer gets

# `autoscaling.scale_in`: the controller's own order, or the annotator's costs first.
ScaleIn = Literal["newest", "cache-value"]
# The victim choices a replay compares: the two above and a uniformly random one.
Victims = Literal["newest", "random", "cache-value"]


def deletion_costs(values: Mapping[str, float | None]) -> dict[str, int]:
    """Each pod's deletion cost from its cache value (None: it did not answer): the dense rank of the value among
    the pods that answered, 0 the least, so equal values tie (the controller's own order decides between them) and
    a cost changes only when the order does (Kubernetes asks that the annotation not follow a metric's every move:
    each change is a pod update on the API server); a pod that did not answer gets `LOWEST_COST`, below all."""
    ranks = {value: rank for rank, value in enumerate(sorted({v for v in values.values() if v is not None}))}
    return {name: LOWEST_COST if value is None else ranks[value] for name, value in values.items()}


@dataclass(frozen=True)
class Candidate:
    """One ready pod of the workload, as the controller compares it."""

    name: str
    uid: str
    ready_s: float  # seconds since it turned ready
    age_s: float  # seconds since it was created
    cost: int = 0  # its deletion cost (0: none written)
    colocated: int = 1  # ready pods of the set on its node, itself included
    restarts: int = 0


def _log_rank(seconds: float) -> int:
    """`logarithmicRankDiff`'s rank: floor(log2) of the duration in nanoseconds (-1 for none)."""
    nanoseconds = seconds * 1e9
    return int(math.log2(nanoseconds)) if nanoseconds > 0 else -1


def deletion_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates in the order the ReplicaSet controller deletes them (the module's list, 1 to 5)."""

    def before(a: Candidate, b: Candidate) -> int:
        if a.cost != b.cost:
            return -1 if a.cost < b.cost else 1
        if a.colocated != b.colocated:
            return -1 if a.colocated > b.colocated else 1
        for mine, theirs in ((a.ready_s, b.ready_s), (a.age_s, b.age_s)):
            if mine != theirs:  # 3 (and 5, when the ready times are equal and the restarts too)
                rank = _log_rank(mine) - _log_rank(theirs)
                return rank if rank else (-1 if a.uid < b.uid else 1)
            if a.restarts != b.restarts:  # 4, reached only when the ready times are equal
                return -1 if a.restarts > b.restarts else 1
        return 0

    return sorted(candidates, key=functools.cmp_to_key(before))


def victims(
    candidates: Sequence[Candidate],
    count: int,
    choice: Victims,
    values: Mapping[str, float | None] | None = None,
    seed: int = 0,
) -> list[str]:
    """The names of the `count` pods a scale-in removes: `newest`, the controller's order with no cost written;
    `cache-value`, with each pod's cost from its cache value (`values`, by name; `deletion_costs`); `random`, a
    uniform draw (seeded: a replay is repeatable)."""
    if not 0 <= count <= len(candidates):
        raise ValueError(f"count must be within 0..{len(candidates)} candidates, got {count}")
    if choice == "random":
        return random.Random(seed).sample([c.name for c in candidates], count)
    if choice == "cache-value":
        if values is None:
            raise ValueError("cache-value needs each candidate's cache value")
        costs = deletion_costs({c.name: values.get(c.name) for c in candidates})
        candidates = [replace(c, cost=costs[c.name]) for c in candidates]
    else:
        candidates = [replace(c, cost=0) for c in candidates]
    return [c.name for c in deletion_order(candidates)[:count]]
