"""Tables for people (rich, already a dependency): one ``table(headers, rows)`` for every list."""

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
    from rich.console import Console
    from rich.table import Table

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
