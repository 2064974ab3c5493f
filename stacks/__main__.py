"""`python -m stacks list | keys | docs [--out DIR] | render NAME [--set path=value ...] --out DIR | check NAME |
size NAME | diff --base REV`."""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from pathlib import Path

from policies.checks.ruleset import RULES
from stacks.config import loading
from stacks.config.errors import MISSING, ConfigError
from stacks.config.keys import keys_text
from stacks.config.providers import provider_of
from stacks.config.workload_section import DEFAULT_BLOCK_TOKENS, MAX_BLOCK_TOKENS
from stacks.planning.cluster_plan import ClusterPlan
from stacks.planning.plan import StackPlan, plan, plan_any
from stacks.planning.workload import replay_progress
from stacks.planning.workload.workload_source import file_source
from stacks.review import docs_pages, offline, pool_demand, shared_cluster
from stacks.review.capacity_table import capacity_lines
from stacks.review.check import check, stack_policy_config
from stacks.review.cost_summary import cost_lines, objective_lines
from stacks.review.diff import diff_revisions
from stacks.review.pd_table import pd_lines
from stacks.review.render import render
from stacks.review.routing_table import routing_lines
from stacks.review.scale_in_day_table import scale_in_day_lines
from stacks.review.throughput_summary import throughput_lines
from stacks.review.tier_curve_table import tier_curve_lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stacks", description="Offline tools for the llm-d stacks.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="print the presets, one per line, with their description")
    commands.add_parser("keys", help="print every stack config key with its default and what it does")
    docs = commands.add_parser("docs", help="rewrite docs/configuration.md and docs/presets.md from the model")
    docs.add_argument("--out", default=None, help="write the pages into this directory instead (default: docs/)")
    rend = commands.add_parser("render", help="render a preset or stack to manifests.yaml, resources.json, summary.md")
    rend.add_argument("name", help="a preset (stacks/presets/NAME.yaml) or a stack (Pulumi.NAME.yaml)")
    rend.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
    rend.add_argument("--out", required=True, help="output directory")
    chk = commands.add_parser("check", help="run the policy rules on a render; exit 1 on a mandatory violation")
    chk.add_argument("name", nargs="?", help="a preset or a stack (default: every preset and stack, one process)")
    chk.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
    size = commands.add_parser(
        "size", help="replay a workload on a stack: the share each tier catches at every size, and auto's choice"
    )
    size.add_argument("name", help="a preset or a stack")
    size.add_argument("--trace", help="a trace in the Mooncake format (any regular file; default: workload.*)")
    size.add_argument("--block-tokens", type=int, default=None, help="prompt tokens per hash block (default 512)")
    size.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
    dif = commands.add_parser("diff", help="Markdown diff of the renders at two git revisions")
    dif.add_argument("names", nargs="*", help="stacks to compare (default: every preset and stack)")
    dif.add_argument("--base", required=True, help="base revision, e.g. origin/main")
    dif.add_argument("--head", default=None, help="head revision (default: the working tree)")
    return parser


def servings_of(cluster_stack: str) -> list[tuple[str, str, str]]:
    """The repo's serving stacks on `cluster_stack` (stack, namespace, model): a cluster stack's summary lists
    which model each route serves."""
    out = []
    for name in loading.stack_names():
        try:
            config = loading.load_named(name)
            reference = config.cluster.stack or ""
            if provider_of(config).reads_cluster_stack and reference.rsplit("/", 1)[-1] == cluster_stack:
                out.append((name, config.namespace, plan(config).sizing.model.name))
        except ConfigError:
            continue  # reported when that stack itself is rendered or checked
    return out


def _check(stack_plan: StackPlan | ClusterPlan, name: str) -> int:
    findings = check(offline.record(stack_plan, name), stack_policy_config(stack_plan.config))
    for finding in findings:
        print(finding.line())
    mandatory = sum(f.rule.enforcement == "mandatory" for f in findings)
    print(f"{name}: {len(RULES)} rules, {mandatory} mandatory and {len(findings) - mandatory} advisory violations")
    return 1 if mandatory else 0


def _check_all(overrides: list[str]) -> int:
    """Every preset and stack in this one process (the imports and the mock engine set up once). A stack
    that does not load is reported in its one line and the others are still checked; then the serving stacks
    of each cluster stack together: a line per pool they overfill (stacks/review/pool_demand.py), per
    cluster-wide name or routed model two of them share (shared_cluster.py). The exit code is the worst: 2
    for a stack that does not load, 1 for a mandatory violation, an overfilled pool or a clash."""
    stacks = set(loading.stack_names())
    worst = 0
    serving: dict[str, StackPlan] = {}
    for name in [*loading.preset_names(), *loading.stack_names()]:
        try:
            stack_plan = plan_any(loading.load_named(name, overrides), name)
        except ConfigError as error:
            print(f"error: {name}: {error}", file=sys.stderr)
            worst = 2
            continue
        worst = max(worst, _check(stack_plan, name))
        if isinstance(stack_plan, StackPlan) and name in stacks:
            serving[name] = stack_plan
    # the serving stacks that share a cluster, together: its pools, and its cluster-wide names
    for line in [*pool_demand.misfits(serving), *shared_cluster.clashes(serving)]:
        print(line)
        worst = max(worst, 1)
    return worst


