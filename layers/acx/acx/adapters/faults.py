"""Translate what the AWS SDK and the log store raise into the service's failure types
(:mod:`acx.core.faults`): the one place that knows botocore's error classes and AWS error codes.

Handlers call :func:`translate` on an exception no use case turned into a ServiceError, then
:func:`acx.usecases.faults.classify` on the result. A wrapped error is looked for through
``__cause__``/``__context__`` (powertools' IdempotencyPersistenceLayerError and boto3's
S3UploadFailedError carry the AWS error that way), nearest first, at most six deep.
"""

from __future__ import annotations

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

from acx.adapters.dynamo import Contention, RowsIncomplete
from acx.adapters.log_sequencer import LeaseExpired, PackageLocked
from acx.adapters.objects import PurgeIncomplete
from acx.core.faults import (
    BACKEND_BUSY,
    BACKEND_TIMED_OUT,
    FAULTS,
    PACKAGE_BUSY,
    PURGE_INCOMPLETE,
    ROWS_INCOMPLETE,
    Locked,
    Unavailable,
)

RETRYABLE_AWS_CODES = {
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TransactionInProgressException",
    "InternalServerError",
    "ServiceUnavailable",
    "SlowDown",
    "KMSInternalException",
    "LimitExceededException",
    "RequestTimeout",
    "TransactionConflictException",
    "InternalError",
    "ThrottledException",
    "RequestThrottled",
    "Throttling",
}
_MAX_CHAIN = 6


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it wraps (``__cause__``, else ``__context__``), nearest first, bounded."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < _MAX_CHAIN and cur not in out:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def aws_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError, else None."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def reason(exc: BaseException) -> str:
    """A content-free name of what failed, for logs: ``ClientError:SlowDown``, ``ReadTimeoutError``."""
    names = []
    for e in _chain(exc):
        code = aws_code(e)
        names.append(f"{type(e).__name__}:{code}" if code else type(e).__name__)
    return " <- ".join(names)


def _unavailable(exc: BaseException) -> Unavailable | None:
    """The retryable failure ``exc`` itself is, if it is one."""
    if isinstance(exc, ClientError):
        code = aws_code(exc) or ""
        if (
            code in RETRYABLE_AWS_CODES
            or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500
        ):
            return Unavailable(BACKEND_BUSY)
        return None
    if isinstance(exc, ConnectionError | HTTPClientError | TimeoutError):
        return Unavailable(BACKEND_TIMED_OUT)
    if isinstance(exc, RowsIncomplete):  # before Contention, which it specialises
        return Unavailable(ROWS_INCOMPLETE)
    if isinstance(exc, PurgeIncomplete):
        return Unavailable(PURGE_INCOMPLETE)
    if isinstance(exc, Contention | LeaseExpired):
        return Unavailable(PACKAGE_BUSY)
    return None


def translate(exc: BaseException) -> BaseException:
    """The service's failure type for ``exc`` (chained to it), or ``exc`` itself when it is none.

    A retryable AWS error, timeout or busy package anywhere in the chain becomes
    :class:`~acx.core.faults.Unavailable`; the log's PackageLocked becomes
    :class:`~acx.core.faults.Locked`. It does NOT make an unknown error retryable: anything else
    stays as it is (and is answered 500)."""
    if isinstance(exc, FAULTS):
        return exc
    if isinstance(exc, PackageLocked):
        fault: BaseException = Locked(str(exc))
        fault.__cause__ = exc
        return fault
    for e in _chain(exc):
        found = _unavailable(e)
        if found is not None:
            found.__cause__ = exc
            return found
    return exc
