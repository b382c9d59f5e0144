"""acx.Memory: the CLI's configuration, typed results, the service's routes, and a token that
follows `acx login` while the process runs. HTTP goes to a local fake server (no service)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from acx import AcxError, Memory
from acx.cli.client import save_config
from tests.http import answer_json


class Fake:
    """A fake service: remembers requests and answers by route."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.valid_tokens = {"tok-1"}

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        path = path.split("?")[0]
        if path.endswith("/bundles"):
            return 201, {"accepted": len(body["records"]), "merged": 0, "unchanged": 0, "log": {"toSeq": 1}}
        if path.endswith("/history"):
            return 200, {
                "id": "m-1",
                "versions": [
                    {
                        "seq": 1,
                        "operation": "remember",
                        "record": {"id": "m-1", "summary": "old"},
                        "validFrom": "2026-01-01T00:00:00Z",
                        "validUntil": "2026-02-01T00:00:00Z",
                        "recordedAt": "2026-01-01T00:00:01Z",
                        "actor": "agent",
                    },
                    {
                        "seq": 2,
                        "operation": "supersede",
                        "record": {"id": "m-1", "summary": "new"},
                        "validFrom": "2026-02-01T00:00:00Z",
                        "validUntil": None,
                        "recordedAt": "2026-02-01T00:00:01Z",
                        "actor": "agent",
                    },
                ],
            }
        if path.endswith("/invalidate"):
            return 200, {"id": "m-1", "validUntil": "2026-03-01T00:00:00Z"}
        if method == "PUT":
            return 200, {
                "id": "m-1",
                "seq": 7,
                "supersedes": {"seq": 2, "hash": "ab"},
                "validFrom": body.get("validFrom"),
            }
        if path.split("?")[0].endswith("/memories/search"):
            return 200, {"advisory": "A", "engine": "local-hash-128", "results": []}
        if path.split("?")[0].endswith("/memories"):
            return 200, {
                "advisory": "A",
                "records": [{"id": "m-1", "title": "t", "summary": "s"}],
                "nextCursor": "c2",
            }
        if method == "DELETE":
            return 200, {"forgotten": "m-1", "alsoForgotten": ["m-9"], "repeated": False, "log": {}}
        if path.split("?")[0].endswith("/memories/missing"):
            return 404, {"error": {"code": "not_found", "message": "memory not found"}}
        return 200, {
            "advisory": "A",
            "seq": 2,
            "contentHash": "h",
            "record": {"id": "m-1", "title": "Old.", "summary": "Old.", "tags": ["k"], "portable": True},
        }


