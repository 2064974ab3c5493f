"""What the serving stacks of one cluster stack must not share: each alone loads, plans and passes `check`,
and together the second `pulumi up` fails (an object another stack owns already exists) or the Gateway
cannot tell their routes apart. One line per clash, naming the stacks (`./run check` over the repo)."""

from __future__ import annotations

from collections.abc import Mapping

from components.catalog import labels
from stacks.config.providers import provider_of
from stacks.planning.plan import StackPlan


def _owned(stack_plan: StackPlan) -> set[tuple[str, str]]:
    """The cluster-wide names a serving stack creates: its namespace, the router chart's ClusterRole and
    binding, and every object of its workloads without a namespace."""
    config = stack_plan.config
    rbac = labels.router_cluster_rbac_name(config.router.release, config.namespace)
    out = {("Namespace", config.namespace), ("ClusterRole", rbac), ("ClusterRoleBinding", rbac)}
    for workload in stack_plan.workloads.values():
        for manifest in workload.manifests:
            meta = manifest.get("metadata") or {}
            if "namespace" not in meta and manifest.get("kind") != "Namespace":
                out.add((str(manifest.get("kind")), str(meta.get("name"))))
    return out


def _both(names: list[str]) -> str:
    """`a and b both`, `a, b and c all`."""
    if len(names) == 2:
        return f"{names[0]} and {names[1]} both"
    return ", ".join(names[:-1]) + f" and {names[-1]} all"


def clashes(plans: Mapping[str, StackPlan]) -> list[str]:
    """One line per name two serving stacks of one cluster stack would both create, and per model two of
    them serve behind its Gateway; `plans` may hold any stacks' plans (the others are skipped)."""
    groups: dict[str, list[tuple[str, StackPlan]]] = {}
    for name, stack_plan in sorted(plans.items()):
        reference = stack_plan.config.cluster.stack
        if provider_of(stack_plan.config).reads_cluster_stack and reference is not None:
            groups.setdefault(reference, []).append((name, stack_plan))
    out: list[str] = []
    for reference, members in sorted(groups.items()):
        cluster = reference.rsplit("/", 1)[-1]
        owners: dict[tuple[str, str], list[str]] = {}
        models: dict[str, list[str]] = {}
        for name, stack_plan in members:
            for owned in _owned(stack_plan):
                owners.setdefault(owned, []).append(name)
            outputs = stack_plan.config.cluster.outputs
            if outputs is not None and outputs.gateway is not None:
                models.setdefault(stack_plan.sizing.model.name, []).append(name)
        for (kind, object_name), names in sorted(owners.items()):
            if len(names) > 1:
                out.append(
                    f"cluster stack {cluster}: {_both(names)} create {kind} {object_name} (the second"
                    " `pulumi up` fails: it exists); give each serving stack its own namespace and router.release"
                )
        for model, names in sorted(models.items()):
            if len(names) > 1:
                out.append(
                    f"cluster stack {cluster}: {_both(names)} serve {model} behind its Gateway (a request"
                    " for it would have two routes); serve each model from one stack"
                )
    return out
