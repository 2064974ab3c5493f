"""Every preset (and each variant in tests/golden.py) renders exactly as its reviewed golden files
(regenerate with `./run golden`)."""

import pytest

from tests.golden import GOLDEN, golden_files, golden_names, golden_render


def test_every_preset_has_golden_files_and_no_stale_ones() -> None:
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == golden_names()


@pytest.mark.parametrize("name", golden_names())
def test_render_matches_golden(name: str) -> None:
    for file, text in golden_files(golden_render(name)).items():
        expected = (GOLDEN / name / file).read_text()
        assert text == expected, f"{name}/{file} changed: run ./run golden and review the diff"
