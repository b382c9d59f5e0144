"""usecases.errors and usecases.faults: the answer shape, and what an unexpected failure may show.

The translation of botocore errors into these types is tested with the adapter
(``tests/unit/usecases/test_fault_types.py``); here the use-case side alone, on the service's own types.
"""

from __future__ import annotations

import pytest

from acx.core.faults import Locked, Unavailable
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.faults import classify, is_retryable
from acx.usecases.locks import LOCKED_MESSAGE


def test_the_body_names_code_message_and_path_and_carries_extra_beside_the_error() -> None:
    err = ServiceError(
        422, "too_long", "title is limited to 200 characters", "$.records[0].title", {"limit": 200}
    )
    assert err.body() == {
        "error": {
            "code": "too_long",
            "message": "title is limited to 200 characters",
            "path": "$.records[0].title",
        },
        "limit": 200,
    }
    assert "path" not in ServiceError(400, "x", "m").body()["error"]


def test_not_found_says_the_same_for_anyone_elses_package() -> None:
    assert not_found().body() == {"error": {"code": "not_found", "message": "package not found"}}
    assert not_found("memory").status == 404


def test_an_unexpected_failure_is_500_and_never_shows_its_text() -> None:
    status, code, message, retry = classify(ValueError("token ghp_secret in a message"))
    assert (status, code, message, retry) == (500, "internal", "internal error", None)
    assert not is_retryable(ValueError("x"))


def test_a_retryable_fault_is_503_with_its_own_message_and_retry_after() -> None:
    assert classify(Unavailable("the package is busy; retry")) == (
        503,
        "unavailable",
        "the package is busy; retry",
        1,
    )
    assert is_retryable(Unavailable("x"))


def test_a_lock_that_lands_after_the_check_is_423_like_the_check() -> None:
    assert classify(Locked("x")) == (423, "locked", LOCKED_MESSAGE, None)


@pytest.mark.parametrize("exc", [KeyError("k"), RuntimeError("r"), Exception()])
def test_anything_else_is_internal(exc: BaseException) -> None:
    assert classify(exc)[0] == 500
