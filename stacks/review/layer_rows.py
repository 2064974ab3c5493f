"""The summary's rows on where a stack runs: its cluster (its own, an existing one, or a cluster stack's) and,
behind a cluster stack's Gateway, which endpoint serves its model."""

from __future__ import annotations

from stacks.config import StackConfig
from stacks.config.providers import provider_of


def cluster_row(config: StackConfig) -> str:
    cluster, provider = config.cluster, provider_of(config)
    if provider.reads_cluster_stack:
        return f"the cluster stack `{cluster.stack}`'s (StackReference), platform {cluster.effective_platform}"
    return f"{cluster.provider}, platform {cluster.effective_platform}" + (
        f" (context: {cluster.context or 'current'})" if provider.takes_kubeconfig else f", `{cluster.name}`"
    )


def gateway_rows(config: StackConfig, model: str) -> list[tuple[str, str]]:
    """A serving stack behind its cluster stack's Gateway: which endpoint serves which model."""
    outputs = config.cluster.outputs
    facts = outputs.gateway if outputs is not None else None
    if facts is None:
        return []
    how = "the body's `model` (body-based routing)" if facts.body_routing else "the `X-Gateway-Model-Name` header"
    return [
        (
            "Gateway",
            f"`{facts.namespace}/{facts.name}` ({facts.class_name}) routes requests for `{model}`, picked by {how},"
            f" through HTTPRoute `{config.namespace}/{config.router.release}` to InferencePool"
            f" `{config.router.release}`",
        )
    ]
