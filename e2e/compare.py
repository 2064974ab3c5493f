"""Pure comparisons the e2e run makes: live objects against the render, the engine's plan against
the project's change plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from e2e.quantity import quantity
from policies.resources import CHART_TYPE
from stacks.review.changeplan import Change

# The engine's step kinds, as the project's change plan names them.
_ENGINE_KIND = {
    "create": "added",
    "delete": "removed",
    "update": "update",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
}
_PLAN_KIND = {
    "added": "added",
    "removed": "removed",
    "update": "update",
    "rolling": "update",
    "scale": "update",
    "replace": "replace",
}
_RANK = {"update": 0, "added": 1, "removed": 1, "replace": 2}
# Components: the engine diffs no inputs of theirs (their children carry the change).
_COMPONENT_PREFIXES = ("llmd:", "kubernetes:helm.sh/v4:Chart", "kubernetes:yaml/v2:ConfigFile", "pulumi:pulumi:Stack")
SECRET_MARK = "[secret]"


def urn_key(urn: str) -> tuple[str, str]:
    """(type, name) of a URN, as resources.json keys its rows."""
    parts = urn.split("::")
    return parts[2].rsplit("$", 1)[-1], "::".join(parts[3:])


def urn_parents(urn: str) -> list[str]:
    return urn.split("::")[2].split("$")[:-1]


def _same(want: Any, have: Any) -> bool:
    if _scalar(want) == _scalar(have):
        return True
    a, b = quantity(want), quantity(have)
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), 1.0)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def missing_fields(want: Any, have: Any, path: str = "") -> list[str]:
    """Every field `want` sets that `have` lacks or holds otherwise (scalars compared as text, as the
    API server returns quantities and int-or-strings); secret placeholders are not compared."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [f"{path or '.'}: expected an object, found {have!r}"[:200]]
        out: list[str] = []
        for key, value in want.items():
            if value is None or value == {} or value == []:
                continue
            out += missing_fields(value, have.get(key), f"{path}.{key}" if path else key)
        return out
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return [f"{path}: expected {len(want)} items, found {have!r}"[:200]]
        out = []
        for index, (w, h) in enumerate(zip(want, have, strict=True)):
            out += missing_fields(w, h, f"{path}[{index}]")
        return out
    if want == SECRET_MARK:
        return []
    if have is None or not _same(want, have):
        return [f"{path}: expected {want!r}, found {have!r}"[:200]]
    return []


@dataclass(frozen=True)
class Disagreement:
    type: str
    name: str
    engine: str
    plan: str

    def line(self) -> str:
        return f"{self.type} {self.name}: the engine plans {self.engine}, the change plan says {self.plan}"


def compare_plans(steps: list[dict[str, Any]], changes: list[Change]) -> list[Disagreement]:
    """Resource by resource: the engine's step kind against the change plan's. A chart's or a
    ConfigFile's children answer for their parent's row (the mock engine never creates them): any
    child the engine replaces must be a replacement the plan names on the parent."""
    renamed = [c.name for c in changes if c.type == CHART_TYPE and c.kind == "replace"]
    engine: dict[tuple[str, str], str] = {}
    recreated: dict[str, set[str]] = {name: set() for name in renamed}
    for step in steps:
        op = step.get("op", "same")
        kind = _ENGINE_KIND.get(op)
        if kind is None:
            continue
        key = urn_key(step["urn"])
        chart = next(
            (n for n in renamed if CHART_TYPE in urn_parents(step["urn"]) and key[1].startswith(n + ":")), None
        )
        if chart is not None:  # a renamed chart's objects: the plan's row for the chart answers for them
            recreated[chart].add(kind)
            continue
        if key[0].startswith(_COMPONENT_PREFIXES):
            continue
        if key[0].startswith("pulumi:providers:"):
            continue
        # The strongest kind wins (a replacement shows as several steps).
        if key not in engine or _RANK[kind] > _RANK[engine[key]]:
            engine[key] = kind
    planned = {
        (c.type, c.name): _PLAN_KIND[c.kind]
        for c in changes
        if c.kind != "ignored"  # the engine plans no step for a field it leaves alone
        and not c.type.startswith(_COMPONENT_PREFIXES)
        and not c.type.startswith("pulumi:providers:")
    }
    out = [
        Disagreement(CHART_TYPE, name, "no recreated objects", "replace")
        for name, kinds in recreated.items()
        if not ({"added", "removed"} <= kinds or "replace" in kinds)
    ]
    for key in sorted(engine.keys() | planned.keys()):
        e, p = engine.get(key, "no change"), planned.get(key, "no change")
        if e != p:
            out.append(Disagreement(key[0], key[1], e, p))
    return out


def replaced_objects(changes: list[Change], resources_json: str) -> set[tuple[str, str]]:
    """(kind, name) of the Kubernetes objects the change plan replaces: what may get a new UID on `up`."""
    import json

    rows = {(r["type"], r["name"]): r for r in json.loads(resources_json)}
    out = set()
    for change in changes:
        if change.kind != "replace" or not change.type.startswith("kubernetes:"):
            continue
        if "/" in change.name and ":" in change.name:  # a chart's object: <chart>:<namespace>/<name>
            out.add((change.type.rsplit(":", 1)[-1], change.name.rsplit("/", 1)[-1]))
            continue
        row = rows.get((change.type, change.name))
        if row:
            out.add((row["inputs"].get("kind", ""), row["inputs"].get("metadata", {}).get("name", "")))
    return out
