"""docs/ and the README: the generated pages match the model, every relative link resolves, every `./run`
command shown is one the CLI accepts; ARCHITECTURE.md and CONTRIBUTING.md name only files, folders and module
attributes that exist."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from stacks.__main__ import main
from stacks.config.keys import config_keys
from stacks.review import docs_pages

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("name", sorted(docs_pages.pages()))
def test_a_generated_page_matches_what_it_is_generated_from(name: str) -> None:
    """Regenerated here and compared: a key, a default, a description or a preset changed without `./run docs`
    fails this."""
    assert (ROOT / "docs" / name).read_text(encoding="utf-8") == docs_pages.pages()[name], (
        f"docs/{name} is stale: run ./run docs"
    )


def test_the_docs_command_writes_the_generated_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(docs_pages.pages())
    assert (tmp_path / "configuration.md").read_text() == (ROOT / "docs" / "configuration.md").read_text()
    assert f"wrote {tmp_path / 'presets.md'}" in capsys.readouterr().out


def test_the_configuration_page_has_every_key_with_its_type_and_default() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text()
    assert "| `llmd:cache.tier.cpu` | size \\| 'auto' | `unset` | CPU tier per model-server pod" in text
    assert "| `llmd:node_pools.<pool>.taints[i].effect` | 'NoSchedule' \\| 'PreferNoSchedule' \\| 'NoExecute' |" in text
    assert "| `llmd:protect` | boolean | `true` |" in text
    assert "| `llmd:hfToken` | string (secret) | `required` |" in text


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue  # http(s), mailto: not checked offline
        target, _, anchor = link.partition("#")
        resolved = (page.parent / target).resolve() if target else page
        assert resolved.exists(), f"{page.name}: {link} does not resolve"
        assert resolved.is_relative_to(ROOT), f"{page.name}: {link} leaves the repository"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.name}: {link}: no heading #{anchor}"


def _commands() -> set[str]:
    """The commands `./run --help` lists (the wrapper's and the CLI's)."""
    out = subprocess.run(["bash", str(ROOT / "run"), "--help"], capture_output=True, text=True, check=True).stdout
    listed = set(re.findall(r"^  (\w+)", out, flags=re.MULTILINE))
    match = re.search(r"\{([a-z,]+)\}", out)
    return listed | set(match.group(1).split(",") if match else [])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_run_command_shown_is_one_the_cli_accepts(page: Path) -> None:
    shown = re.findall(r"(?<![\w/.])\./run ([\w-]+)", page.read_text())
    commands = _commands()
    assert {c for c in shown if c not in commands and not c.startswith("-")} == set(), page.name


def test_every_key_has_a_type_a_reader_can_write() -> None:
    for key in config_keys():
        assert key.type and not re.search(r"typing|class|NoneType|\[", key.type), (key.path, key.type)


def test_the_readme_lists_every_page_of_docs_and_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        assert f"(docs/{page.name})" in readme, page.name
    first_block = re.search(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
    assert first_block and [line.split("#")[0].strip() for line in first_block.group(1).splitlines()] == [
        "./run render dev --out out/dev",
        "./run test",
    ]
    assert len(readme.splitlines()) <= 200


def test_operating_covers_every_alert_the_program_defines() -> None:
    """Each alert rule of components/specs/ (alerts.py and each metric family's, in the connectors' modules) has
    its section: what it means, what to check, what to do."""
    source = "".join(path.read_text() for path in sorted((ROOT / "components" / "specs").rglob("*.py")))
    names = re.findall(r'Alert\(\s*"(\w+)"', source)
    assert len(names) >= 10
    sections = re.split(r"^### ", (ROOT / "docs" / "operating.md").read_text(), flags=re.MULTILINE)[1:]
    titles = {s.split()[0]: s for s in sections}
    for name in names:
        assert name in titles, name
        assert all(part in titles[name] for part in ("**Means**", "**Check**", "**Do**")), name


# The pages whose claims about the code can be read: what they name exists.
CLAIMS = [ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md"]
# Named there but not a file of the repository: what a render writes, a placeholder of a command line, and a
# model's own config (Hugging Face's, what `cache.model_file` reads).
NOT_IN_THE_TREE = {"cluster-outputs.json", "tests/test_x.py", "config.json"}
_SKIP = {".git", ".venv", "__pycache__", "node_modules", "out", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


@cache
def _tree() -> tuple[frozenset[str], frozenset[str]]:
    """(files, folders ending in /) of the working tree, relative to the root."""
    files: set[str] = set()
    folders: set[str] = set()
    for base, names, found in os.walk(ROOT):
        names[:] = [n for n in names if n not in _SKIP]
        rel = Path(base).relative_to(ROOT).as_posix()
        if rel != ".":
            folders.add(f"{rel}/")
        files.update(f if rel == "." else f"{rel}/{f}" for f in found)
    return frozenset(files), frozenset(folders)


def _exists(name: str) -> bool:
    """A path as the page writes it: from the root, or the tail of a longer one (`servers/base.py` under
    components/specs/), a `*` matching as in a shell."""
    files, folders = _tree()
    for path in folders if name.endswith("/") else files:
        if fnmatch.fnmatchcase(path, name) or fnmatch.fnmatchcase(path, f"*/{name}"):
            return True
    return False


def _paths(text: str) -> set[str]:
    """Every file (by its suffix) and every folder (a name ending in /) the text names."""
    pattern = r"(?<![\w./<>*-])((?:[\w*-]+/)*[\w*-]+\.(?:py|md|yaml|json|csv)|(?:[\w-]+/)+)(?![\w/-])"
    return set(re.findall(pattern, text))


@pytest.mark.parametrize("page", CLAIMS, ids=lambda p: p.name)
def test_every_file_and_folder_a_page_names_exists(page: Path) -> None:
    named = _paths(page.read_text())
    assert len(named) >= 40, len(named)
    assert sorted(n for n in named - NOT_IN_THE_TREE if not _exists(n)) == []


def test_a_path_that_moved_is_reported() -> None:
    assert _paths("see `stacks/planning/plan.py` and `formulas/hpa.py`, under components/") == {
        "stacks/planning/plan.py",
        "formulas/hpa.py",
        "components/",
    }
    assert _exists("stacks/planning/plan.py") and _exists("formulas/hpa.py") and _exists("stacks/config/*_section.py")
    assert not _exists("stacks/planning/nowhere.py") and not _exists("stacks/plan.py")


@cache
def _defined(path: str) -> frozenset[str]:
    """The names a module defines or imports, at any depth (functions, classes, assignments, attributes)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.rsplit(".", 1)[-1])
    return frozenset(names)


