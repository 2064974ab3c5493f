"""summary.md: what runs where, and every derived size with the numbers it came from."""

from __future__ import annotations

from stacks.offline import Recording
from stacks.plan import StackPlan


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def summary(stack_plan: StackPlan, stack: str, recording: Recording) -> str:
    config, server, sizing = stack_plan.config, stack_plan.model_server, stack_plan.sizing
    cache = config.cache
    pool = stack_plan.inference_pool["spec"]
    lines = [
        f"# {stack}: llm-d tiered prefix cache",
        "",
        config.description or "",
        "",
        "This is a render of desired state under the Pulumi mock engine, not a cloud preview.",
        "",
        "## What runs where",
        "",
        *_table(
            ("what", "value"),
            [
                ("cluster", f"{config.cluster.provider} (context: {config.cluster.context or 'current'})"),
                ("namespace", config.namespace),
                ("model", cache.model),
                ("accelerator", f"{server.accelerator.key} ({server.accelerator.reference_hardware})"),
                ("model server", f"{cache.server}, image `{server.image}`"),
                ("connector / tier", f"{cache.connector} / {cache.tier.variant}"),
                (
                    "model-server pods",
                    f"Deployment `{server.deployment_name}`: {server.replicas} x TP={server.tensor_parallelism}"
                    f" ({server.replicas * server.tensor_parallelism} x `{server.accelerator.device_resource}`)",
                ),
                ("node pool", cache.node_pool or "any schedulable node"),
                (
                    "router",
                    f"chart `{config.router.chart}` {config.router.version}, release `{config.router.release}`",
                ),
                ("router endpoint", str(recording.outputs.get("routerEndpoint", ""))),
                (
                    "InferencePool (created by the chart)",
                    f"`{config.router.release}`: selector {pool['selector']['matchLabels']},"
                    f" target ports {[p['number'] for p in pool['targetPorts']]}",
                ),
                ("GAIE CRDs", config.router.gaie_version),
                (
                    "monitoring",
                    config.monitoring.provider if config.monitoring.enabled else "off",
                ),
            ],
        ),
        "",
        "## Cache sizing",
        "",
        *_table(("quantity", "value", "from"), [(d.name, d.value, d.formula) for d in sizing.derivations]),
        "",
        "## Resources",
        "",
        f"{len(recording.resources)} Pulumi resources; `resources.json` lists their inputs and dependencies.",
        "",
    ]
    return "\n".join(lines)
