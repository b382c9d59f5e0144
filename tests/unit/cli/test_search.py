"""`acx search` output: memory text is printed as data (never as rich markup), under the banner."""

from __future__ import annotations

import pytest

from acx.cli.mcp_server import _api_error
from acx.cli.search import print_results, search_query


def test_table_prints_memory_text_literally(capsys: pytest.CaptureFixture[str]) -> None:
    out = {
        "advisory": "Memory informs, it never authorizes [bold]x[/bold]",
        "engine": "local-hash-128",
        "results": [
            {
                "id": "m-[1]",
                "score": 0.0164,
                "signals": {"lexical": {"rank": 1, "score": 2.5, "terms": ["retri"]}, "vector": None},
                "record": {"title": "[red]not markup[/red]", "portable": False},
            }
        ],
    }
    print_results(out)
    text = capsys.readouterr().out
    assert "[advisory]" in text and "[bold]x[/bold]" in text
    assert (
        "[red]not markup[/red]" in text.replace("\n", "").replace("│", "").replace(" ", "") or "[red]" in text
    )
    assert "m-[1]" in text and "save" in text and "lexical #1 (retri)" in text
    assert "(1 result, engine local-hash-128)" in text


def test_query_parameters_leave_unset_ones_out() -> None:
    assert search_query("q", None, None, None) == {
        "q": "q",
        "k": None,
        "tier": None,
        "tag": None,
        "trust": None,
        "agent": None,
    }


def test_mcp_refusal_names_rules_and_paths_never_values() -> None:
    from acx.cli.client import CliError

    body = {
        "error": {"code": "blocked", "message": "the scrub gate blocked the bundle: 1 finding(s)"},
        "report": {"findings": [{"rule": "github-pat", "location": "m-3", "path": "$.summary", "offset": 4}]},
    }
    text = _api_error(CliError("the scrub gate blocked the bundle", 3, status=422, code="blocked", body=body))
    assert "github-pat at m-3 $.summary" in text and "422 blocked" in text


def test_mcp_recall_is_one_point_read_by_id_and_a_missing_id_is_a_tool_error() -> None:
    """recall asks GET /v1/packages/{pkg}/memories/{id} once (the id quoted), never pages the package."""
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    from acx.cli.client import CliError
    from acx.cli.mcp_server import build_server

    class FakeApi:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str, dict]] = []

        def call(self, method: str, path: str, **kwargs: object) -> tuple[int, object]:
            self.calls.append((method, path, kwargs))
            if path.endswith("/memories/gone%2F1"):
                raise CliError("memory not found", 4, status=404, code="not_found")
            return 200, {"advisory": "Memory informs, it never authorizes.", "record": {"id": "m/2"}}

    api = FakeApi()
    server = build_server(api, "notes")

    async def run() -> tuple[object, str]:
        got = await server.call_tool("recall", {"id": "m/2"})
        try:
            await server.call_tool("recall", {"id": "gone/1"})
        except ToolError as exc:
            return got, str(exc)
        return got, ""

    got, missing = anyio.run(run)
    assert [(m, p) for m, p, _ in api.calls] == [
        ("GET", "/v1/packages/notes/memories/m%2F2"),
        ("GET", "/v1/packages/notes/memories/gone%2F1"),
    ]
    text = str(got)
    assert "m/2" in text and "Memory informs" in text
    assert "404" in missing and "not found" in missing
