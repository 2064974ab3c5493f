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
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path
from typing import Any

from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.review import changeplan
from stacks.review.field_changes import changed_fields

Key = tuple[str, str]  # (type, name)


def dependency_changes(old: list[str], new: list[str]) -> list[str]:
    """A resource's dependencies are a set: what it now waits for, and what it no longer does."""
    return [f"+ `{d}`" for d in sorted(set(new) - set(old))] + [f"- `{d}`" for d in sorted(set(old) - set(new))]


def _index(resources_json: str) -> dict[Key, dict[str, Any]]:
    return {(r["type"], r["name"]): r for r in json.loads(resources_json)}


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return "`" + (text if len(text) <= 160 else text[:157] + "...") + "`"


def _changes(
    before: dict[Key, dict[str, Any]], after: dict[Key, dict[str, Any]]
) -> tuple[list[str], dict[Key, list[str]]]:
    """The field diff's lines, and the changed input paths of each resource present in both renders."""
    lines: list[str] = []
    for key in sorted(after.keys() - before.keys()):
        lines.append(f"- added `{key[0]}` **{key[1]}**")
    for key in sorted(before.keys() - after.keys()):
        lines.append(f"- removed `{key[0]}` **{key[1]}**")
    compared = ("inputs", "parent", "provider", "options")
    input_paths: dict[Key, list[str]] = {}
    for key in sorted(before.keys() & after.keys()):
        fields = changed_fields(
            {k: before[key].get(k) for k in compared},
            {k: after[key].get(k) for k in compared},
        )
        dependencies = dependency_changes(before[key].get("dependsOn") or [], after[key].get("dependsOn") or [])
        if fields or dependencies:
            input_paths[key] = [p.removeprefix("inputs.") for p, _, _ in fields if p.startswith("inputs.")]
            lines.append(f"- changed `{key[0]}` **{key[1]}**")
            lines += [f"  - `{path}`: {_show(a)} → {_show(b)}" for path, a, b in fields]
            lines += [f"  - dependsOn: {change}" for change in dependencies]
    return lines, input_paths


def change_plan(old: str, new: str) -> list[changeplan.Change]:
    """What `pulumi up` does to each resource between two renders' resources.json (the e2e holds the
    engine's own plan to this)."""
    before, after = _index(old), _index(new)
    _, input_paths = _changes(before, after)
    return changeplan.plan_changes(before, after, input_paths)


def diff_renders(name: str, old: str, new: str) -> str:
    """Markdown for one stack, the change plan above the field diff; an empty string when nothing changed."""
    before, after = _index(old), _index(new)
    lines, input_paths = _changes(before, after)
    if not lines:
        return ""
    plan = changeplan.plan_lines(before, after, input_paths)
    cost = changeplan.cost_line(before, after)
    return "\n".join(
        [f"### {name}", "", cost, "", "#### Change plan", "", *plan, "", "#### Field diff", "", *lines, ""]
    )


def _tree(revision: str, into: Path, option: str) -> Path:
    """The tree of `revision`, extracted into `into`. A revision that starts with '-' never reaches git:
    git would read it as an option (`--output=FILE` writes a file)."""
    if not revision or revision.startswith("-"):
        raise ConfigError(option, revision, "not a revision of this git repository")
    verify = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{tree}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if verify.returncode != 0:
        raise ConfigError(option, revision, "not a revision of this git repository")
    result = subprocess.run(["git", "archive", "--format=tar", verify.stdout.strip()], capture_output=True, check=False)
    if result.returncode != 0:
        raise ConfigError(option, revision, "not a revision of this git repository")
    into.mkdir(parents=True, exist_ok=True)  # an empty tree archives no member
    try:
        with tarfile.open(fileobj=BytesIO(result.stdout)) as tar:
            tar.extractall(into, filter="data")
    except tarfile.FilterError as error:  # an absolute link, or one leaving the tree: refused whole
        member = error.tarinfo.name
        raise ConfigError(
            option, revision, f"its tree holds {member!r}, {_filter_reason(error)}; diff extracts no such tree"
        ) from None
    except tarfile.TarError as error:
        raise ConfigError(option, revision, f"its tree cannot be extracted: {error}") from None
    return into


