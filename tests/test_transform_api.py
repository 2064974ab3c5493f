"""One transform API: the program uses `pulumi.ResourceTransformArgs` (`transforms=`, `register_resource_transform`)
only, never the legacy transformations, which run in the SDK and miss the children of remote components."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEGACY = ("ResourceTransformation", "register_stack_transformation", "transformations=")


PROGRAM = sorted(
    str(p.relative_to(ROOT)) for top in ("components", "stacks", "policies") for p in (ROOT / top).rglob("*.py")
)


@pytest.mark.parametrize("path", PROGRAM)
def test_no_legacy_transformation(path: str) -> None:
    text = (ROOT / path).read_text()
    assert [word for word in LEGACY if word in text] == [], path
