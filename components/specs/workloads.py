"""A workload of the stack as plain data: what the plan decides for one group of objects declared together.

The plan holds its workloads as an ordered map (`StackPlan.workloads`, in declaration order). Each plan
pass is one loop over it (the mirror, the await budgets, the rollouts, the NetworkPolicies), and
`CacheStack` declares each as one generic component under the workload's own type token, after what it
`needs`. A new workload is one builder that returns a `Workload`; no pass and no component names it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from components.manifest import Manifest
from components.specs.startup import AwaitBudget
from components.specs.workload_type import WorkloadType as WorkloadType  # its record, named here too

if TYPE_CHECKING:  # the network spec imports nothing of this module; its traffic type is only annotated here
    from components.specs.network import StackTraffic
    from components.specs.servers.base import ServerSpec

# What a workload may need besides other workloads: the stack's own objects (created before any
# workload) and CLUSTER, what the model servers need from outside the stack (their node pool, the tier's
# storage backend, the cluster's add-ons).
NAMESPACE = "namespace"
HF_TOKEN = "hf-token"
ROUTER = "router"
CLUSTER = "cluster"
STACK_RESOURCES = (NAMESPACE, HF_TOKEN, ROUTER, CLUSTER)

# How a template change reaches a workload's pods:
#   strategy      the rollout the plan chooses for the model servers (surge, unavailability), with a
#                 disruption budget beside the workload;
#   node-by-node  a per-node daemon, one node at a time (a node's cache is down while its pod restarts);
#   all-nodes     every node at once (nothing is lost: the image pre-pull);
#   default       the kind's own default;
#   none          nothing rolls (claims, Jobs, monitors).
# Every kind but `none` carries a checksum of the ConfigMaps its pods read, so a changed config rolls it.
Rolls = Literal["strategy", "node-by-node", "all-nodes", "default", "none"]

# Where the summary lists a workload's await budget, in the order `pulumi up` meets them: what the model
# servers load from (their images, their weights), the model servers, what runs beside and after them.
Phase = Literal["warm", "serve", "beside"]
PHASES: tuple[Phase, ...] = ("warm", "serve", "beside")


@dataclass(frozen=True)
class Await:
    """What Pulumi waits for: the objects of `kind` with `budget` (None: the manifests carry their budget
    already), on a readiness condition where the kind has no built-in await."""

    budget: AwaitBudget
    kind: str | None
    phase: Phase
    wait_for: str | None = None


@dataclass(frozen=True)
class Workload:
    type: WorkloadType
    manifests: list[Manifest]  # in dependency order: what a workload reads comes first
    needs: tuple[str, ...] = ()  # keys of workloads declared before it, or STACK_RESOURCES
    rolls: Rolls = "none"
    awaited: Await | None = None
    # Its NetworkPolicy, from the stack's traffic (known once every workload is built), and where it goes
    # in the manifests (first, unless a namespace it lives in comes before it).
    ingress: Callable[[StackTraffic], Manifest] | None = None
    ingress_at: int = 0
    server: ServerSpec | None = None  # a model-server role
    api_access: bool = False  # its pods call the Kubernetes API: hardening leaves them their token
    holds_cpu_tier: bool = False  # a per-node daemon holding the CPU tier: a model-server restart keeps it
    rollout: str = ""  # how a rollout of it goes, in the summary's words (the model servers': the plan's)
    key_suffix: str = ""  # a second workload of the same type: `<key>-<suffix>` (the prefill role)
    outputs: Mapping[str, str] = dataclasses.field(default_factory=dict)  # registered beside its objects
    # By kind, the fields another controller owns once the object exists (KEDA's HPA: `spec.replicas`),
    # which Pulumi then leaves as they are.
    ignore_changes: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.type.key}-{self.key_suffix}" if self.key_suffix else self.type.key

    def with_manifests(self, manifests: list[Manifest]) -> Workload:
        return dataclasses.replace(self, manifests=manifests)


def ordered(workloads: list[Workload]) -> dict[str, Workload]:
    """The map in declaration order; every need names a workload declared before it or a stack resource."""
    out: dict[str, Workload] = {}
    for w in workloads:
        if w.key in out:
            raise ValueError(f"two workloads named {w.key}")
        unknown = [n for n in w.needs if n not in out and n not in STACK_RESOURCES]
        if unknown:
            raise ValueError(f"workload {w.key} needs {unknown}, not declared before it")
        out[w.key] = w
    return out
