"""Map unexpected failures to clean HTTP answers: retryable ones get 503 + Retry-After, never a trace.

Matches the service's failure types (:mod:`acx.core.faults`) only: the adapters translate their
libraries' errors into them first (:func:`acx.adapters.faults.translate`).
"""

from __future__ import annotations

from acx.core.faults import IdempotencyInProgress, IdempotencyKeyReused, Locked, Unavailable
from acx.usecases.locks import LOCKED_MESSAGE


def is_retryable(exc: BaseException) -> bool:
    """Whether a (translated) failure is worth retrying as it stands."""
    return isinstance(exc, Unavailable)


def classify(exc: BaseException) -> tuple[int, str, str, int | None]:
    """(status, code, message, retry-after s) for a translated exception no use case turned into a
    ServiceError."""
    if isinstance(exc, IdempotencyKeyReused):
        return 422, "idempotency_key_reused", "this Idempotency-Key was used with a different body", None
    if isinstance(exc, IdempotencyInProgress):
        return 409, "in_progress", "a request with this Idempotency-Key is still being processed", 1
    if isinstance(exc, Locked):  # a lock committed between the use case's check and the seq claim
        return 423, "locked", LOCKED_MESSAGE, None
    if isinstance(exc, Unavailable):
        return 503, "unavailable", exc.message, 1
    return 500, "internal", "internal error", None
