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
    assert "(1 results, engine local-hash-128)" in text


def test_query_parameters_leave_unset_ones_out() -> None:
    assert search_query("q", None, None, None) == {"q": "q", "k": None, "tier": None, "tag": None}


def test_mcp_refusal_names_rules_and_paths_never_values() -> None:
    from acx.cli.client import CliError

    body = {
        "error": {"code": "blocked", "message": "the scrub gate blocked the bundle: 1 finding(s)"},
        "report": {"findings": [{"rule": "github-pat", "location": "m-3", "path": "$.summary", "offset": 4}]},
    }
    text = _api_error(CliError("the scrub gate blocked the bundle", 3, status=422, code="blocked", body=body))
    assert "github-pat at m-3 $.summary" in text and "422 blocked" in text
