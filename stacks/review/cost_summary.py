"""The summary's cost section: the plan's `StackCost` (stacks/planning/workload/cost.py) as a reader checks it: a total
only where every charge is priced, each line with its formula, what is unpriced and how to price it, the serving
pool's idle nodes, what is billed by use, $ per million prompt tokens (or why there is none), each tier's cost
against its saving, and every price with its rate kind, source and date, the overridden ones marked; and the
objective `cache.tier.cpu: auto` sized by (stacks/planning/workload/tier_objective.py), with the cost of its size
against the latency objective's."""

from __future__ import annotations

from components.catalog.prices import HOURS_PER_MONTH
from stacks.planning.workload.cost_records import Idle, StackCost
from stacks.planning.workload.tier_objective import Objective


def usd(value: float) -> str:
    """Dollars to the cent; a figure that rounds to zero is $0.00, never $-0.00."""
    return f"${round(value, 2) + 0.0:,.2f}"


def cost_lines(cost: StackCost | None) -> list[str]:
    if cost is None:
        return []
    if not cost.lines and not cost.unpriced:
        return [
            "## Cost",
            "",
            "Nothing this stack creates is priced: it runs on nodes it does not create (a cluster stack's are"
            " priced in its own plan). On an existing cluster, describe the pool (`node_pools`), name its machine"
            " type in `pricing.machine_types` and set `pricing.region` (or `pricing.prices`) to price it.",
            "",
        ]
    lines = ["## Cost", "", headline(cost), ""]
    if cost.lines:
        lines += ["| item | $/hour | formula |", "|---|---|---|"]
        lines += [f"| {x.what} | {usd(x.usd_per_hour)} | {x.formula} |" for x in cost.lines]
        lines.append("")
    lines += [f"- not priced: {u.what}: {u.reason}; {u.remedy}" for u in cost.unpriced]
    lines += [_idle_line(idle) for idle in cost.idle]
    lines += [f"- billed by use, not estimated (the plan does not model it): {what}" for what in cost.usage]
    lines += _per_token_lines(cost)
    if cost.monthly_budget is not None:
        lines.append(
            f"- budget {usd(cost.monthly_budget)}/month (pricing.monthly_budget): {_verdict(cost, cost.monthly_budget)}"
        )
    if lines[-1] != "":
        lines.append("")
    if cost.tiers:
        lines += ["| tier | costs $/hour | saves $/hour | how it saves | verdict |", "|---|---|---|---|---|"]
        for tier in cost.tiers:
            costs = "unpriced" if tier.cost_usd_per_hour is None else usd(tier.cost_usd_per_hour)
            how = "; ".join(f"{s.basis}: {s.formula}" for s in tier.savings)
            lines.append(
                f"| {tier.tier} | {costs} ({tier.cost_formula}) | {usd(tier.saving_usd_per_hour)} | {how}"
                f" | {tier.verdict} |"
            )
        lines.append("")
    if cost.prices:
        lines += ["| price | region | kind | USD | per | source | as of |", "|---|---|---|---|---|---|---|"]
        for p in cost.prices:
            source = f"overridden ({p.key})" if p.overridden else p.source
            lines.append(f"| {p.item} | {p.region or '-'} | {p.kind} | {p.usd:g} | {p.unit} | {source} | {p.as_of} |")
        lines.append("")
    return lines


def headline(cost: StackCost) -> str:
    """The total where every charge is priced; else what is priced and what is not, never a partial sum as the
    total."""
    where = f"region {cost.region}" if cost.region else "no region (pricing.region unset)"
    count = len(cost.unpriced)
    items = f"{count} item{'s' if count != 1 else ''}"
    if not cost.lines:
        return f"No total ({where}): nothing this stack pays for is priced ({items} below, each with what prices it)."
    kinds = " and ".join(cost.kinds)
    figures = f"{usd(cost.usd_per_hour)}/hour, {usd(cost.usd_per_month)}/month ({HOURS_PER_MONTH} hours)"
    if cost.partial:
        return (
            f"No total ({where}): {items} below {'are' if count != 1 else 'is'} not priced. The priced lines"
            f" ({kinds} prices) come to {figures}, which leaves {'them' if count != 1 else 'it'} out."
        )
    return f"{kinds[0].upper()}{kinds[1:]} prices, {where}: {figures}."


def _idle_line(idle: Idle) -> str:
    cost = "not priced" if idle.usd_per_hour is None else f"{usd(idle.usd_per_hour)}/hour of the total"
    return (
        f"- idle: {idle.idle} of node pool {idle.pool}'s {idle.nodes} nodes run no model server ({idle.used}"
        f" node{'s' if idle.nodes - idle.idle != 1 else ''} used): {cost}; lower its node_count to stop paying"
        " for them"
    )


def _per_token_lines(cost: StackCost) -> list[str]:
    rate = cost.prompt_tokens_per_s
    if rate is None:
        return []
    per_million = cost.usd_per_million_prompt_tokens
    if per_million is not None:
        return [
            f"- {usd(per_million)} per million prompt tokens at the workload's {rate:,.0f} prompt tokens/s"
            " ($/hour / (tokens/s x 3600) x 1e6)"
        ]
    why = cost.refused if cost.refused is not None else "part of the cost is not priced"
    return [f"- no $ per million prompt tokens at the workload's {rate:,.0f} prompt tokens/s: {why}"]


def _verdict(cost: StackCost, budget: float) -> str:
    if cost.partial:
        return (
            f"cannot be judged while {len(cost.unpriced)} item(s) are not priced (the priced lines come to"
            f" {usd(cost.usd_per_month)}/month)"
        )
    return "over it: the policy pack refuses the stack" if cost.usd_per_month > budget else "within it"


def objective_lines(objective: Objective | None, took: bool) -> list[str]:
    """Which objective sized the CPU tier auto took (`took`; else what auto would take), without naming auto
    again (the tier curve's line does)."""
    if objective is None:
        return []
    setting = "the default, unset" if objective.defaulted else "set"
    verb = "took" if took else "would take"
    text = f"`pricing.objective: {objective.name}` ({setting}) {verb} {objective.chosen.size.readable()}."
    if not objective.sizes:
        text += (
            " `pricing.objective: cost` would take the cheapest size that keeps up instead (the capacity plan's"
            " replicas at each size x one replica's price, plus the filesystem tier's charges)."
        )
        return ["## Cost objective", "", text, ""]
    chosen, latency = (objective.cost_of(c.size) for c in (objective.chosen, objective.latency))
    chosen_usd = chosen.usd_per_hour if chosen is not None else None
    latency_usd = latency.usd_per_hour if latency is not None else None
    if chosen_usd is not None and latency_usd is not None:
        text += (
            f" It costs {usd(chosen_usd)}/hour against {usd(latency_usd)}/hour at the latency objective's"
            f" {objective.latency.size.readable()}."
        )
    else:
        text += f" {objective.chosen.reason[0].upper()}{objective.chosen.reason[1:]}."
    lines = ["## Cost objective", "", text, ""]
    lines += ["| CPU tier (`cache.tier.cpu`) | replicas that keep up | cost | formula |", "|---|---|---|---|"]
    for size in objective.sizes:
        mark = " (chosen)" if size.size == objective.chosen.size else ""
        mark += " (latency's)" if size.size == objective.latency.size else ""
        figure = f"{usd(size.usd_per_hour)}/hour" if size.usd_per_hour is not None else "-"
        replicas = str(size.replicas) if size.replicas is not None else "-"
        lines.append(f"| {size.size.readable()}{mark} | {replicas} | {figure} | {size.formula()} |")
    lines.append("")
    return lines