@pytest.fixture()
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Fake, str]]:
    state = Fake()

    class Handler(BaseHTTPRequestHandler):
        def _do(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            state.requests.append({"method": self.command, "path": self.path, "body": body, "token": token})
            if token not in state.valid_tokens:
                status, out = 401, {"error": {"code": "unauthorized", "message": "invalid token"}}
            else:
                status, out = state.answer(self.command, self.path, body)
            answer_json(self, status, out)

        do_GET = do_POST = do_PUT = do_DELETE = _do

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("ACX_CONFIG", str(tmp_path / "config.json"))
    for name in ("ACX_ENDPOINT", "ACX_TOKEN", "ACX_PACKAGE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACX_SALT_FILE", str(tmp_path / "salt"))
    save_config({"endpoint": endpoint, "token": "tok-1", "package": "notes"})
    yield state, endpoint
    server.shutdown()


def test_memory_reads_the_cli_config_and_explicit_arguments_override_it(fake) -> None:
    state, endpoint = fake
    mem = Memory()
    out = mem.remember("Pin boto3 in the layer.")
    assert out.accepted == 1 and out.ids[0].startswith("mem-")
    assert state.requests[-1]["path"] == "/v1/packages/notes/bundles?onForgotten=refuse"
    state.valid_tokens.add("explicit")
    Memory("other", endpoint=endpoint, token="explicit").list()
    assert state.requests[-1]["path"].startswith("/v1/packages/other/memories")
    assert state.requests[-1]["token"] == "explicit"


def test_typed_results_for_every_method(fake) -> None:
    state, _ = fake
    mem = Memory()
    page = mem.list(tier="rom", as_of="2026-01-15T00:00:00Z")
    assert [i.id for i in page] == ["m-1"] and page.next_cursor == "c2"
    assert "asOf=2026-01-15T00%3A00%3A00Z" in state.requests[-1]["path"]
    item = mem.get("m-1", as_of="2026-01-15T00:00:00Z")
    assert (item.title, item.seq, item.content_hash) == ("Old.", 2, "h")
    assert state.requests[-1]["path"] == "/v1/packages/notes/memories/m-1?asOf=2026-01-15T00%3A00%3A00Z"
    found = mem.search("anything", as_of="2026-01-15T00:00:00Z")
    assert len(found) == 0 and found.advisory == "A" and "k=5" in state.requests[-1]["path"]
    hist = mem.history("m-1")
    assert [v.operation for v in hist.versions] == ["remember", "supersede"]
    assert hist.versions[1].valid_until is None
    assert mem.invalidate("m-1", "the API changed")["validUntil"] == "2026-03-01T00:00:00Z"
    assert state.requests[-1]["body"] == {"reason": "the API changed"}
    gone = mem.forget("m-1")
    assert gone.also_forgotten == ["m-9"]


def test_update_puts_the_full_record_with_the_new_text_and_keeps_the_rest(fake) -> None:
    state, _ = fake
    out = Memory().update("m-1", "New. Better.", valid_from="2026-02-01T00:00:00Z")
    assert (out.seq, out.supersedes, out.valid_from) == (7, {"seq": 2, "hash": "ab"}, "2026-02-01T00:00:00Z")
    get, put = state.requests[-2:]
    assert (get["method"], put["method"], put["path"]) == ("GET", "PUT", "/v1/packages/notes/memories/m-1")
    assert put["body"]["record"] == {
        "id": "m-1",
        "title": "New.",
        "summary": "New. Better.",
        "tags": ["k"],
        "portable": True,
    }


def test_a_token_renewed_by_acx_login_is_picked_up_without_a_restart(fake) -> None:
    state, endpoint = fake
    mem = Memory()
    mem.list()
    state.valid_tokens = {"tok-2"}  # the first token expired on the server
    with pytest.raises(AcxError) as refused:
        mem.list()
    assert refused.value.status == 401 and "run `acx login`" in refused.value.message
    time.sleep(0.01)
    save_config({"endpoint": endpoint, "token": "tok-2", "package": "notes"})  # what `acx login` writes
    mem.list()
    assert state.requests[-1]["token"] == "tok-2"


def test_an_expired_stored_token_is_one_line_before_any_request(fake) -> None:
    state, endpoint = fake
    save_config(
        {"endpoint": endpoint, "token": "tok-1", "package": "notes", "expiresAt": "2020-01-01T00:00:00Z"}
    )
    before = len(state.requests)
    with pytest.raises(AcxError) as expired:
        Memory().list()
    assert expired.value.code == "token_expired" and "acx login" in expired.value.line().splitlines()[0]
    assert len(state.requests) == before


def test_api_errors_carry_status_code_and_path(fake) -> None:
    with pytest.raises(AcxError) as missing:
        Memory().get("missing")
    assert (missing.value.status, missing.value.code) == (404, "not_found")


def test_no_package_anywhere_is_refused_with_what_to_do(fake) -> None:
    _, endpoint = fake
    save_config({"endpoint": endpoint, "token": "tok-1"})
    with pytest.raises(AcxError, match="ACX_PACKAGE"):
        Memory()


def test_import_acx_loads_the_client_only_when_memory_is_asked_for() -> None:
    """The functions import ``acx.*``; the Lambda layer has no acx.client, so ``import acx`` must not."""
    import subprocess
    import sys

    code = (
        "import sys, acx; assert 'acx.client' not in sys.modules; "
        "from acx import Memory, AcxError; assert Memory.__module__ == 'acx.client.memory'"
    )
    root = Path(__file__).resolve().parents[3] / "layers" / "acx"
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": str(root)})
