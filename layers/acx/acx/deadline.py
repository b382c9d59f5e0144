"""How long the current invocation has left, for work that retries (row writes under throttling).

A Lambda handler sets it from its context (``get_remaining_time_in_millis``); outside Lambda it is
unset and callers use their own budget. A context variable, so a thread or task sees its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_REMAINING: ContextVar[Callable[[], float] | None] = ContextVar("acx_remaining", default=None)


@contextmanager
def from_lambda_context(context: Any) -> Iterator[None]:
    """Within: the invocation's remaining time, from a Lambda context (none if it has none). Reset on
    the way out, so a later caller on the same thread (a test, the local stack) never inherits a
    finished invocation's clock."""
    millis = getattr(context, "get_remaining_time_in_millis", None)
    token = _REMAINING.set((lambda: millis() / 1000.0) if callable(millis) else None)
    try:
        yield
    finally:
        _REMAINING.reset(token)


def remaining() -> Callable[[], float] | None:
    """Seconds left in this invocation, as a callable, or None when no handler set it."""
    return _REMAINING.get()
