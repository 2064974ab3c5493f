"""The upstream fixtures are the files SOURCES.md lists, unchanged since their hashes were recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_a_refresh_names_its_shelf_or_upstream_and_writes_nothing_without(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No default reaches outside the checkout: without `--shelf DIR` (or with one that is no folder) the refresh
    stops in one line before it copies or records anything."""
    before = (UPSTREAM / "SOURCES.md").read_bytes()
    for argv in ([], ["--shelf", str(tmp_path / "missing")]):
        with pytest.raises(SystemExit) as stopped:
            refresh_fixtures.main(argv)
        assert stopped.value.code == 2
        assert "pass --shelf DIR" in capsys.readouterr().err.strip().splitlines()[-1]
    assert (UPSTREAM / "SOURCES.md").read_bytes() == before
