"""Progress output: drawn on a terminal, never under --json, --no-progress or when stderr is a pipe."""

from __future__ import annotations

import argparse
import io
import sys

import pytest

from acx.cli.progress import bar, wanted


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("tty", "flags", "expected"),
    [
        (True, {}, True),
        (True, {"json": True}, False),
        (True, {"no_progress": True}, False),
        (False, {}, False),
    ],
)
def test_wanted(monkeypatch: pytest.MonkeyPatch, tty: bool, flags: dict[str, bool], expected: bool) -> None:
    monkeypatch.setattr(sys, "stderr", _Tty() if tty else io.StringIO())
    assert wanted(argparse.Namespace(**flags)) is expected


def test_hidden_bar_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with bar("uploading", 100, False, unit="bytes") as progress:
        progress.advance(50)
        progress.update(description="x")
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_shown_bar_goes_to_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with bar("listing memories", None, True) as progress:
        progress.update(description="listing memories: 7")
    out, err = capsys.readouterr()
    assert out == "" and "listing memories: 7" in err
