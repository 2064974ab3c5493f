"""A workload's identity: its component type token and key. Its own module, so the spec modules that only
name their workload's type (the daemons', the model cache's) import a record and not the workload map, which
carries the model servers' spec."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkloadType:
    """The component type token (part of every URN under it: changing one needs an alias) and the
    default key (the component's name is `<stack>-<key>`)."""

    token: str
    key: str
