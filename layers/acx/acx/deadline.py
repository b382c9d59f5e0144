"""How long the current invocation has left, for work that retries (row writes under throttling).

A Lambda handler sets it from its context (``get_remaining_time_in_millis``); outside Lambda it is
unset and callers use their own budget. A context variable, so a thread or task sees its own.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

_REMAINING: ContextVar[Callable[[], float] | None] = ContextVar("acx_remaining", default=None)


def from_lambda_context(context: Any) -> None:
    """Take the invocation's remaining time from a Lambda context (ignored if it has none)."""
    millis = getattr(context, "get_remaining_time_in_millis", None)
    _REMAINING.set((lambda: millis() / 1000.0) if callable(millis) else None)


def remaining() -> Callable[[], float] | None:
    """Seconds left in this invocation, as a callable, or None when no handler set it."""
    return _REMAINING.get()