def _filter_reason(error: tarfile.FilterError) -> str:
    if isinstance(error, tarfile.AbsoluteLinkError):
        return "a link to an absolute path"
    if isinstance(error, tarfile.LinkOutsideDestinationError):
        return "a link that leads outside the tree"
    if isinstance(error, tarfile.AbsolutePathError | tarfile.OutsideDestinationError):
        return "a path outside the tree"
    return "a member the safe extraction refuses (a device or a special file)"


def _render(tree: Path, name: str, out: Path) -> str | None:
    """resources.json of NAME rendered in `tree`, or None where the stack does not exist there or fails to render
    (its error's last line in OUT/error.txt)."""
    result = subprocess.run(
        [sys.executable, "-m", "stacks", "render", name, "--out", str(out)], cwd=tree, capture_output=True, text=True
    )
    if result.returncode != 0:
        out.mkdir(parents=True, exist_ok=True)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        (out / ERROR_FILE).write_text(lines[-1] if lines else f"render exited {result.returncode}", encoding="utf-8")
        return None
    return (out / "resources.json").read_text(encoding="utf-8")


ERROR_FILE = "error.txt"  # beside a stack's render: why it failed at that revision


# Renders every named stack of a tree in ONE process (imports paid once), each to OUT/NAME; a stack that
# does not load or render at that revision is skipped, its error in OUT/NAME/error.txt (ERROR_FILE). A
# cluster stack (layer cluster) is planned as `render` plans it (`plan_any`), not as a stack serving a default
# model; a revision before layers fails the import, and each stack is then rendered by its own `render` process.
_RENDER_ALL = """
import sys
from pathlib import Path
from stacks.config import loading
from stacks.planning.plan import plan_any
from stacks.review.render import render
out = Path(sys.argv[1])
for name in sys.argv[2:]:
    try:
        result = render(plan_any(loading.load_named(name, []), name), name)
    except Exception as error:
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "error.txt").write_text(f"{type(error).__name__}: {error}", encoding="utf-8")
        continue
    result.write(out / name)
"""


def _render_all(tree: Path, names: list[str], out: Path) -> dict[str, str | None]:
    """resources.json of each stack rendered in `tree` by one process (per stack where that fails to start)."""
    result = subprocess.run(
        [sys.executable, "-c", _RENDER_ALL, str(out), *names], cwd=tree, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:  # a revision whose modules the script cannot drive: one process per stack
        return {name: _render(tree, name, out / name) for name in names}
    return {
        n: (out / n / "resources.json").read_text(encoding="utf-8") if (out / n / "resources.json").exists() else None
        for n in names
    }


def _failure(out: Path, name: str) -> str:
    """Why NAME rendered at neither revision: the head's error, else the base's (a stack at one revision only)."""
    for side in ("head", "base"):
        error = out / side / name / ERROR_FILE
        if error.is_file():
            text = error.read_text(encoding="utf-8").removeprefix("ConfigError: ")
            return text.removeprefix("invalid stack config: ")
    return "no error recorded"


def _stack_names(tree: Path) -> set[str]:
    presets = {p.stem for p in (tree / "stacks" / "presets").glob("*.yaml")}
    return presets | set(loading.stack_names(tree))


def diff_revisions(base: str, head: str | None, names: list[str]) -> str:
    """head None: the working tree."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base_tree = _tree(base, root / "base", "--base")
        head_tree = _tree(head, root / "head", "--head") if head is not None else Path.cwd()
        known = _stack_names(base_tree) | _stack_names(head_tree)
        for name in names:
            if name not in known:
                raise ConfigError(
                    "NAME", name, f"a preset or stack at either revision; allowed: {', '.join(sorted(known))}"
                )
        wanted = names or sorted(known)
        with ThreadPoolExecutor(max_workers=2) as pool:  # the two revisions side by side, one process each
            base_job = pool.submit(_render_all, base_tree, wanted, root / "out" / "base")
            head_job = pool.submit(_render_all, head_tree, wanted, root / "out" / "head")
            olds, news = base_job.result(), head_job.result()
        sections = []
        for name in wanted:
            old, new = olds[name], news[name]
            if old is None and new is None:
                raise ConfigError("NAME", name, f"renders at neither revision: {_failure(root / 'out', name)}")
            elif old is None or new is None:
                sections.append(f"### {name}\n\n{'added' if old is None else 'removed'} stack\n")
            else:
                sections.append(diff_renders(name, old, new))
    body = "\n".join(s for s in sections if s)
    title = f"## Render diff {base}..{'working tree' if head is None else head}"
    return f"{title}\n\n{body or 'No rendered changes.'}\n"
