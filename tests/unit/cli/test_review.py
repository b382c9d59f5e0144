"""`acx review` driven with scripted input against an in-memory queue (no HTTP, no service).

Measures the review throughput the issue asks for: keystrokes to clear 50 candidates.
"""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest

from acx.cli import client_review
from acx.cli.client import CliError


class QueueApi:
    """The two review routes over a list of candidates; refuses (403) the ones ``own`` names."""

    def __init__(self, n: int, own: frozenset[str] = frozenset()) -> None:
        self.items = [
            {
                "id": f"c{i:03d}",
                "record": {"id": f"c{i:03d}", "title": f"Candidate {i}", "summary": "text"},
                "author": {"actor": "acme/agent-1", "agent": "bot-1"},
                "recordedAt": "2026-01-01T00:00:00Z",
                "source": {"origin": "native", "importedFrom": None, "foreign": False},
                "nearBelief": {"id": "b1", "title": "A belief"} if i == 0 else None,
                "seq": 10 + i,
            }
            for i in range(n)
        ]
        self.own = own
        self.decided: dict[str, dict[str, Any]] = {}

    def call(self, method: str, path: str, *, query: Any = None, json_body: Any = None) -> tuple[int, Any]:
        if method == "GET":
            after = (query or {}).get("cursor")
            rest = [
                i for i in self.items if i["id"] not in self.decided and (after is None or i["id"] > after)
            ]
            page = rest[: (query or {}).get("limit", 50)]
            more = len(rest) > len(page)
            return 200, {"items": page, "cursor": page[-1]["id"] if more else None}
        rid = path.rsplit("/", 1)[1]
        if rid in self.own:
            raise CliError(
                "a reviewer cannot decide a candidate it wrote itself", status=403, code="forbidden"
            )
        self.decided[rid] = json_body
        return 200, {"id": rid, "decision": json_body["decision"]}


def keys_from(text: str) -> Any:
    stream = io.StringIO(text)
    return lambda: stream.readline().strip()[:1].lower() or "q"


def test_fifty_candidates_are_cleared_with_fifty_keystrokes(capsys: pytest.CaptureFixture[str]) -> None:
    api = QueueApi(50)
    script = "a\n" * 40 + "r\n" * 5 + "s\n" * 5
    tally = client_review.review_loop(api, "pkg", key=keys_from(script))
    assert tally == {"approve": 40, "reject": 5, "edit": 0, "skip": 5, "refused": 0, "keys": 50}
    assert len(api.decided) == 45
    # On a terminal each decision is one key press (cbreak mode, no Enter): 50 keys for 50 candidates.
    # From a pipe each is a line: 100 characters.
    out = capsys.readouterr().out
    assert "near duplicate of belief b1" in out and "by acme/agent-1 (agent bot-1)" in out


def test_an_unknown_key_is_asked_again_and_quit_stops() -> None:
    api = QueueApi(3)
    tally = client_review.review_loop(api, "pkg", key=keys_from("x\na\nq\n"))
    assert tally["approve"] == 1 and tally["keys"] == 3 and list(api.decided) == ["c000"]


def test_the_authors_own_candidate_is_refused_and_the_next_is_decided(
    capsys: pytest.CaptureFixture[str],
) -> None:
    api = QueueApi(2, own=frozenset({"c000"}))
    tally = client_review.review_loop(api, "pkg", key=keys_from("a\na\n"))
    assert tally["refused"] == 1 and tally["approve"] == 1 and list(api.decided) == ["c001"]
    assert "refused" in capsys.readouterr().out


def test_edit_sends_the_corrected_record_and_an_unchanged_edit_skips() -> None:
    api = QueueApi(2)
    edits = iter([{"id": "c000", "title": "Fixed"}, None])
    tally = client_review.review_loop(api, "pkg", key=keys_from("e\ne\n"), edit=lambda _r: next(edits))
    assert api.decided["c000"] == {"decision": "edit", "record": {"id": "c000", "title": "Fixed"}, "seq": 10}
    assert tally["edit"] == 1 and tally["skip"] == 1


def test_read_key_reads_lines_from_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("Approve\n\n"))
    assert client_review.read_key() == "a"
    assert client_review.read_key() == ""
    assert client_review.read_key() == "q"  # end of input quits


def test_acx_review_is_a_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from acx.cli.main import main

    api = QueueApi(2)
    monkeypatch.setattr(client_review, "api_from", lambda args: api)
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\nr\n"))
    assert main(["review", "--package", "pkg", "--json"]) == 0
    assert '"approve": 1' in capsys.readouterr().out and api.decided["c001"] == {
        "decision": "reject",
        "seq": 11,
    }


def test_on_a_terminal_one_key_press_decides_without_enter(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import pty
    import tty

    master, slave = pty.openpty()
    with os.fdopen(slave, "r", encoding="utf-8", buffering=1) as tty_in:
        monkeypatch.setattr(sys, "stdin", tty_in)
        tty.setcbreak(slave)  # as read_key sets it: typed bytes reach the reader without a newline
        os.write(master, b"ar")  # two key presses, no Enter
        assert client_review.read_key() == "a"
        assert client_review.read_key() == "r"
    os.close(master)
