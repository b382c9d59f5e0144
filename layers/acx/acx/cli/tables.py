"""Tables for people: one ``table(headers, rows)`` for every list; rich draws them when installed (the
``[search]`` extra), plain aligned text otherwise."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).


def cell(value: Any) -> str:
    """A value as people read it: ``-`` for nothing, lists joined, never a Python repr."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell(v)}" for k, v in value.items()) or "-"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print ``rows`` under ``headers`` on stdout (plain aligned text when stdout is not a terminal)."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        plain_table(headers, rows)
        return

    console = Console(
        soft_wrap=False,
        markup=False,
        emoji=False,
        highlight=False,
        width=None if sys.stdout.isatty() else 200,
    )
    t = Table(*headers, box=None, pad_edge=False, show_edge=False, highlight=False)
    for row in rows:
        t.add_row(*(cell(v) for v in row))
    console.print(t)


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Columns aligned with spaces, no colours: the table without rich."""
    cells = [list(map(str, headers))] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for r in cells:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
