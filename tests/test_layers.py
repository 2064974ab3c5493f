"""The layering holds: every import arrow of the program points down a floor, read from the parsed source.

Floors, lowest first: the ground floor (components/units.py, components/manifest.py) imports nothing of
ours; the catalog (pure data) only the ground floor; the formulas (components/formulas/: pure arithmetic
over the catalog's figures that the specs and the policy pack share, e.g. the payoff) the catalog and the
ground floor; specs (pure functions) the formulas, the catalog and the ground floor, never Pulumi; the
components (they declare resources) anything below; the policy pack the formulas, the catalog and the
ground floor. stacks/ decides, on four floors of its own: the config (stacks/config/: the model, its checks,
the cluster stack's exports) reads the specs' records and nothing of the plan; the planning (stacks/planning/,
pure, no Pulumi) the config; the deploy floor (stacks/deploy/: the Pulumi program and composition) the
planning and the components; the review (stacks/review/: render, check, diff, summary) the deploy floor and
the policy pack; the CLI (stacks/__main__.py) anything of stacks/. e2e/ (the harness that runs the real
engine) sits above everything and nothing of the program imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.golden import PACKAGE_ARGS

ROOT = Path(__file__).resolve().parents[1]
OURS = ("components", "stacks", "policies", "e2e")
GROUND = {"components.units", "components.manifest"}
# Facts the policy rules share with the specs on purpose, each defined once where it is applied: the
# named security exemptions (and why each exists), Mooncake's one hostPath, what each connector writes (the
# registry: the `kv_connector` class or engine flag that marks a pod as running it) and the watermarks the tier
# evictor accepts (its own parser, components/tier_evictor/evict_tier.py).
POLICY_READS_FROM_SPECS = {
    "components.specs.security",
    "components.specs.mooncake",
    "components.specs.connectors",
    "components.tier_evictor.evict_tier",
}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(name: str) -> str:
    """A dotted name to the module it lives in (`components.specs.alerts.Alert` -> the alerts module)."""
    parts = name.split(".")
    while parts:
        base = ROOT.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return name


def imports(path: Path) -> set[str]:
    """Every module of ours, and every Pulumi package, that a file imports (at any depth in the file)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in OURS:
                out.add(_resolve(name))
            elif top.startswith("pulumi"):
                out.add(top)
    return out


def _floor(module: str) -> str:
    if module in GROUND:
        return "ground"
    for prefix, floor in (
        ("components.catalog", "catalog"),
        ("components.formulas", "formulas"),
        ("components.specs", "specs"),
        ("components", "components"),
        ("policies", "policies"),
        ("stacks.config", "stacks.config"),
        ("stacks.planning", "stacks.planning"),
        ("stacks.deploy", "stacks.deploy"),
        ("stacks.review", "stacks.review"),
        ("stacks.package", "stacks.package"),
        ("stacks", "stacks"),
        ("e2e", "e2e"),
    ):
        if module == prefix or module.startswith(prefix + "."):
            return floor
    return "program"  # __main__.py


# What each floor may import (besides its own floor, for the floors above the catalog).
_BELOW_STACKS = ("ground", "catalog", "formulas", "specs", "components", "pulumi")
_STACKS = ("stacks.config", "stacks.planning", "stacks.deploy", "stacks.review")
ALLOWED = {
    "ground": set(),
    "catalog": {"ground", "catalog"},
    "formulas": {"ground", "catalog", "formulas"},
    "specs": {"ground", "catalog", "formulas", "specs"},
    "components": {"ground", "catalog", "formulas", "specs", "components", "pulumi"},
    "policies": {"ground", "catalog", "formulas", "policies", "pulumi"},
    "stacks.config": {"ground", "catalog", "formulas", "specs", "stacks.config"},
    "stacks.planning": {"ground", "catalog", "formulas", "specs", "stacks.config", "stacks.planning"},
    "stacks.deploy": {*_BELOW_STACKS, "stacks.config", "stacks.planning", "stacks.deploy"},
    "stacks.review": {*_BELOW_STACKS, "policies", *_STACKS[:3], "stacks.review"},
    "stacks.package": {*_BELOW_STACKS, *_STACKS[:3], "stacks.package"},
    "stacks": {*_BELOW_STACKS, "policies", *_STACKS, "stacks"},
    "program": {*_STACKS, "stacks", "stacks.package", "pulumi"},
    "e2e": {*_BELOW_STACKS, "policies", *_STACKS, "stacks", "e2e"},
}


