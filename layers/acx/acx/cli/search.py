"""`acx search "query" -p PKG`: ranked hybrid search over a package, as a table or (--json) raw JSON.

Reuses the API client of ``acx.cli.client`` (endpoint, token, error mapping, exit codes).
"""

from __future__ import annotations

import argparse
from typing import Any

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

SEARCH_PATH = "memories/search"


def search_query(
    q: str,
    k: int | None,
    tier: str | None,
    tag: str | None,
    trust: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """Query parameters of ``GET /v1/packages/{pkg}/memories/search`` (None values are left out)."""
    return {"q": q, "k": k, "tier": tier, "tag": tag, "trust": trust, "agent": agent}


def cmd_search(args: argparse.Namespace) -> int:
    """Print the top k memories for a query under the advisory banner."""
    from acx.cli.client import api_from, emit_json, pkg_path

    api = api_from(args)
    _, out = api.call(
        "GET",
        pkg_path(args.package, *SEARCH_PATH.split("/")),
        query=search_query(args.query, args.k, args.tier, args.tag, args.trust, args.agent),
    )
    if args.json:
        emit_json(out)
        return 0
    print_results(out)
    return 0


def print_results(out: dict[str, Any]) -> None:
    """A rich table: rank, score, id, tier, title, and which signals matched."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

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
        signals = item.get("signals") or {}
        parts = []
        if signals.get("lexical"):
            lex = signals["lexical"]
            parts.append(f"lexical #{lex['rank']} ({', '.join(lex.get('terms') or [])})")
        if signals.get("vector"):
            parts.append(f"vector #{signals['vector']['rank']}")
        table.add_row(
            str(rank),
            f"{item.get('score', 0):.4f}",
            escape(str(item.get("id"))),
            "rom" if record.get("portable") else "save",
            escape(str(record.get("title") or "")),
            escape("; ".join(parts)),
        )
    console.print(table)
    n = len(out.get("results") or [])
    console.print(f"({n} result{'' if n == 1 else 's'}, engine {out.get('engine')})")


def register(subparsers: Any) -> None:
    from acx.cli.client import _common, _run

    p = subparsers.add_parser("search", help="ranked search over a package's memories (lexical + vector)")
    p.add_argument("query", help="what to look for (1-512 characters)")
    p.add_argument("-k", type=int, help="how many results (1-50, default 10)")
    p.add_argument("--tier", choices=("rom", "save"))
    p.add_argument("--tag")
    p.add_argument("--trust", choices=("belief", "candidate", "any"), help="default: beliefs only")
    p.add_argument("--agent", help="only the memories this agent wrote")
    _common(p)
    p.set_defaults(func=_run(cmd_search))
