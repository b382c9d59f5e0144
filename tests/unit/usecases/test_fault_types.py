"""Adapters translate library errors into the service's failure types; use cases match the types.

Each case is one failure as a library raises it and the HTTP answer the API gives for it (the same
answers as before the translation moved into ``acx.adapters.faults``)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from acx.adapters.dynamo import Contention
from acx.adapters.faults import reason, translate
from acx.adapters.log_sequencer import LeaseExpired, PackageLocked
from acx.core.faults import IdempotencyInProgress, IdempotencyKeyReused, Unavailable
from acx.usecases.faults import classify, is_retryable
from acx.usecases.locks import LOCKED_MESSAGE

BUSY = (503, "unavailable", "a backing service is busy; retry", 1)
TIMED_OUT = (503, "unavailable", "a backing service timed out; retry", 1)
PACKAGE_BUSY = (503, "unavailable", "the package is busy; retry", 1)
INTERNAL = (500, "internal", "internal error", None)


def aws(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op"
    )


def wrapped(inner: BaseException) -> BaseException:
    """An error raised while handling ``inner`` (as S3UploadFailedError or powertools wrap theirs)."""
    try:
        try:
            raise inner
        except BaseException:
            raise RuntimeError("wrapper") from None
    except RuntimeError as outer:
        outer.__cause__ = inner
        return outer


CASES = [
    (aws("ThrottlingException"), BUSY),
    (aws("ProvisionedThroughputExceededException"), BUSY),
    (aws("SlowDown", 503), BUSY),
    (aws("SomethingNew", 500), BUSY),  # any 5xx
    (aws("ConditionalCheckFailedException"), INTERNAL),
    (aws("AccessDeniedException", 403), INTERNAL),
    (ReadTimeoutError(endpoint_url="https://x"), TIMED_OUT),
    (EndpointConnectionError(endpoint_url="https://x"), TIMED_OUT),
    (TimeoutError(), TIMED_OUT),
    (Contention("busy"), PACKAGE_BUSY),
    (LeaseExpired("late"), PACKAGE_BUSY),
    (PackageLocked("locked"), (423, "locked", LOCKED_MESSAGE, None)),
    (
        IdempotencyKeyReused("x"),
        (422, "idempotency_key_reused", "this Idempotency-Key was used with a different body", None),
    ),
    (
        IdempotencyInProgress("x"),
        (409, "in_progress", "a request with this Idempotency-Key is still being processed", 1),
    ),
    (wrapped(aws("SlowDown", 503)), BUSY),
    (wrapped(aws("NoSuchKey", 404)), INTERNAL),
    (ValueError("boom"), INTERNAL),
]


@pytest.mark.parametrize(("exc", "answer"), CASES, ids=[reason(e) for e, _ in CASES])
def test_each_failure_gets_its_answer(exc: BaseException, answer: tuple[object, ...]) -> None:
    fault = translate(exc)
    assert classify(fault) == answer
    assert is_retryable(fault) == (answer[0] == 503)


def test_untranslated_library_errors_are_not_matched_by_use_cases() -> None:
    """The use case layer matches types only: a raw AWS error it is handed is an internal error."""
    assert classify(aws("ThrottlingException")) == INTERNAL
    assert classify(Contention("busy")) == INTERNAL


def test_the_translation_keeps_what_it_translated() -> None:
    exc = aws("ThrottlingException")
    fault = translate(exc)
    assert isinstance(fault, Unavailable) and fault.__cause__ is exc
    assert translate(fault) is fault
    other = ValueError("x")
    assert translate(other) is other


def test_reason_names_types_and_aws_codes_only() -> None:
    assert reason(wrapped(aws("SlowDown", 503))) == "RuntimeError <- ClientError:SlowDown"
