"""summary.md: what runs where, and every derived size with the numbers it came from."""

from __future__ import annotations

from collections.abc import Sequence

from components.formulas.payoff import SUFFIX_TOKENS
from components.specs import storage
from components.specs.clusters import PoolSpec
from components.specs.payoff_table import gbps, seconds
from components.specs.servers import ServerSpec
from components.units import ByteSize, GiB, MiB
from stacks.config.backend_choice import backend_of
from stacks.config.providers import provider_of
from stacks.planning.hardware import Fit
from stacks.planning.plan import StackPlan
from stacks.review import cold_start_table
from stacks.review.artifact_rows import images_row, model_cache_row
from stacks.review.autoscaling_summary import autoscaling_lines
from stacks.review.capacity_table import capacity_lines
from stacks.review.cost_summary import cost_lines, objective_lines
from stacks.review.layer_rows import cluster_row, gateway_rows
from stacks.review.offline import Recording
from stacks.review.pd_table import pd_lines_of
from stacks.review.routing_summary import prefix_routing_rows, sizing_rows
from stacks.review.throughput_summary import throughput_lines
from stacks.review.tier_capacity_summary import tier_capacity_lines
from stacks.review.tier_curve_table import tier_curve_lines

LOAD_ALERT = "TieredCacheLoadTooSlow"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _payoff(stack_plan: StackPlan) -> list[str]:
    """Break-even load bandwidth, each tier's expected reload, hit against miss by prefix length, and what
    a slow tier still buys."""
    payoff = stack_plan.payoff
    n = payoff.prefix_tokens
    rows = [(d.name, d.value, d.formula) for d in payoff.rows]
    threshold = next((a for a in stack_plan.alerts if a.name == LOAD_ALERT), None)
    if threshold is not None:
        configured = stack_plan.config.monitoring.alerts.min_load_bandwidth
        value = configured.bytes if configured else round(payoff.break_even_per_device)
        rows.append(
            (
                f"`{LOAD_ALERT}` threshold",
                f"{value} B/s ({gbps(value)})",
                "stack config `monitoring.alerts.min_load_bandwidth`"
                if configured
                else f"the break-even per device above, at {n:,} tokens: vLLM sums load bytes and load time over"
                " the pod's ranks, so their ratio is one device's bandwidth",
            )
        )
    alert = next(at for at in payoff.lengths if at.prefix_tokens == n)
    verdicts = [
        f"- At {n:,}-token prefixes the {t.tier} reloads slower than recompute: it still saves accelerator time"
        " (the prefill FLOPs it skips) and holds more than HBM, but it does not shorten time to first token."
        if t.beats(payoff.break_even) is False
        else f"- At {n:,}-token prefixes the {t.tier} reloads faster than recompute: a hit is"
        f" {_speedup(alert.hit_speedup[i])} than a miss by this model, so it can shorten time to first token."
        for i, t in enumerate(payoff.tiers)
        if t.bandwidth is not None
    ]
    return [
        *_table(("quantity", "value", "from"), rows),
        "",
        *_by_length(stack_plan),
        "",
        *verdicts,
        *(["", "Sources:"] if verdicts else ["Sources:"]),
        *(f"- {s}" for s in payoff.sources),
    ]


def _speedup(speedup: float | None) -> str:
    if speedup is None:
        return "unknown"
    return f"{speedup:.1f}x faster" if speedup >= 1 else f"{1 / speedup:.1f}x slower"


def _by_length(stack_plan: StackPlan) -> list[str]:
    """Per prefix length: its recompute, and per tier its reload and a hit against a miss."""
    payoff = stack_plan.payoff
    tiers = [t for t in payoff.tiers if t.bandwidth is not None]
    header = (
        "prefix",
        "recompute (per token)",
        "break-even per pod",
        *(h for t in tiers for h in (f"reload from the {t.tier}", "hit vs miss")),
    )
    rows = [
        (
            f"{at.prefix_tokens:,} tokens" + (" (alert)" if at.prefix_tokens == payoff.prefix_tokens else ""),
            f"{seconds(at.recompute_seconds)} ({seconds(at.seconds_per_token)})",
            gbps(at.break_even),
            *(
                cell
                for i, t in enumerate(payoff.tiers)
                if t.bandwidth is not None
                for cell in (seconds(at.reload_seconds[i] or 0), _speedup(at.hit_speedup[i]))
            ),
        )
        for at in payoff.lengths
    ]
    return [
        f"By prefix length (a hit reloads the prefix and prefills a {SUFFIX_TOKENS}-token suffix on top of it; a"
        " miss prefills both; lengths capped by the model's context). A hit's speedup is the upper end: measured"
        " on one H200, hits gained about half of what this model gives (tests/test_payoff_measurement.py).",
        "",
        *_table(header, rows),
    ]


