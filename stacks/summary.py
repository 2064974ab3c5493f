"""summary.md: what runs where, and every derived size with the numbers it came from."""

from __future__ import annotations

from stacks.offline import Recording
from stacks.plan import StackPlan


def _table(header: tuple[str, ...], rows: list[tuple[str, str]] | list[tuple[str, str, str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def summary(stack_plan: StackPlan, stack: str, recording: Recording) -> str:
    config, server, sizing = stack_plan.config, stack_plan.model_server, stack_plan.sizing
    pool = stack_plan.inference_pool
    router_values = stack_plan.router_values["router"]
    workload = stack_plan.model_server_manifests[-1]
    pods = f"{server.replicas} x {server.group_size} hosts" if server.group_size > 1 else str(server.replicas)
    device = server.accelerator.device_resource or f"DRA {server.accelerator.dra_device_class}"
    rows: list[tuple[str, str]] = [
        (
            "cluster",
            f"{config.cluster.provider}, platform {config.cluster.effective_platform}"
            f" (context: {config.cluster.context or 'current'})",
        ),
        ("namespace", config.namespace),
        ("model", server.model.name),
        ("accelerator", f"{server.accelerator.key} ({server.accelerator.reference_hardware})"),
        ("model server", f"{server.server}, image `{server.image}`"),
        ("connector / tier / hosts", f"{server.connector} / {server.variant} / {server.host_type}"),
        (
            "model-server pods",
            f"{workload['kind']} `{workload['metadata']['name']}`: {pods} x TP={server.tensor_parallelism}"
            f" ({server.devices} x `{device}` per pod)",
        ),
        ("node pool", config.cache.node_pool or "any schedulable node"),
        ("router", f"chart `{config.router.chart}` {config.router.version}, release `{config.router.release}`"),
        ("router endpoint", str(recording.outputs.get("routerEndpoint", ""))),
        (
            "InferencePool (created by the chart)",
            f"`{config.router.release}`: selector {pool['spec']['selector']['matchLabels']},"
            f" target ports {[p['number'] for p in pool['spec']['targetPorts']]}"
            if pool
            else f"none: the EPP selects {router_values['modelServers']['matchLabels']} by label",
        ),
        ("GAIE CRDs", config.router.gaie_version),
    ]
    if stack_plan.storage_manifests:
        claim = stack_plan.storage_manifests[0]
        storage_class = claim["spec"].get("storageClassName", "cluster default")
        rows.append(
            (
                "filesystem tier",
                f"claim `{claim['metadata']['name']}` ReadWriteMany"
                f" {claim['spec']['resources']['requests']['storage']}, StorageClass {storage_class}",
            )
        )
    if stack_plan.mooncake_master:
        client = "and the Mooncake Client DaemonSet" if stack_plan.mooncake_client else "(embedded pool)"
        rows.append(("MooncakeStore", f"Mooncake Master in namespace `mooncake` {client}"))
    if len(stack_plan.roles) > 1:
        rows.append(
            (
                "P/D roles",
                ", ".join(f"`{r.manifests[-1]['metadata']['name']}` ({r.spec.role})" for r in stack_plan.roles),
            )
        )
    if stack_plan.lmcache_server:
        lm = config.lmcache
        rows.append(
            (
                "LMCache server",
                f"DaemonSet `lmcache-engine` {lm.version} on every GPU node, mode {lm.mode},"
                f" isolated IPC {lm.isolated_ipc}, test mode {lm.test_mode}",
            )
        )
    if "tokenizer" in router_values:
        rows.append(("router tokenizer", f"sidecar for {router_values['tokenizer']['modelName']} (token-producer)"))
    rows.append(("monitoring", config.monitoring.provider if config.monitoring.enabled else "off"))
    lines = [
        f"# {stack}: llm-d tiered prefix cache",
        "",
        config.description or "",
        "",
        "This is a render of desired state under the Pulumi mock engine, not a cloud preview.",
        "",
        "## What runs where",
        "",
        *_table(("what", "value"), rows),
        "",
        "## Cache sizing",
        "",
        *_table(("quantity", "value", "from"), [(d.name, d.value, d.formula) for d in sizing.derivations]),
        "",
        "## Metrics to watch",
        "",
        *(f"- {m}" for m in stack_plan.metrics_to_watch),
        *(
            ["", f"Alert rules: {', '.join(a.name for a in stack_plan.alerts)}."]
            if config.monitoring.enabled and config.monitoring.provider == "prometheus-operator"
            else []
        ),
        "",
        "## Resources",
        "",
        f"{len(recording.resources)} Pulumi resources; `resources.json` lists their inputs and dependencies.",
        "",
    ]
    return "\n".join(lines)
