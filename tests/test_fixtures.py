"""The upstream fixtures are the files SOURCES.md lists, unchanged since their hashes were recorded."""

from __future__ import annotations

from scripts import refresh_fixtures
from tests.helpers import UPSTREAM


def test_every_fixture_is_listed_with_its_source_and_hash() -> None:
    listed = {row.file: row.sha256 for row in refresh_fixtures.rows((UPSTREAM / "SOURCES.md").read_text())}
    present = {str(p.relative_to(UPSTREAM)) for p in UPSTREAM.rglob("*") if p.is_file() and p.name != "SOURCES.md"}
    assert present == set(listed)
    changed = [name for name, sha in listed.items() if refresh_fixtures.sha256(UPSTREAM / name) != sha]
    assert changed == []


def test_a_row_of_a_github_file_is_fetchable_at_its_commit() -> None:
    listed = refresh_fixtures.rows((UPSTREAM / "SOURCES.md").read_text())
    row = next(r for r in listed if r.file == "schemas/router-chart/values.yaml")
    assert row.url is not None and row.url.startswith("https://raw.githubusercontent.com/llm-d/")