def summary(stack_plan: StackPlan, stack: str, recording: Recording) -> str:
    config = stack_plan.config
    rows = _core_rows(stack_plan, recording) + _optional_rows(stack_plan) + _pool_rows(stack_plan.pools)
    if stack_plan.fit is not None:
        rows.append(_fit_row(stack_plan.fit, stack_plan.tier))
    if backend_of(config).created:
        rows.append(("filesystem tier backend", config.storage.backend))
    rows.append(("monitoring", config.monitoring.provider if config.monitoring.enabled else "off"))
    rows.append(_network_row(stack_plan, recording))
    derivations = [*stack_plan.hbm.rows(), *sizing_rows(stack_plan)]
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
        *_table(("quantity", "value", "from"), derivations),
        "",
        "## Payoff",
        "",
        *_payoff(stack_plan),
        "",
        *pd_lines_of(stack_plan),
        *(
            capacity_lines(stack_plan.capacity, config.cache.replicas == "auto")
            if stack_plan.capacity is not None
            else []
        ),
        *(
            tier_curve_lines(stack_plan.tier_curve, config.cache.tier.cpu == "auto")
            if stack_plan.tier_curve is not None
            else []
        ),
        *tier_capacity_lines(stack_plan),
        *throughput_lines(stack_plan.cost.throughput if stack_plan.cost is not None else None),
        *cost_lines(stack_plan.cost),
        *objective_lines(stack_plan.objective, took=True),
        *_startup(stack_plan),
        "## How a template change rolls",
        "",
        *(f"- {line}" for line in _rollout_lines(stack_plan)),
        "",
        *autoscaling_lines(stack_plan),
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


def _startup(stack_plan: StackPlan) -> list[str]:
    """The cold start table and the await budgets it gives each workload."""
    cases = cold_start_table.rows(stack_plan)
    budgets = [(f"`{b.workload}`", b.describe()) for b in stack_plan.budgets]
    return [
        "## Cold start",
        "",
        "One model-server pod, modeled (components/catalog/startup_figures.py and weight_loading.py give each figure's"
        " source): the first pod finds the compile cache empty; later pods and restarts find it filled.",
        "",
        *_table(("case", "image", "weights", "pull", "fetch", "load", "compile", "total"), cases),
        "",
        "## Await budgets",
        "",
        "How long `pulumi up` waits for each workload before it fails (`pulumi.com/timeoutSeconds`),"
        " from the cold-start model of one pod (image pull on a new node, weights, load, compile) and a margin:",
        "",
        *_table(("workload", "budget"), budgets),
        "",
    ]


def _pool_shape(stack_plan: StackPlan, spec: ServerSpec) -> str:
    """A `cache.disaggregation` pool's shape: pods, engines a pod, devices, the CPU tier a pod holds."""
    if stack_plan.stack.choice.disaggregation is None:
        return ""
    return (
        f": {spec.replicas} pods x {spec.data_parallelism} engines x TP={spec.tensor_parallelism} on"
        f" {spec.accelerator.key}, CPU tier {spec.sizing.cpu_tier_per_pod.human()} a pod"
    )


def _core_rows(stack_plan: StackPlan, recording: Recording) -> list[tuple[str, str]]:
    """What every stack has: cluster, model server, router."""
    config, server = stack_plan.config, stack_plan.model_server
    pool = stack_plan.inference_pool
    router_values = stack_plan.router_values["router"]
    workload = stack_plan.model_server_manifests[-1]
    pods = f"{server.replicas} x {server.group_size} hosts" if server.group_size > 1 else str(server.replicas)
    device = server.accelerator.device_resource or f"DRA {server.accelerator.dra_device_class}"
    return [
        ("cluster", cluster_row(config)),
        ("namespace", config.namespace),
        ("model", server.model.name),
        ("accelerator", f"{server.accelerator.key} ({server.accelerator.reference_hardware})"),
        ("model server", f"{server.server}, image `{server.image}`"),
        ("connector / tier / hosts", f"{config.cache.connector} / {server.variant} / {server.host_type}"),
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
        (
            "GAIE CRDs",
            config.router.gaie_version
            + (", applied by the cluster stack" if provider_of(config).reads_cluster_stack else ""),
        ),
        *gateway_rows(config, server.model.name),
    ]


