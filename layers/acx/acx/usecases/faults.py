"""Map unexpected failures to clean HTTP answers: retryable ones get 503 + Retry-After, never a trace."""

from __future__ import annotations

RETRYABLE_AWS_CODES = {
    "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "TransactionInProgressException", "InternalServerError", "ServiceUnavailable", "SlowDown",
    "KMSInternalException", "LimitExceededException", "RequestTimeout", "TransactionConflictException",
}


def classify(exc: BaseException) -> tuple[int, str, str, int | None]:
    """(status, code, message, retry-after seconds) for an exception no use case turned into a ServiceError."""
    name = type(exc).__name__
    if name == "IdempotencyValidationError":
        return 422, "idempotency_key_reused", "this Idempotency-Key was used with a different body", None
    if name == "IdempotencyAlreadyInProgressError":
        return 409, "in_progress", "a request with this Idempotency-Key is still being processed", 1
    try:
        from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError
    except ImportError:  # pragma: no cover - botocore is always present in Lambda
        return 500, "internal", "internal error", None
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        if code in RETRYABLE_AWS_CODES or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
            return 503, "unavailable", "a backing service is busy; retry", 1
    if isinstance(exc, ConnectionError | ReadTimeoutError | TimeoutError):
        return 503, "unavailable", "a backing service timed out; retry", 1
    return 500, "internal", "internal error", None
