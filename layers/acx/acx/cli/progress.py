"""Progress for long CLI operations (upload, ingest and export waits, download, listing), on stderr.

rich draws it only when stderr is a terminal and the command is not printing ``--json``: scripts,
pipes and CI logs see nothing extra. rich is imported only when a bar is actually shown.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).


def wanted(args: Any) -> bool:
    """A bar for this command? Not under --json or --no-progress, not when stderr is no terminal."""
    if getattr(args, "json", False) or getattr(args, "no_progress", False):
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def has_rich() -> bool:
    """Whether rich (the ``[search]`` extra) is installed; without it output is plain text."""
    import importlib.util

    return importlib.util.find_spec("rich") is not None


class Bar:
    """``advance(n)`` / ``update(completed=, total=, description=)``; a no-op when not shown."""

    def __init__(self, progress: Any = None, task: Any = None) -> None:
        self._progress, self._task = progress, task

    def advance(self, n: float = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def update(self, **fields: Any) -> None:
        if self._progress is not None:
            self._progress.update(self._task, **fields)


@contextmanager
def bar(description: str, total: float | None, show: bool, *, unit: str = "") -> Iterator[Bar]:
    """A progress bar (``total`` known) or a spinner with elapsed time (``total`` None)."""
    if not show or not has_rich():
        yield Bar()  # without rich (the [search] extra) the command runs the same, with no bar
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns.append(BarColumn())
        columns += [DownloadColumn(), TransferSpeedColumn()] if unit == "bytes" else [MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
        yield Bar(progress, progress.add_task(description, total=total))
