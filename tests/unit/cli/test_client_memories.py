"""`acx remember`, `acx update`, `acx history`, `acx invalidate`: plain words on the command line,
through acx.Memory (a stub here: the HTTP side is tests/unit/client/test_memory.py)."""

from __future__ import annotations

import io
import json
from typing import Any, ClassVar

import pytest

from acx.cli import client_memories
from acx.cli.main import main
from acx.client.memory import History, Remembered, Updated, Version


class StubMemory:
    calls: ClassVar[list[tuple[str, tuple[Any, ...], dict[str, Any]]]] = []

    def __init__(self, package: str | None, timeout: float = 60.0) -> None:
        self.package = package

    def remember(self, texts: list[str], **kwargs: Any) -> Remembered:
        self.calls.append(("remember", (texts,), kwargs))
        return Remembered([f"mem-{i}" for i in range(len(texts))], len(texts), 0, 0, [], {"toSeq": 1})

    def update(self, rid: str, text: str, **kwargs: Any) -> Updated:
        self.calls.append(("update", (rid, text), kwargs))
        return Updated(rid, 5, {"seq": 1, "hash": "h"}, "2026-12-01T00:00:00Z")

    def history(self, rid: str) -> History:
        return History(
            rid,
            [
                Version(
                    1,
                    "remember",
                    {"summary": "old"},
                    "2026-01-01T00:00:00Z",
                    "2026-12-01T00:00:00Z",
                    "t1",
                    "a",
                ),
                Version(5, "supersede", {"summary": "new"}, "2026-12-01T00:00:00Z", None, "t5", "a"),
            ],
        )

    def invalidate(self, rid: str, reason: str) -> dict[str, Any]:
        self.calls.append(("invalidate", (rid, reason), {}))
        return {"id": rid, "validUntil": "2026-12-02T00:00:00Z"}


@pytest.fixture(autouse=True)
def stub(monkeypatch: pytest.MonkeyPatch) -> type[StubMemory]:
    StubMemory.calls = []
    monkeypatch.setattr(client_memories, "_memory", lambda args: StubMemory(args.package))
    monkeypatch.setenv("ACX_PACKAGE", "notes")
    return StubMemory


def test_remember_takes_one_memory_per_argument_in_one_call(capsys) -> None:
    assert main(["remember", "First lesson.", "Second lesson.", "--tag", "ci", "--impact", "negative"]) == 0
    ((name, (texts,), kwargs),) = StubMemory.calls
    assert name == "remember"
    assert texts == ["First lesson.", "Second lesson."]
    assert kwargs == {
        "title": None,
        "tags": ["ci"],
        "impact": "negative",
        "repo": None,
        "on_forgotten": "refuse",
    }
    assert capsys.readouterr().out == "remembered mem-0\nremembered mem-1\n"


def test_remember_reads_stdin_when_no_text_is_given(monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Piped lesson.\n"))
    assert main(["remember", "--json"]) == 0
    assert StubMemory.calls[0][1][0] == ["Piped lesson.\n"]
    assert json.loads(capsys.readouterr().out)["ids"] == ["mem-0"]


@pytest.mark.parametrize(
    ("argv", "texts", "repo"),
    [
        (["remember", "--repo", "Tests need docker."], ["Tests need docker."], "."),
        (["remember", "Tests need docker.", "--repo"], ["Tests need docker."], "."),
        (
            ["remember", "--repo", "git@github.com:acme/api.git", "Tests need docker."],
            ["Tests need docker."],
            "git@github.com:acme/api.git",
        ),
    ],
)
def test_repo_flag_binds_to_this_checkout_or_the_url_given(
    argv: list[str], texts: list[str], repo: str
) -> None:
    assert main(argv) == 0
    ((_, (got,), kwargs),) = StubMemory.calls
    assert got == texts and kwargs["repo"] == repo


def test_update_history_and_invalidate(capsys) -> None:
    assert main(["update", "m-1", "New text.", "--valid-from", "2026-12-01T00:00:00Z"]) == 0
    assert StubMemory.calls[-1] == (
        "update",
        ("m-1", "New text."),
        {"title": None, "tags": None, "impact": None, "valid_from": "2026-12-01T00:00:00Z"},
    )
    assert "supersedes seq 1" in capsys.readouterr().out
    assert main(["history", "m-1"]) == 0
    out = capsys.readouterr().out
    assert "supersede" in out and "(valid)" in out and "old" in out
    assert main(["invalidate", "m-1", "--reason", "gone"]) == 0
    assert StubMemory.calls[-1] == ("invalidate", ("m-1", "gone"), {})
    assert "valid until 2026-12-02" in capsys.readouterr().out
