"""Map unexpected failures to clean HTTP answers: retryable ones get 503 + Retry-After, never a trace."""

from __future__ import annotations

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
# Log store and object store errors that mean "try again" (matched by name: no boto3 import here),
# with what the caller should do when it is not just "busy".
RETRYABLE_STORE_ERRORS = {"Contention", "LeaseExpired", "RowsIncomplete", "PurgeIncomplete"}
STORE_ERROR_MESSAGES = {
    "RowsIncomplete": "DynamoDB kept throttling this package's writes: the log entries are committed "
    "but some rows are not written yet; repeat the same request, it writes what is missing",
    "PurgeIncomplete": "the forget is recorded and the rows are erased, but S3 has not yet deleted every "
    "old version of a stored object; repeat the same forget, it finishes the erasure",
}
# Wrappers that hide the AWS error they carry (powertools idempotency persistence, boto3 upload_file).
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


def _retryable(exc: BaseException) -> tuple[str, str] | None:
    try:
        from botocore.exceptions import ClientError, ConnectionError, HTTPClientError
    except ImportError:  # pragma: no cover - botocore is always present in Lambda
        return None
    if isinstance(exc, ClientError):
        code = aws_code(exc) or ""
        if (
            code in RETRYABLE_AWS_CODES
            or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500
        ):
            return "unavailable", "a backing service is busy; retry"
        return None
    if isinstance(exc, ConnectionError | HTTPClientError | TimeoutError):
        return "unavailable", "a backing service timed out; retry"
    if type(exc).__name__ in RETRYABLE_STORE_ERRORS:
        return "unavailable", STORE_ERROR_MESSAGES.get(type(exc).__name__, "the package is busy; retry")
    return None


def is_retryable(exc: BaseException) -> bool:
    return any(_retryable(e) is not None for e in _chain(exc))


def classify(exc: BaseException) -> tuple[int, str, str, int | None]:
    """(status, code, message, retry-after s) for an exception no use case turned into a ServiceError."""
    name = type(exc).__name__
    if name == "IdempotencyValidationError":
        return 422, "idempotency_key_reused", "this Idempotency-Key was used with a different body", None
    if name == "IdempotencyAlreadyInProgressError":
        return 409, "in_progress", "a request with this Idempotency-Key is still being processed", 1
    if name == "PackageLocked":  # a lock committed between the use case's check and the seq claim
        from acx.usecases.locks import LOCKED_MESSAGE

        return 423, "locked", LOCKED_MESSAGE, None
    # Walk the wrapped errors too: IdempotencyPersistenceLayerError (a throttled idempotency table) and
    # boto3's S3UploadFailedError carry the retryable AWS error as their cause/context.
    for e in _chain(exc):
        found = _retryable(e)
        if found is not None:
            return 503, found[0], found[1], 1
    return 500, "internal", "internal error", None
