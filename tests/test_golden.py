"""Every preset renders exactly as its reviewed golden files (regenerate with `./run golden`)."""

import pytest

from stacks import loading
from tests.golden import GOLDEN, golden_files
from tests.helpers import rendered


def test_every_preset_has_golden_files_and_no_stale_ones() -> None:
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == loading.preset_names()


@pytest.mark.parametrize("name", loading.preset_names())
def test_render_matches_golden(name: str) -> None:
    for file, text in golden_files(rendered(name)).items():
        expected = (GOLDEN / name / file).read_text()
        assert text == expected, f"{name}/{file} changed: run ./run golden and review the diff"