def _optional_rows(stack_plan: StackPlan) -> list[tuple[str, str]]:
    """What some stacks add: the filesystem claim, P/D roles, the connector's daemons' rows, a tokenizer."""
    rows: list[tuple[str, str]] = []
    if stack_plan.manifests(storage.WORKLOAD):
        claim = stack_plan.manifests(storage.WORKLOAD)[0]
        storage_class = claim["spec"].get("storageClassName", "cluster default")
        rows.append(
            (
                "filesystem tier",
                f"claim `{claim['metadata']['name']}` ReadWriteMany"
                f" {claim['spec']['resources']['requests']['storage']}, StorageClass {storage_class}",
            )
        )
    rows.append(("model cache", model_cache_row(stack_plan)))
    rows.append(("images", images_row(stack_plan)))
    if len(stack_plan.roles) > 1:
        rows.append(
            (
                "P/D roles",
                ", ".join(
                    f"`{r.manifests[-1]['metadata']['name']}` ({r.spec.role}{_pool_shape(stack_plan, r.spec)})"
                    for r in stack_plan.roles
                ),
            )
        )
    stack = stack_plan.stack
    rows += stack.connector.summary_rows(stack.choice, stack_plan.sizing)  # its daemons' (Mooncake has no P/D)
    router_values = stack_plan.router_values["router"]
    if "tokenizer" in router_values:
        rows.append(("router tokenizer", f"sidecar for {router_values['tokenizer']['modelName']} (token-producer)"))
    rows += prefix_routing_rows(stack_plan)
    return rows


def _pool_rows(pools: list[PoolSpec]) -> list[tuple[str, str]]:
    """One row per created node pool (a multi-host TPU pool's slices together)."""
    by_key: dict[str, list[PoolSpec]] = {}
    for pool_spec in pools:
        by_key.setdefault(pool_spec.key, []).append(pool_spec)
    rows = []
    for key, slices in by_key.items():
        first = slices[0]
        count = f"{len(slices)} slices x {first.node_count} hosts" if len(slices) > 1 else f"{first.node_count} nodes"
        rows.append(
            (
                f"node pool `{key}` (created)",
                f"{first.machine.key}: {count}, {first.machine.devices_per_node} x {first.machine.accelerator}"
                f" per node, {first.machine.host_memory.human()} host memory"
                + (", spot" if first.spot else "")
                + (f", reservation {first.reservation}" if first.reservation else ""),
            )
        )
    return rows


def _fit_row(fit: Fit, tier: ByteSize) -> tuple[str, str]:
    """With `cache.tier.cpu: auto`, the size it chose where it filled the nodes; where a workload's curve chose a
    smaller one, the tier curve's section names it (once) and this row says what the nodes hold."""
    # GiB, unless rounding the request up and the allocatable down would show a fit as an overflow.
    unit = GiB
    if fit.allocatable and fit.per_node.ceil_to(GiB).bytes > fit.allocatable.floor_to(GiB).bytes:
        unit = MiB
    allocatable = f" of {fit.allocatable.floor_to(unit).quantity()} allocatable" if fit.allocatable else ""
    auto = ""
    if fit.largest_tier == tier:
        auto = f"; `cache.tier.cpu: auto` chose {tier.human()}"
    elif fit.largest_tier is not None:
        auto = f"; the nodes hold a CPU tier of up to {fit.largest_tier.human()}"
    return (
        "fit per node",
        f"{fit.pods_per_node} model-server pod{'s' if fit.pods_per_node != 1 else ''},"
        f" {fit.per_node.ceil_to(unit).quantity()} requested"
        f"{allocatable}{auto}",
    )


def _rollout_lines(stack_plan: StackPlan) -> list[str]:
    lines = []
    if stack_plan.rollout is not None:
        names = ", ".join(f"`{r.manifests[-1]['metadata']['name']}`" for r in stack_plan.roles)
        lines.append(f"model servers ({names}): {stack_plan.rollout.describe()}")
        lines.append("a PodDisruptionBudget per role lets drains and upgrades take one pod at a time")
    lines += [w.rollout for w in stack_plan.workloads.values() if w.rollout]
    return lines


def _network_row(stack_plan: StackPlan, recording: Recording) -> tuple[str, str]:
    if not stack_plan.config.network_policies.enabled:
        return ("network policies", "off: every pod accepts traffic from anywhere in the cluster")
    policies = [r for r in recording.resources if r.type.endswith(":NetworkPolicy")]
    count = len(policies)
    held = sorted(
        str(r.inputs["metadata"]["name"]).removesuffix("-egress")
        for r in policies
        if "Egress" in (r.inputs.get("spec") or {}).get("policyTypes", [])
    )
    egress = f"egress open but the {', '.join(held)}'s" if held else "egress open"
    enforced = provider_of(stack_plan.config).network_policy_enforcer
    where = (
        f"Enforced by the created cluster's {enforced}"
        if enforced
        else "Enforced only by a network plugin that implements NetworkPolicy (GKE Dataplane V2 or network policy"
        " enforcement, the EKS VPC CNI with `enableNetworkPolicy`, Calico, Cilium); elsewhere they change nothing,"
        " and `network_policies.enabled: false` leaves them out"
    )
    return (
        "network policies",
        f"{count} NetworkPolicies (ingress; {egress}): each pod admits only the traffic serving needs. {where}",
    )
