"""The tools check their targets and end in one line: `docs --out` (a file, a FIFO, /dev/null, a dangling or
escaping symlink; never written through a link), `list` into a closed pipe, `e2e --stop NAME --set ...`,
`diff` with a stack that renders at neither revision and with an empty `--head`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import e2e.__main__ as e2e_main
from e2e import tools
from stacks.__main__ import main
from stacks.config.errors import ConfigError
from stacks.review import diff, docs_pages

ROOT = Path(__file__).resolve().parents[1]


def _one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def _file(t: Path) -> Path:
    (t / "f").write_text("x")
    return t / "f"


def _fifo(t: Path) -> Path:
    os.mkfifo(t / "p")
    return t / "p"


def _dangling(t: Path) -> Path:
    os.symlink(t / "gone", t / "l")
    return t / "l"


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_file, "must be a directory; it names a file"),
        (_fifo, "must be a directory; it names a FIFO"),
        (lambda t: Path(os.devnull), "must be a directory; it names a character device"),
        (lambda t: Path(os.devnull) / "docs", "is under /dev/null, a character device"),
        (_dangling, "a symlink to"),
        (lambda t: "", "must name a directory"),
    ],
    ids=["file", "fifo", "devnull", "under-devnull", "dangling-link", "empty"],
)
def test_docs_out_refuses_what_is_not_a_directory(
    make: Callable[[Path], Path | str], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = make(tmp_path)
    assert main(["docs", "--out", str(target)]) == 2
    assert why in _one_error(capsys)
    assert not (tmp_path / "gone").exists()  # the dangling link's target was not created


def test_docs_out_never_writes_through_a_link_out_of_the_project(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    link = ROOT / "out" / f"docs-link-{os.getpid()}"
    link.parent.mkdir(exist_ok=True)
    os.symlink(outside, link)
    try:
        with pytest.raises(ConfigError, match="leads out of the project through a symlink"):
            docs_pages.write(link)
    finally:
        link.unlink()
    assert list(outside.iterdir()) == []


def test_a_page_that_is_a_symlink_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "docs"
    out.mkdir()
    os.symlink(victim, out / "configuration.md")
    docs_pages.write(out)
    assert victim.read_text() == "keep"
    assert not (out / "configuration.md").is_symlink()
    assert (out / "configuration.md").read_text() == docs_pages.pages()["configuration.md"]
    assert sorted(p.name for p in out.iterdir()) == ["configuration.md", "policy-rules.md", "presets.md"]  # no partial


def test_docs_out_writes_a_plain_directory_outside_the_project(tmp_path: Path) -> None:
    assert main(["docs", "--out", str(tmp_path / "new" / "docs")]) == 0
    assert (tmp_path / "new" / "docs" / "presets.md").read_text() == docs_pages.pages()["presets.md"]


def test_list_into_a_closed_pipe_ends_in_one_line_and_fails() -> None:
    """`./run list | head -1`: the reader gone before the presets are written (before: a BrokenPipeError
    traceback, and another at the interpreter's exit)."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "stacks", "list"], cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write)
    assert result.returncode == 1
    assert result.stderr == "error: list: its output was closed before it was all written\n"


def test_e2e_stop_refuses_set_before_building_anything(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the bad --set reached the LWS question for the default presets, a ConfigError traceback."""

    def no_build(**_: object) -> object:
        raise AssertionError("built the tools")

    monkeypatch.setattr(tools, "ensure_all", no_build)
    assert e2e_main.main(["--stop", "dev", "--set", "bad"]) == 2
    assert "--set = 'bad': --stop stops the cluster" in _one_error(capsys)


def test_diff_refuses_an_empty_head_revision(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: '' was falsy, so the working tree was rendered as the head."""
    assert main(["diff", "--base", "HEAD", "--head", "", "dev"]) == 2
    assert "--head = '': not a revision of this git repository" in _one_error(capsys)


def test_a_failed_render_records_its_error(tmp_path: Path) -> None:
    """The one-process render script, as diff runs it in a revision's tree."""
    assert diff._render_all(ROOT, ["no-such-stack"], tmp_path) == {"no-such-stack": None}
    assert "no-such-stack" in (tmp_path / "no-such-stack" / diff.ERROR_FILE).read_text()


def test_diff_of_a_stack_rendering_at_neither_revision_ends_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a section saying so, and exit 0."""

    def fails(tree: Path, names: list[str], out: Path) -> dict[str, str | None]:
        for name in names:
            (out / name).mkdir(parents=True)
            (out / name / diff.ERROR_FILE).write_text(f"ConfigError: invalid stack config: x = 1: broken at {out.name}")
        return dict.fromkeys(names)

    monkeypatch.setattr(diff, "_render_all", fails)
    assert main(["diff", "--base", "HEAD", "dev"]) == 2
    err = _one_error(capsys)
    assert "NAME = 'dev': renders at neither revision: x = 1: broken at head" in err