def _modules(tail: str) -> list[str]:
    """The Python files a page's `module` or `path/module.py` may mean."""
    name = tail if tail.endswith(".py") else f"{tail}.py"
    return [f for f in _tree()[0] if f == name or f.endswith(f"/{name}")]


def _attributes(text: str) -> list[tuple[str, str]]:
    """(module, name) for each `module.name` and `path/module.py` `name` the text writes, where the module is one
    of the tree's (a config key such as `workload.slo` is read as a key, not a module's)."""
    keys = {key.path for key in config_keys()}
    dotted = [
        (m.group(1), m.group(2))
        for m in re.finditer(r"`([a-z_]+)\.([A-Za-z_]\w*)`", text)
        if m.group(2) not in ("py", "md", "yaml", "json") and m.group(0).strip("`") not in keys
    ]
    beside = re.findall(r"`((?:[\w-]+/)*[\w-]+\.py)` `([A-Za-z_]\w*)`", text)
    return [(module, name) for module, name in dotted + beside if _modules(module)]


@pytest.mark.parametrize("page", CLAIMS, ids=lambda p: p.name)
def test_every_module_attribute_a_page_names_is_defined_there(page: Path) -> None:
    named = _attributes(page.read_text())
    assert len(named) >= (15 if page.name == "ARCHITECTURE.md" else 3), len(named)
    missing = [f"{m} {n}" for m, n in named if not any(n in _defined(f) for f in _modules(m))]
    assert missing == []


def test_a_renamed_attribute_is_reported() -> None:
    assert _attributes("`inventory.cpu_tier_of`, `servers/base.py` `workload_metadata`, `workload.slo`") == [
        ("inventory", "cpu_tier_of"),
        ("servers/base.py", "workload_metadata"),
    ]
    assert "cpu_tier_of" in _defined("policies/checks/inventory.py")
    assert "cpu_tier_bytes" not in _defined("policies/checks/inventory.py")


# A number of the project's own issue tracker: meaningless to a reader of a clone (an upstream one is written
# with its repository, `owner/repo#123`).
TRACKER_NUMBER = re.compile(r"(?<![\w/-])issues? #?\d+", re.IGNORECASE)
READ_BY_USERS = ("components", "stacks", "policies", "e2e", "scripts", "benchmarks", "docs", "tests/golden")


def test_nothing_users_read_names_an_issue_of_the_tracker() -> None:
    """The pages, the goldens (the summaries users read) and the program (its messages, comments, docstrings)."""
    files = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md", ROOT / "run"]
    files += [p for top in READ_BY_USERS for p in sorted((ROOT / top).rglob("*")) if p.suffix in (".py", ".md")]
    assert len(files) > 300
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in TRACKER_NUMBER.finditer(p.read_text())]
    assert found == []


def test_a_tracker_number_is_found_and_an_upstream_one_is_not() -> None:
    found = TRACKER_NUMBER.findall("measured (issue 15); see Issue #24 and issues 10")
    assert found == ["issue 15", "Issue #24", "issues 10"]
    assert TRACKER_NUMBER.findall("vllm-project/vllm#49261, llm-d/llm-d#1981, tissue 3") == []