def violations(module: str, imported: set[str]) -> list[str]:
    floor, out = _floor(module), []
    for target in sorted(imported):
        target_floor = "pulumi" if target.startswith("pulumi") else _floor(target)
        if target_floor in ALLOWED[floor]:
            continue
        if floor == "policies" and target in POLICY_READS_FROM_SPECS:
            continue
        out.append(f"{module} ({floor}) imports {target} ({target_floor})")
    return out


SOURCES = sorted(
    p for top in (*OURS, "__main__.py") for p in ([ROOT / top] if top.endswith(".py") else (ROOT / top).rglob("*.py"))
)


def test_every_import_points_down_a_floor() -> None:
    """One test over every source file: each arrow that points up or sideways, listed."""
    assert [v for path in SOURCES for v in violations(_module(path), imports(path))] == []


def test_the_layer_check_catches_an_arrow_up() -> None:
    assert violations("components.catalog.models", {"components.specs.sizing"})
    assert violations("components.units", {"components.catalog.labels"})
    assert violations("components.specs.sizing", {"pulumi"})
    assert violations("components.specs.sizing", {"stacks.planning.plan"})
    assert violations("policies.checks.ruleset", {"components.specs.sizing"})
    assert violations("components.formulas.payoff", {"components.specs.sizing"})
    assert violations("components.formulas.payoff", {"policies.checks.ruleset"})
    assert violations("components.catalog.rates", {"components.formulas.payoff"})
    assert not violations("policies.checks.ruleset", {"components.formulas.payoff"})
    assert not violations("components.specs.payoff_table", {"components.formulas.payoff"})
    assert violations("components.router", {"stacks.config"})
    assert not violations("stacks.planning.plan", {"components.specs.sizing", "stacks.config.loading"})
    assert violations("stacks.planning.plan", {"e2e.nodes"})
    assert violations("stacks.config.loading", {"stacks.planning.hardware"})
    assert violations("stacks.planning.plan", {"stacks.deploy.compose"})
    assert violations("stacks.planning.plan", {"pulumi"})
    assert violations("stacks.deploy.compose", {"stacks.review.render"})
    assert not violations("stacks.review.offline", {"stacks.deploy.compose", "policies.resources"})
    assert not violations("stacks.deploy.compose", {"components.cache_stack", "pulumi_kubernetes"})
    assert not violations("e2e.nodes", {"stacks.planning.hardware"})


