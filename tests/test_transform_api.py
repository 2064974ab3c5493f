"""One transform API: the program uses `pulumi.ResourceTransformArgs` (`transforms=`, `register_resource_transform`)
only, never the legacy transformations, which run in the SDK and miss the children of remote components."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEGACY = ("ResourceTransformation", "register_stack_transformation", "transformations=")


PROGRAM = sorted(
    str(p.relative_to(ROOT)) for top in ("components", "stacks", "policies") for p in (ROOT / top).rglob("*.py")
)


def test_no_legacy_transformation() -> None:
    """One test over every file of the program (each offending file and word listed)."""
    found = {path: words for path in PROGRAM if (words := [w for w in LEGACY if w in (ROOT / path).read_text()])}
    assert found == {}
