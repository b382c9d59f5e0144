"""The service's failure types: what the adapters translate their libraries' errors into, so use cases
and handlers match types, never error class names (:mod:`acx.adapters.faults` translates,
:mod:`acx.usecases.faults` maps each type to its HTTP answer). Pure: no boto3, no botocore.
"""

from __future__ import annotations

BACKEND_BUSY = "a backing service is busy; retry"
BACKEND_TIMED_OUT = "a backing service timed out; retry"
PACKAGE_BUSY = "the package is busy; retry"
ROWS_INCOMPLETE = (
    "DynamoDB kept throttling this package's writes: the log entries are committed but some rows are "
    "not written yet; repeat the same request, it writes what is missing"
)
PURGE_INCOMPLETE = (
    "the forget is recorded and the rows are erased, but S3 has not yet deleted every old version of a "
    "stored object; repeat the same forget, it finishes the erasure"
)


class Unavailable(Exception):
    """Worth retrying as it stands (throttled, timed out, a busy package): 503 with Retry-After.

    ``message`` says which, and never carries request content."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Locked(Exception):
    """An operator lock committed between a use case's own check and the log's seq claim (423)."""


class IdempotencyKeyReused(Exception):
    """An Idempotency-Key already used with a different body (422)."""


class IdempotencyInProgress(Exception):
    """A request with this Idempotency-Key is still running (409, retry after a second)."""


#: Types a translation leaves as they are (already the service's own).
FAULTS = (Unavailable, Locked, IdempotencyKeyReused, IdempotencyInProgress)
