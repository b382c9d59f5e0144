"""`acx search` output: memory text is printed as data (never as rich markup), under the banner."""

from __future__ import annotations

import pytest

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
        "asOf": None,
    }


def _result(rid: str, lexical: bool, vector: float | None) -> dict:
    return {
        "id": rid,
        "score": 0.01,
        "signals": {
            "lexical": {"rank": 1, "score": 1.0, "terms": ["x"]} if lexical else None,
            "vector": {"rank": 1, "score": vector} if vector is not None else None,
        },
        "record": {"id": rid, "title": rid, "portable": True},
    }


def test_floor_drops_vector_only_hits_of_a_hash_engine_and_says_nothing_relevant_was_found(capsys) -> None:
    from acx.cli.search import apply_floor

    out = apply_floor(
        {
            "advisory": "A",
            "engine": "local-hash-128",
            "results": [_result("a", True, 0.1), _result("b", False, 0.9)],
        }
    )
    assert [r["id"] for r in out["results"]] == ["a"] and out["belowFloor"] == 1
    empty = apply_floor({"advisory": "A", "engine": "local-hash-128", "results": [_result("b", False, 0.3)]})
    print_results(empty)
    assert "nothing relevant found (1 unrelated results left out)" in capsys.readouterr().out


def test_plain_table_without_rich(monkeypatch, capsys) -> None:
    """A plain `pip install` (no [search] extra, so no rich) still prints the results."""
    import builtins

    real = builtins.__import__

    def no_rich(name, *args, **kwargs):
        if name.startswith("rich"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_rich)
    print_results({"advisory": "A", "engine": "e", "results": [_result("m-1", True, None)]})
    text = capsys.readouterr().out
    assert "[advisory] A" in text and "m-1" in text and "lexical #1 (x)" in text