def test_imports_are_read_from_the_syntax_tree(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text(
        "from components.specs import alerts\nimport pulumi_aws as aws\n"
        "def f():\n    from stacks.planning.plan import plan\n    return plan\n"
    )
    assert imports(source) == {"components.specs.alerts", "pulumi_aws", "stacks.planning.plan"}


POLICY_CHECKS = {
    "rule_types", "inventory", "identity", "routing", "cache_tiers", "tier_payoff", "artifacts", "pod_security",
    "cluster_isolation", "ruleset", "budget", "storage_limits", "event_routing", "pd_invariants",
}  # fmt: skip


def test_the_policy_checks_are_read_on_the_policy_floor() -> None:
    """The rule modules (policies/checks/) are among the sources checked above, each on the policy floor."""
    checks = {path.stem: _floor(_module(path)) for path in SOURCES if path.parent == ROOT / "policies" / "checks"}
    assert {name: floor for name, floor in checks.items() if name != "__init__"} == dict.fromkeys(
        POLICY_CHECKS, "policies"
    )


def test_no_policy_module_repeats_a_module_name_of_another_floor() -> None:
    ours = {path.stem for path in SOURCES if "policies" in path.relative_to(ROOT).parts[:1]}
    elsewhere = {path.stem for path in SOURCES if "policies" not in path.relative_to(ROOT).parts[:1]}
    assert (ours & elsewhere) - {"__init__", "__main__"} == set()


def test_the_connector_package_is_on_the_specs_floor() -> None:
    package = ROOT / "components" / "specs" / "connectors"
    modules = {_module(p) for p in SOURCES if package in p.parents}
    assert {f"components.specs.connectors.{m}" for m in ("interface", "native", "tpu_offload")} <= modules
    assert all(_floor(m) == "specs" for m in modules)
    assert violations("components.specs.connectors.native", {"stacks.config"})
    assert violations("components.specs.connectors.lmcache_server", {"pulumi"})


def _runtime_imports(path: Path) -> set[str]:
    """The imports of ours a module runs (those under `if TYPE_CHECKING:` are for the type checker only)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    return {
        _resolve(node.module)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("components")
        and id(node) not in typing_only
    }


def test_the_model_servers_never_import_the_connectors_at_run_time() -> None:
    """The connectors build on servers/ (one arrow): a ServerSpec carries its connector, typed only."""
    for path in (ROOT / "components" / "specs" / "servers").glob("*.py"):
        assert not any(m.startswith("components.specs.connectors") for m in _runtime_imports(path)), path.name


def test_module_names_are_unique_across_the_program() -> None:
    """One name, one module: no two modules of components/, stacks/, policies/ or e2e/ share a file name."""
    seen: dict[str, list[str]] = {}
    for path in SOURCES:
        if path.stem not in ("__init__", "__main__"):
            seen.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_no_module_of_the_program_is_over_400_lines() -> None:
    """Small modules with one job each (issue #22's bound); a generated module is not written by hand (the component
    package's inputs, one record per config section: its generator is the module held to the bound)."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in SOURCES
        if p != PACKAGE_ARGS and (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}


def import_graph(paths: list[Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, every import counted (those under `if TYPE_CHECKING:` too:
    a circle the type checker needs is a circle of the design)."""
    graph: dict[str, set[str]] = {_module(path): set() for path in paths}
    for path in paths:
        module = _module(path)
        graph[module] = {m for m in imports(path) if m in graph and m != module}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            target = next(edges, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circle_in_the_program() -> None:
    """No module reaches itself through imports, counting those for the type checker only (issue #31)."""
    assert import_circles(import_graph(SOURCES)) == []


def test_the_circle_check_sees_a_circle_through_a_type_checking_import(tmp_path: Path) -> None:
    second = tmp_path / "second.py"
    second.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from components.specs import alerts\n")
    assert imports(second) == {"components.specs.alerts"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def floors(graph: dict[str, set[str]]) -> int:
    """The longest chain of imports in an acyclic graph, counted in modules (a module importing none: 1 floor)."""
    depth: dict[str, int] = {}

    def of(module: str) -> int:
        if module not in depth:
            depth[module] = 1 + max((of(target) for target in graph[module]), default=0)
        return depth[module]

    return max((of(module) for module in graph), default=0)


PLANNING = [p for p in SOURCES if p.is_relative_to(ROOT / "stacks" / "planning")]
ENGINE = "stacks.planning.workload"


def test_the_planning_wing_stands_on_six_floors() -> None:
    """The plan's own floor plan: ten floors before its workload engine became a sub-package with its records
    beneath it (a record a floor above its computation kept every reader that many floors up)."""
    assert floors(import_graph(PLANNING)) <= 6
    assert floors({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}}) == 3


def test_the_workload_engine_imports_nothing_of_the_plan_above_it() -> None:
    """stacks/planning/workload/ (the workload engine and its economics) reads the config and what is below it,
    never the plan that adapts it (stacks/planning/workload_plan.py is the one adapter)."""
    engine = [p for p in PLANNING if _module(p).startswith(ENGINE + ".")]
    assert len(engine) >= 10
    up = {
        f"{_module(p)} imports {m}"
        for p in engine
        for m in imports(p)
        if m.startswith("stacks.planning") and not m.startswith(ENGINE)
    }
    assert up == set()


def test_the_cli_reads_the_plan_through_its_entry() -> None:
    """`./run size` prints the record `plan()` computed; it calls none of the workload chain itself (it installs the
    reporter a long replay speaks to, replay_progress, which imports nothing of ours)."""
    cli = imports(ROOT / "stacks" / "__main__.py")
    planning = {m for m in cli if m.startswith("stacks.planning")}
    assert planning == {
        "stacks.planning.plan",
        "stacks.planning.cluster_plan",
        "stacks.planning.workload.workload_source",
        "stacks.planning.workload.replay_progress",
    }
    progress = imports(ROOT / "stacks" / "planning" / "workload" / "replay_progress.py")
    assert not {m for m in progress if m.startswith(("stacks", "components", "policies"))}
