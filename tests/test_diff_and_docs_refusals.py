"""`./run diff` and `./run docs` say what went wrong instead of reading it as something else (round 5): a head whose
config is refused was "removed stack" with exit 0; a head that adds an unpriced pool read "+$0.00/month"; `docs
--out /proc/...` was a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.catalog import labels
from stacks.__main__ import main
from stacks.review import diff
from stacks.review.changeplan import NAMESPACE_TYPE, cost_line


def _namespace(**stamp: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(NAMESPACE_TYPE, "llmd-namespace"): {"inputs": {"metadata": {"annotations": stamp}}}}


COST, UNPRICED = labels.MONTHLY_COST_ANNOTATION, labels.COST_UNPRICED_ANNOTATION
POOL = "node pool mi300: set pricing.machine_types.mi300"


def test_a_head_that_adds_an_unpriced_pool_names_it_instead_of_a_zero_delta() -> None:
    line = cost_line(_namespace(**{COST: "1000"}), _namespace(**{COST: "1000", UNPRICED: POOL}))
    assert line == (
        "- monthly cost: $1,000.00 -> $1,000.00 (+$0.00/month of what is priced); unpriced at the head, not in the"
        f" figure: {POOL}"
    )


def test_what_both_revisions_leave_unpriced_is_not_news() -> None:
    both = {COST: "1000", UNPRICED: POOL}
    assert cost_line(_namespace(**both), _namespace(**{**both, COST: "1500"})) == (
        "- monthly cost: $1,000.00 -> $1,500.00 (+$500.00/month)"
    )


def _fake_revisions(monkeypatch: pytest.MonkeyPatch, head_names: set[str], head_error: str | None) -> None:
    """Two revisions without git: the base renders NAME; the head has it (or not) and fails (error.txt) or not."""

    def tree(revision: str, into: Path, option: str) -> Path:
        into.mkdir(parents=True, exist_ok=True)
        return into

    def names(tree: Path) -> set[str]:
        return head_names if tree.name == "head" else {"s"}

    def render_all(tree: Path, wanted: list[str], out: Path) -> dict[str, str | None]:
        if out.name == "base":
            return {n: "[]" for n in wanted}
        if head_error is not None:
            (out / "s").mkdir(parents=True, exist_ok=True)
            (out / "s" / diff.ERROR_FILE).write_text(f"ConfigError: invalid stack config: {head_error}")
        return {n: None for n in wanted}

    monkeypatch.setattr(diff, "_tree", tree)
    monkeypatch.setattr(diff, "_stack_names", names)
    monkeypatch.setattr(diff, "_render_all", render_all)


def test_a_head_whose_config_is_refused_is_not_a_removed_stack(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_revisions(monkeypatch, {"s"}, "cache.replicas = 0: must be at least 1")
    result = diff.diff_revisions("base", "head", ["s"])
    assert result.refused == ("s",)
    assert "### s\n\n**the head's config is refused**: cache.replicas = 0: must be at least 1\n" in result.text
    assert "removed stack" not in result.text
    assert main(["diff", "--base", "base", "--head", "head", "s"]) == 1
    captured = capsys.readouterr()
    assert "the head's config is refused" in captured.out
    assert captured.err == "error: diff: s: the head's config is refused (its section says why)\n"


def test_a_stack_the_head_no_longer_has_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_revisions(monkeypatch, set(), "NAME = 's': allowed: presets ...")
    result = diff.diff_revisions("base", "head", ["s"])
    assert result.refused == () and "### s\n\nremoved stack\n" in result.text


@pytest.mark.parametrize("out", ["/proc/x", "/proc/x/y", "/sys/llmd-docs"])
def test_docs_into_a_place_that_takes_no_directory_is_one_line(out: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: invalid stack config: --out = {out!r}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
