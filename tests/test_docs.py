"""docs/ and the README: the generated pages match the model, every relative link resolves, every `./run`
command shown is one the CLI accepts."""

from __future__ import annotations

import re
import subprocess
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