def _printable_anywhere() -> None:
    """Under a C locale (no UTF-8) a description or a key's text would stop the tool mid-output: what the
    terminal cannot show is escaped instead."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _utf8_arguments(argv: list[str]) -> list[str]:
    """Under a C locale Python decodes non-ASCII arguments to surrogates; they are UTF-8 text."""
    return [os.fsencode(a).decode("utf-8", "replace") if re.search("[\udc80-\udcff]", a) else a for a in argv]


def main(argv: list[str] | None = None) -> int:
    _printable_anywhere()
    args = _parser().parse_args(_utf8_arguments(sys.argv[1:] if argv is None else argv))
    try:
        return _run(args)
    except BrokenPipeError:  # `./run list | head -1`: the reader stopped reading
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush has nowhere to fail
        os.close(devnull)
        print(f"error: {args.command}: its output was closed before it was all written", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "diff":
            revision_diff = diff_revisions(args.base, args.head, args.names)
            print(revision_diff.text, end="")
            for name in revision_diff.refused:
                print(f"error: diff: {name}: the head's config is refused (its section says why)", file=sys.stderr)
            return 1 if revision_diff.refused else 0
        if args.command == "keys":
            print(keys_text(), end="")
            return 0
        if args.command == "docs":
            for path in docs_pages.write(docs_pages.DOCS if args.out is None else docs_pages.out_dir(args.out)):
                print(f"wrote {path}")
            return 0
        if args.command == "list":
            for name in loading.preset_names():
                print(f"{name}\t{loading.load_preset(name).description}")
            return 0
        if args.command == "check" and args.name is None:
            return _check_all(args.overrides)
        if args.command == "render":
            check_out_dir(args.out)
            args.out = Path(args.out)
        if args.command == "size":
            with replay_progress.reporting(_progress(args.command)):
                lines = size_lines(args.name, args.overrides, args.trace, args.block_tokens)
            print("\n".join(lines), end="")
            return 0
        config = loading.load_named(args.name, args.overrides)
        with replay_progress.reporting(_progress(args.command)):
            stack_plan = plan_any(config, args.name)
        if args.command == "check":
            return _check(stack_plan, args.name)
        layered = config.effective_layer == "cluster"
        result = render(stack_plan, args.name, servings_of(args.name) if layered else None)
        try:
            result.write(args.out)
        except OSError as error:
            raise ConfigError("--out", str(args.out), f"cannot write the render: {error.strerror}") from None
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"rendered {args.name} to {args.out}")
    return 0


def _progress(command: str) -> replay_progress.Report:
    """A long replay's estimate and progress, on stderr (stdout holds the command's own output)."""
    return lambda line: print(f"{command}: {line}", file=sys.stderr, flush=True)


def size_lines(name: str, overrides: list[str], trace: str | None, block_tokens: int | None) -> list[str]:
    """`size`: every argument checked (the stack, the trace file before it is read), then one replay."""
    if block_tokens is not None and not 1 <= block_tokens <= MAX_BLOCK_TOKENS:
        raise ConfigError("--block-tokens", block_tokens, f"must be from 1 to {MAX_BLOCK_TOKENS}")
    config = loading.load_named(name, overrides, trace_given=trace is not None)
    if config.effective_layer == "cluster":
        raise ConfigError("NAME", name, "is a cluster stack, which serves no model: name a serving stack or a preset")
    if trace is None and config.workload is None:
        raise ConfigError("--trace", MISSING, "size needs a workload: --trace FILE, or workload.* in the stack")
    if trace is not None:  # the stack's workload, with its `workload.slo` and `cache.replicas: auto`, is this trace
        source = file_source(trace, block_tokens or DEFAULT_BLOCK_TOKENS)
        source.requests()  # checks the file (a regular file, its size) before anything is replayed
    elif block_tokens is not None:
        raise ConfigError("--block-tokens", block_tokens, "applies with --trace; the stack sets workload.block_tokens")
    else:
        source = None
    planned = plan(config, keep_up=False, workload=source, weigh_any_tier=True, replay_day=True, compare_routings=True)
    workload = planned.workload
    assert workload is not None and workload.routings is not None, "a workload is replayed under both routings"
    pd = workload.disaggregated
    return [
        f"# {name}: replicas, tier sizes and cost",
        "",
        *(pd_lines(workload.capacity, pd, planned.stack.devices) if pd is not None else []),
        *capacity_lines(workload.capacity, config.cache.replicas == "auto"),
        *routing_lines(workload.routings),
        *tier_curve_lines(workload.curve, chosen_by_auto=False, plotted=False),
        *throughput_lines(workload.cost.throughput),
        *cost_lines(workload.cost),
        *objective_lines(workload.objective, took=False),
        *(scale_in_day_lines(workload.scale_in_day) if workload.scale_in_day is not None else []),
    ]


def check_out_dir(text: str) -> None:
    """Before rendering: `--out` names a directory (an empty one would be the current directory), one that
    is, or can be created as, a writable directory."""
    if not text.strip():
        raise ConfigError("--out", text, "must name a directory; an empty path would write into the current one")
    out = Path(text)
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "names a file" if existing == out else f"is under {existing}, a file"
        raise ConfigError("--out", str(out), f"must be a directory; it {where}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError("--out", str(out), f"must be writable; {existing} is not")


if __name__ == "__main__":
    sys.exit(main())
