"""summary.md of a cluster stack (`layer: cluster`): what runs where, what it exports, which endpoint serves
which model (its serving stacks, each a route to its InferencePool)."""

from __future__ import annotations

from components.catalog import versions
from stacks.config.cluster_facts import CLUSTER_OUTPUT, KUBECONFIG_OUTPUT, ClusterOutputs
from stacks.config.providers import PROVIDERS
from stacks.planning.cluster_plan import ClusterPlan
from stacks.review.cost_summary import cost_lines


def _pools(outputs: ClusterOutputs) -> list[str]:
    rows = [
        "| pool | machine | accelerator | devices per node | host memory | nodes | selected by |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, pool in outputs.node_pools.items():
        labels = ", ".join(f"`{k}={v}`" for k, v in sorted(pool.labels.items())) or "(none)"
        nodes = pool.node_count * pool.slices
        rows.append(
            f"| {key} | {pool.machine_type or 'described'} | {pool.accelerator or '?'} |"
            f" {pool.accelerators_per_node or '?'} | {pool.host_memory or '?'} | {nodes} | {labels} |"
        )
    return rows


def cluster_summary(cluster_plan: ClusterPlan, stack: str, servings: list[tuple[str, str, str]]) -> str:
    """`servings`: the serving stacks of this repo that reference this one, as (stack, namespace, model)."""
    config, outputs = cluster_plan.config, cluster_plan.outputs
    lines = [
        f"# {stack}: cluster stack",
        "",
        config.description or "The cluster layer: no model runs here; serving stacks run on it.",
        "",
        f"- Cluster: `{outputs.provider}`"
        + (f" `{outputs.name}`" if PROVIDERS[outputs.provider].creates else "")
        + f", platform `{outputs.platform}`.",
        f"- InferencePool CRDs: Gateway API Inference Extension {outputs.gaie_version}, applied once for every"
        " serving stack (a serving stack applies none).",
        "- KEDA: "
        + (
            ("installed" if PROVIDERS[outputs.provider].creates else "a prerequisite the cluster has")
            + " for serving stacks that autoscale."
            if outputs.keda
            else "none (autoscaling.enabled off): its serving stacks cannot autoscale."
        ),
    ]
    storage = outputs.storage
    if storage is None:
        lines.append("- Shared file system: none (serving stacks with the filesystem tier name their own class).")
    else:
        bound = f", its volume reserved for a claim in `{storage.claim_namespace}`" if storage.claim_namespace else ""
        lines.append(
            f"- Shared file system: `{storage.backend}`, {storage.size}, class `{storage.storage_class}`{bound}."
        )
    mirror = outputs.mirror
    lines.append(
        f"- Registry mirror: {mirror.cloud} in {mirror.region} for {', '.join(mirror.registries)}."
        if mirror is not None
        else "- Registry mirror: none; images come from the upstream registries."
    )
    lines += ["", "## Node pools", "", *_pools(outputs), ""]
    lines += cost_lines(cluster_plan.cost)
    front = cluster_plan.gateway
    lines += ["## Gateway", ""]
    if front is None:
        lines.append("None: each serving stack is reached at its own router endpoint.")
    else:
        meta = front.gateway["metadata"]
        lines.append(
            f"`{meta['namespace']}/{meta['name']}`, class `{front.choice.name}` ({front.choice.prerequisite});"
            " it admits the HTTPRoutes of namespaces labelled `llm-d.ai/gateway="
            f"{meta['name']}`."
        )
        lines.append(
            f"Body-based routing {versions.BBR_VERSION}: the body's `model` picks the route."
            if front.bbr_values is not None
            else "Body-based routing off: clients set `X-Gateway-Model-Name` themselves."
        )
        lines += ["", "| model | serving stack | namespace |", "|---|---|---|"]
        lines += [f"| {model} | {name} | {namespace} |" for name, namespace, model in servings] or [
            "| (none in this repo yet) | | |"
        ]
    lines += [
        "",
        "## Exports",
        "",
        f"- `{CLUSTER_OUTPUT}`: the facts above, which each serving stack plans from (written beside this file"
        " as cluster-outputs.json).",
        f"- `{KUBECONFIG_OUTPUT}` (a secret): the serving stacks' Kubernetes provider reads it through a"
        " StackReference.",
        "",
    ]
    return "\n".join(lines)
