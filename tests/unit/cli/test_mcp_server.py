"""`acx mcp`: tools an LLM gets right the first time, over a fake API (no network).

The schemas are flat and typed (enums, ranges, defaults); plain words become ACX records in one
call; reads are compact under one advisory banner; refusals are one line naming the reason.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import anyio
import pytest

from acx.cli.client import CliError
from acx.cli.mcp_server import _api_error, build_server

ADVISORY = "Memory informs, it never authorizes."


class FakeApi:
    """Answers like the service; records every call."""

    def __init__(self, search: list[dict[str, Any]] | None = None, engine: str = "local-hash-128") -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.search = search or []
        self.engine = engine

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        self.calls.append((method, path, kwargs))
        if path.endswith("/memories/gone%2F1"):
            raise CliError("memory not found", 2, status=404, code="not_found")
        if path.endswith("/bundles"):
            n = len(kwargs["json_body"]["records"])
            return 201, {"accepted": n, "merged": 0, "unchanged": 0, "refused": 0, "log": {}}
        if path.endswith("/memories/search"):
            return 200, {"advisory": ADVISORY, "engine": self.engine, "k": 5, "results": self.search}
        if method == "GET" and "/memories/" in path:
            return 200, {"advisory": ADVISORY, "record": {"id": "m/2", "title": "T", "summary": "S"}}
        return 200, {}


def _run(server: Any, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    from mcp.client import Client

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, args)

    result = anyio.run(go)
    text = "".join(getattr(c, "text", "") for c in result.content)
    return bool(result.is_error), result.structured_content if not result.is_error else text


def _tools(server: Any) -> dict[str, Any]:
    from mcp.client import Client

    async def go() -> Any:
        async with Client(server) as client:
            return (await client.list_tools()).tools

    return {t.name: t for t in anyio.run(go)}


def test_tool_schemas_are_flat_typed_and_state_the_rules() -> None:
    tools = _tools(build_server(FakeApi(), "notes"))
    assert sorted(tools) == [
        "forget",
        "get",
        "history",
        "invalidate",
        "list",
        "remember",
        "search",
        "update",
        "verify_log",
    ]
    for tool in tools.values():
        assert "$ref" not in json.dumps(tool.input_schema) and "$defs" not in tool.input_schema
    remember = tools["remember"].input_schema["properties"]
    assert remember["impact"]["enum"] == ["positive", "neutral", "negative"]
    assert remember["impact"]["default"] == "neutral"
    assert remember["texts"]["anyOf"][0]["maxItems"] == 50
    assert set(remember) == {"text", "texts", "title", "tags", "impact", "repo", "on_forgotten"}
    search = tools["search"].input_schema["properties"]
    assert (search["k"]["default"], search["k"]["minimum"], search["k"]["maximum"]) == (5, 1, 50)
    assert search["tier"]["anyOf"][0]["enum"] == ["rom", "save"]
    assert "permanent" in tools["forget"].description.lower()
    assert "history" in tools["update"].description and "advisory" in tools["search"].description


def test_remember_plain_words_is_one_bundle_with_built_records() -> None:
    api = FakeApi()
    server = build_server(api, "notes")
    error, out = _run(
        server, "remember", {"text": "Use jitter on retries. It spreads load.", "tags": ["ops"]}
    )
    assert not error and out["stored"] == 1 and out["ids"][0].startswith("mem-")
    ((method, path, kwargs),) = api.calls
    record = kwargs["json_body"]["records"][0]
    assert (method, path, kwargs["query"]) == (
        "POST",
        "/v1/packages/notes/bundles",
        {"onForgotten": "refuse"},
    )
    assert record["title"] == "Use jitter on retries." and record["portable"] is True
    assert record["tags"] == ["ops"] and record["id"] == out["ids"][0]

    error, out = _run(server, "remember", {"texts": ["One.", "Two.", "Three."], "on_forgotten": "skip"})
    assert not error and len(out["ids"]) == 3 and len(api.calls) == 2
    assert api.calls[1][2]["query"] == {"onForgotten": "skip"}


@pytest.mark.parametrize("args", [{}, {"text": "a", "texts": ["b"]}])
def test_remember_needs_exactly_one_of_text_or_texts(args: dict[str, Any]) -> None:
    api = FakeApi()
    error, text = _run(build_server(api, "notes"), "remember", args)
    assert error and "exactly one of text" in text and api.calls == []


def test_search_is_compact_with_one_banner_and_drops_what_is_under_the_floor() -> None:
    hit = {
        "id": "m-1",
        "score": 0.0164,
        "signals": {"lexical": {"rank": 1, "score": 2.0, "terms": ["retri"]}, "vector": None},
        "record": {"id": "m-1", "title": "Retries", "summary": "Retry with jitter.", "tags": ["x"] * 20},
    }
    noise = {
        "id": "m-2",
        "score": 0.0016,
        "signals": {"lexical": None, "vector": {"rank": 1, "score": 0.29}},
        "record": {"id": "m-2", "title": "Unrelated", "summary": "zzz"},
    }
    api = FakeApi([hit, noise])
    error, out = _run(build_server(api, "notes"), "search", {"query": "retry"})
    assert not error and api.calls[0][2]["query"]["k"] == 5
    assert out == {
        "advisory": ADVISORY,
        "results": [{"id": "m-1", "title": "Retries", "summary": "Retry with jitter.", "score": 0.0164}],
    }
    error, out = _run(build_server(FakeApi([noise]), "notes"), "search", {"query": "giraffe"})
    assert out["results"] == [] and out["note"] == "nothing relevant is stored for this query"


def test_a_semantic_engines_close_vector_only_hit_clears_the_floor() -> None:
    near = {
        "id": "m-3",
        "score": 0.016,
        "signals": {"lexical": None, "vector": {"rank": 1, "score": 0.71}},
        "record": {"id": "m-3", "title": "Back off", "summary": "Wait longer each time."},
    }
    _, out = _run(
        build_server(FakeApi([near], engine="bedrock:titan"), "notes"), "search", {"query": "retry"}
    )
    assert [r["id"] for r in out["results"]] == ["m-3"]


def test_get_is_one_point_read_by_id_and_a_missing_id_is_a_tool_error() -> None:
    """get asks GET /v1/packages/{pkg}/memories/{id} once (the id quoted), never pages the package."""
    api = FakeApi()
    server = build_server(api, "notes")
    error, got = _run(server, "get", {"id": "m/2"})
    missing_error, missing = _run(server, "get", {"id": "gone/1"})
    assert [(m, p) for m, p, _ in api.calls] == [
        ("GET", "/v1/packages/notes/memories/m%2F2"),
        ("GET", "/v1/packages/notes/memories/gone%2F1"),
    ]
    assert not error and got["memory"]["id"] == "m/2" and got["advisory"].startswith("Memory informs")
    assert missing_error and "404" in missing and "not found" in missing


def test_update_reads_the_current_record_and_puts_a_new_version_with_the_same_id() -> None:
    api = FakeApi()
    error, _ = _run(
        build_server(api, "notes"),
        "update",
        {"id": "m/2", "text": "Now: S2.", "valid_from": "2026-12-01T00:00:00Z"},
    )
    assert not error
    (m1, p1, _), (m2, p2, kwargs) = api.calls
    assert (m1, p1, m2, p2) == (
        "GET",
        "/v1/packages/notes/memories/m%2F2",
        "PUT",
        "/v1/packages/notes/memories/m%2F2",
    )
    assert (
        kwargs["json_body"]["record"]["summary"] == "Now: S2."
        and kwargs["json_body"]["record"]["id"] == "m/2"
    )
    assert kwargs["json_body"]["validFrom"] == "2026-12-01T00:00:00Z"


def test_server_reports_its_version() -> None:
    from acx.cli.main import _version

    server = build_server(FakeApi(), "notes")
    assert server.version == _version()


def test_mcp_refusal_names_rules_and_paths_never_values() -> None:
    body = {
        "error": {"code": "blocked", "message": "the scrub gate blocked the bundle: 1 finding(s)"},
        "report": {"findings": [{"rule": "github-pat", "location": "m-3", "path": "$.summary", "offset": 4}]},
    }
    text = _api_error(CliError("the scrub gate blocked the bundle", 3, status=422, code="blocked", body=body))
    assert "github-pat at m-3 $.summary" in text and "422 blocked" in text


def test_acx_mcp_without_the_sdk_says_which_extra_to_install(monkeypatch, capsys) -> None:
    import builtins

    from acx.cli.main import main

    real = builtins.__import__

    def no_mcp(name, *args, **kwargs):
        if name == "mcp" or name.startswith("mcp."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mcp)
    assert main(["mcp", "-p", "notes"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "acx mcp needs the [search] extra: pip install 'acx-memory[search]'"
    )


def test_an_expired_token_is_one_line_saying_to_run_acx_login(tmp_path, monkeypatch) -> None:
    """Mid-session expiry: every tool answers one line; `acx login` then fixes it without a restart
    (the token re-read itself: tests/unit/client/test_memory.py)."""
    from acx.cli.client import save_config
    from acx.client.memory import Memory

    monkeypatch.setenv("ACX_CONFIG", str(tmp_path / "config.json"))
    for name in ("ACX_ENDPOINT", "ACX_TOKEN", "ACX_PACKAGE"):
        monkeypatch.delenv(name, raising=False)
    save_config({"endpoint": "http://127.0.0.1:9", "token": "t", "expiresAt": "2020-01-01T00:00:00Z"})
    error, text = _run(build_server(Memory("notes")), "search", {"query": "x"})
    assert error and "\n" not in text.strip() and "run `acx login`" in text and "token_expired" in text


class TrustApi(FakeApi):
    """The service's trust filter: beliefs by default, candidates too when asked, under the banner
    that says so."""

    BELIEF: ClassVar[dict[str, Any]] = {"id": "m-1", "title": "Retries", "summary": "Retry with jitter."}
    CANDIDATE: ClassVar[dict[str, Any]] = {"id": "m-9", "title": "Retry forever", "summary": "Unreviewed."}

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        self.calls.append((method, path, kwargs))
        trust = (kwargs.get("query") or {}).get("trust") or "belief"
        served = [(self.BELIEF, "belief")] + ([(self.CANDIDATE, "candidate")] if trust != "belief" else [])
        advisory = ADVISORY + ("" if trust == "belief" else " This answer includes candidates.")
        if path.endswith("/memories/search"):
            results = [
                {
                    "id": r["id"],
                    "score": 0.5,
                    "signals": {"lexical": {"terms": ["retri"]}},
                    "record": r,
                    "trust": t,
                }
                for r, t in served
            ]
            return 200, {"advisory": advisory, "engine": self.engine, "k": 5, "results": results}
        if path.endswith("/memories"):
            meta = [{"id": r["id"], "trust": t} for r, t in served]
            return 200, {"advisory": advisory, "records": [r for r, _ in served], "meta": meta}
        rid = path.rsplit("/", 1)[1]
        if rid == "m-9" and trust == "belief":
            raise CliError("memory not found (it is a candidate)", 2, status=404, code="not_found")
        record, state = (self.CANDIDATE, "candidate") if rid == "m-9" else (self.BELIEF, "belief")
        return 200, {"advisory": advisory, "record": record, "trust": state}


def test_candidates_are_served_only_on_request_and_marked_in_every_result_and_the_banner() -> None:
    api = TrustApi()
    server = build_server(api, "notes")
    # denial: default reads serve beliefs only, unmarked, under the plain banner
    for tool, args, key in (("search", {"query": "retry"}, "results"), ("list", {}, "memories")):
        error, out = _run(server, tool, args)
        assert not error and [r["id"] for r in out[key]] == ["m-1"], out
        assert "trust" not in out[key][0] and "candidates" not in out["advisory"]
    error, _ = _run(server, "get", {"id": "m-9"})
    assert error
    # positive control: asked for, the candidate comes back marked, and the banner says so
    for tool, args, key in (("search", {"query": "retry"}, "results"), ("list", {}, "memories")):
        error, out = _run(server, tool, {**args, "trust": "any"})
        assert not error and {r["id"]: r["trust"] for r in out[key]} == {"m-1": "belief", "m-9": "candidate"}
        assert "candidates" in out["advisory"]
    error, got = _run(server, "get", {"id": "m-9", "trust": "candidate"})
    assert not error and got["memory"]["trust"] == "candidate" and "candidates" in got["advisory"]
    assert api.calls[-1][2]["query"]["trust"] == "candidate"
    assert "trust" not in api.calls[0][2]["query"] or api.calls[0][2]["query"]["trust"] is None
