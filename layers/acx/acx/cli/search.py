"""`acx search "query" -p PKG`: ranked hybrid search over a package, as a table or (--json) raw JSON.

Reuses the API client of ``acx.cli.client`` (endpoint, token, error mapping, exit codes). Results
under the relevance floor (:func:`acx.client.memory.relevant`) are left out unless ``--no-floor``; a
query with nothing relevant prints that it found nothing. Without rich the table is plain text.
"""

from __future__ import annotations

import argparse
from typing import Any

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

SEARCH_PATH = "memories/search"


def search_query(
    q: str, k: int | None, tier: str | None, tag: str | None, as_of: str | None = None
) -> dict[str, Any]:
    """Query parameters of ``GET /v1/packages/{pkg}/memories/search`` (None values are left out)."""
    return {"q": q, "k": k, "tier": tier, "tag": tag, "asOf": as_of}


def apply_floor(out: dict[str, Any]) -> dict[str, Any]:
    """The answer with only the results over the relevance floor, and how many were under it."""
    from acx.client.memory import relevant

    results = out.get("results") or []
    kept = [r for r in results if relevant(r, out.get("engine"))]
    return {**out, "results": kept, "belowFloor": len(results) - len(kept)}


def cmd_search(args: argparse.Namespace) -> int:
    """Print the top k memories for a query under the advisory banner."""
    from acx.cli.client import api_from, emit_json, pkg_path

    api = api_from(args)
    _, out = api.call(
        "GET",
        pkg_path(args.package, *SEARCH_PATH.split("/")),
        query=search_query(args.query, args.k, args.tier, args.tag, args.as_of),
    )
    if not args.no_floor:
        out = apply_floor(out)
    if args.json:
        emit_json(out)
        return 0
    print_results(out)
    return 0


def print_results(out: dict[str, Any]) -> None:
    """A rich table (a plain one without rich): rank, score, id, tier, title, signals matched."""
    if not out.get("results"):
        print(f"[advisory] {out.get('advisory')}")
        below = out.get("belowFloor")
        print("nothing relevant found" + (f" ({below} unrelated results left out)" if below else ""))
        return
    try:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        _plain(out)
        return

    console = Console(highlight=False)
    # Memory text is data, never markup: a title holding "[red]" prints as written.
    console.print(f"[bold yellow]\\[advisory][/] {escape(str(out.get('advisory')))}")
    table = Table(show_lines=False)
    for name, style in (
        ("#", "dim"),
        ("score", ""),
        ("id", "cyan"),
        ("tier", ""),
        ("title", ""),
        ("signals", "dim"),
    ):
        table.add_column(name, style=style or None, overflow="fold")
    for rank, item in enumerate(out.get("results") or [], start=1):
        record = item.get("record") or {}
        table.add_row(
            str(rank),
            f"{item.get('score', 0):.4f}",
            escape(str(item.get("id"))),
            "rom" if record.get("portable") else "save",
            escape(str(record.get("title") or "")),
            escape(_signals(item)),
        )
    console.print(table)
    n = len(out.get("results") or [])
    console.print(f"({n} result{'' if n == 1 else 's'}, engine {out.get('engine')})")


def _signals(item: dict[str, Any]) -> str:
    signals = item.get("signals") or {}
    parts = []
    if signals.get("lexical"):
        lex = signals["lexical"]
        parts.append(f"lexical #{lex['rank']} ({', '.join(lex.get('terms') or [])})")
    if signals.get("vector"):
        parts.append(f"vector #{signals['vector']['rank']}")
    return "; ".join(parts)


def _plain(out: dict[str, Any]) -> None:
    from acx.cli.tables import plain_table

    print(f"[advisory] {out.get('advisory')}")
    rows = []
    for rank, item in enumerate(out.get("results") or [], start=1):
        record = item.get("record") or {}
        rows.append(
            [
                rank,
                f"{item.get('score', 0):.4f}",
                item.get("id"),
                "rom" if record.get("portable") else "save",
                record.get("title") or "",
                _signals(item),
            ]
        )
    plain_table(["#", "score", "id", "tier", "title", "signals"], rows)


def register(subparsers: Any) -> None:
    from acx.cli.client import _common, _run

    p = subparsers.add_parser("search", help="ranked search over a package's memories (lexical + vector)")
    p.add_argument("query", help="what to look for (1-4096 characters)")
    p.add_argument("-k", type=int, default=5, help="how many results at most (1-50, default 5)")
    p.add_argument("--tier", choices=("rom", "save"))
    p.add_argument("--tag")
    p.add_argument("--as-of", metavar="TIME", help="as the memories stood at TIME (RFC 3339)")
    p.add_argument("--no-floor", action="store_true", help="keep results under the relevance floor too")
    _common(p)
    p.set_defaults(func=_run(cmd_search))
