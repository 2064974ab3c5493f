"""A reviewable Markdown diff of two renders: resources added, removed and changed, field by field.

`python -m stacks diff --base REV [--head REV] [NAME ...]` renders each stack at both revisions
(a `git archive` of each, rendered with this environment) and needs no cloud credentials, so it
serves pull requests from forks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

from stacks.errors import ConfigError

Key = tuple[str, str]  # (type, name)


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{path}[{i}]"))
        return out
    return {path: value}


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, old value, new value) for every leaf that differs; missing leaves show as None."""
    a, b = _flatten(old), _flatten(new)
    return [(p, a.get(p), b.get(p)) for p in sorted(a.keys() | b.keys()) if a.get(p) != b.get(p)]


def _index(resources_json: str) -> dict[Key, dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in json.loads(resources_json)}


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return "`" + (text if len(text) <= 160 else text[:157] + "...") + "`"


def diff_renders(name: str, old: str, new: str) -> str:
    """Markdown for one stack; an empty string when nothing changed."""
    before, after = _index(old), _index(new)
    lines: list[str] = []
    for key in sorted(after.keys() - before.keys()):
        lines.append(f"- added `{key[0]}` **{key[1]}**")
    for key in sorted(before.keys() - after.keys()):
        lines.append(f"- removed `{key[0]}` **{key[1]}**")
    for key in sorted(before.keys() & after.keys()):
        fields = changed_fields(
            {k: before[key][k] for k in ("inputs", "dependsOn", "parent", "provider")},
            {k: after[key][k] for k in ("inputs", "dependsOn", "parent", "provider")},
        )
        if fields:
            lines.append(f"- changed `{key[0]}` **{key[1]}**")
            lines += [f"  - `{path}`: {_show(a)} → {_show(b)}" for path, a, b in fields]
    if not lines:
        return ""
    return "\n".join([f"### {name}", "", *lines, ""])


def _tree(revision: str, into: Path, option: str) -> Path:
    result = subprocess.run(
        ["git", "archive", "--format=tar", f"{revision}^{{tree}}"], capture_output=True, check=False
    )
    if result.returncode != 0 or revision.startswith("-"):
        raise ConfigError(option, revision, "not a revision of this git repository")
    archive = result.stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _render(tree: Path, name: str, out: Path) -> str | None:
    """resources.json of NAME rendered in `tree`, or None where the stack does not exist there."""
    result = subprocess.run(
        [sys.executable, "-m", "stacks", "render", name, "--out", str(out)], cwd=tree, capture_output=True, text=True
    )
    return (out / "resources.json").read_text() if result.returncode == 0 else None


def _stack_names(tree: Path) -> set[str]:
    presets = {p.stem for p in (tree / "stacks" / "presets").glob("*.yaml")}
    stacks = {p.name[len("Pulumi.") : -len(".yaml")] for p in tree.glob("Pulumi.*.yaml")}
    return presets | stacks


def diff_revisions(base: str, head: str | None, names: list[str]) -> str:
    """head None: the working tree."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base_tree = _tree(base, root / "base", "--base")
        head_tree = _tree(head, root / "head", "--head") if head else Path.cwd()
        known = _stack_names(base_tree) | _stack_names(head_tree)
        for name in names:
            if name not in known:
                raise ConfigError(
                    "NAME", name, f"a preset or stack at either revision; allowed: {', '.join(sorted(known))}"
                )
        wanted = names or sorted(known)
        sections = []
        for name in wanted:
            old = _render(base_tree, name, root / "out" / "base" / name)
            new = _render(head_tree, name, root / "out" / "head" / name)
            if old is None and new is None:
                sections.append(f"### {name}\n\nrenders at neither revision\n")
            elif old is None or new is None:
                sections.append(f"### {name}\n\n{'added' if old is None else 'removed'} stack\n")
            else:
                sections.append(diff_renders(name, old, new))
    body = "\n".join(s for s in sections if s)
    title = f"## Render diff {base}..{head or 'working tree'}"
    return f"{title}\n\n{body or 'No rendered changes.'}\n"
