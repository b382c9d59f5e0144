"""The API contract at its edges: identifiers a caller sends, the limits docs/API.md promises, and
the request models refusing a bad body with its JSON path and code (never its value).

Every value here is written out, not read from ``acx.contract``: a limit moved in the contract must
fail a test, since the docs, the CLI and other clients rely on the number.
"""

from __future__ import annotations

from typing import Any

import pytest

from acx import contract as c
from acx.contract.models import (
    ExportRequest,
    LockRequest,
    RequestError,
    TokenRequest,
    UploadRequest,
    parse_request,
)


@pytest.mark.parametrize("value", ["a", "0", "my-package", "a" * 64, "x-1-y"])
def test_package_ids_that_are_accepted(value: str) -> None:
    assert c.is_package_id(value)


@pytest.mark.parametrize(
    "value",
    ["", "-a", "--", ".", "..", "A", "a_b", "a.b", "a" * 65, "a\n", "a/b", None, 7, b"abc", ["a"]],
)
def test_package_ids_that_are_refused(value: Any) -> None:
    """An S3 key segment and a DynamoDB key part: no path segments, no option-like ``-``, no newline."""
    assert not c.is_package_id(value)


@pytest.mark.parametrize("value", ["t", "T", "Acme.Corp_1-x", "0" + "z" * 63])
def test_tenant_ids_that_are_accepted(value: str) -> None:
    assert c.is_tenant_id(value)


@pytest.mark.parametrize("value", ["", ".", "..", ".a", "-a", "_a", "a" * 65, "a\n", "a b", "a/b", None, 1])
def test_tenant_ids_that_are_refused(value: Any) -> None:
    assert not c.is_tenant_id(value)


def test_limits_are_the_documented_numbers() -> None:
    """docs/API.md: 5 MiB inline, 100 MiB presigned, Idempotency-Key 1-128, lock reason <= 256,
    recall limit 1-1000 (default 50); API Gateway's own payload limit is 10 MiB."""
    assert c.MAX_INLINE_BYTES == 5_242_880
    assert c.MAX_UPLOAD_BYTES == 104_857_600
    assert c.MAX_SMALL_BODY_BYTES == 65_536
    assert c.MAX_LOCK_BODY_BYTES == 4_096
    assert c.MAX_LOCK_REASON == 256
    assert c.MAX_IDEMPOTENCY_KEY == 128
    assert c.MAX_CURSOR == 2_048
    assert c.MAX_TAG == 128
    assert (c.RECALL_DEFAULT_LIMIT, c.RECALL_MAX_LIMIT) == (50, 1000)
    assert (c.LIST_DEFAULT_LIMIT, c.LIST_MAX_LIMIT, c.LOG_ENTRIES_MAX_LIMIT) == (50, 200, 1000)
    assert c.GATEWAY_MAX_PAYLOAD == 10_485_760
    assert c.RECORD_ID_MAX == 128
    exits = (c.EXIT_OK, c.EXIT_NOT_TRUSTED, c.EXIT_INVALID, c.EXIT_BLOCKED, c.EXIT_TAMPERED, c.EXIT_SERVER)
    assert exits == (0, 1, 2, 3, 4, 5)


def _refused(model: Any, doc: Any) -> RequestError:
    with pytest.raises(RequestError) as info:
        parse_request(model, doc)
    assert info.value.status == 422
    return info.value


@pytest.mark.parametrize("size", [1, 104_857_600])
def test_upload_size_at_its_bounds_is_accepted(size: int) -> None:
    assert parse_request(UploadRequest, {"size": size}).size == size


@pytest.mark.parametrize("size", [0, -1, 104_857_601])
def test_upload_size_outside_its_bounds_is_refused(size: int) -> None:
    err = _refused(UploadRequest, {"size": size})
    assert (err.code, err.path) == ("invalid_request", "$.size")
    assert str(size) not in err.message.split(":", 1)[0]


@pytest.mark.parametrize("size", [True, 1.0, "1", [1]])
def test_upload_size_of_another_type_is_refused_as_a_type_error(size: Any) -> None:
    """Strict: a boolean or a float is not coerced into a size."""
    err = _refused(UploadRequest, {"size": size})
    assert (err.code, err.path) == ("invalid_type", "$.size")


def test_upload_content_type_is_json_only() -> None:
    assert parse_request(UploadRequest, {}).contentType == "application/json"
    err = _refused(UploadRequest, {"contentType": "text/plain"})
    assert err.path == "$.contentType"


def test_an_unknown_field_is_named_with_the_known_ones() -> None:
    err = _refused(UploadRequest, {"size": 1, "sise": 2})
    assert (err.code, err.path) == ("unknown_field", "$.sise")
    assert "contentType, size" in err.message


def test_lock_reason_at_and_over_its_limit() -> None:
    assert parse_request(LockRequest, {"reason": "r" * 256}).reason == "r" * 256
    assert parse_request(LockRequest, {}).reason is None
    err = _refused(LockRequest, {"reason": "r" * 257})
    assert (err.code, err.path) == ("too_long", "$.reason")
    assert "r" * 20 not in err.message  # the value is never echoed
    assert _refused(LockRequest, {"reason": 5}).code == "invalid_type"


def test_export_request_reads_async_by_its_json_name() -> None:
    parsed = parse_request(ExportRequest, {"async": True, "includeFieldLearned": True})
    assert parsed.async_ is True and parsed.includeFieldLearned is True
    assert parse_request(ExportRequest, None).async_ is False
    assert _refused(ExportRequest, {"async": "yes"}).code == "invalid_type"
    assert _refused(ExportRequest, {"includeFieldLearned": 1}).path == "$.includeFieldLearned"


def test_token_request_bounds() -> None:
    parsed = parse_request(TokenRequest, {"tenant": "acme"})
    assert (parsed.ttl, parsed.sub, parsed.scopes) == (3600, "dev", list(c.SCOPES))
    assert parse_request(TokenRequest, {"tenant": "acme", "ttl": 1}).ttl == 1
    assert parse_request(TokenRequest, {"tenant": "acme", "ttl": 86400}).ttl == 86400
    assert parse_request(TokenRequest, {"tenant": "a", "sub": "s" * 128}).sub == "s" * 128
    for doc, path in [
        ({"tenant": "acme", "ttl": 0}, "$.ttl"),
        ({"tenant": "acme", "ttl": 86401}, "$.ttl"),
        ({"tenant": "acme", "sub": ""}, "$.sub"),
        ({"tenant": "acme", "sub": "s" * 129}, "$.sub"),
        ({"tenant": ".."}, "$.tenant"),
        ({"tenant": "acme\n"}, "$.tenant"),
        ({}, "$.tenant"),
    ]:
        assert _refused(TokenRequest, doc).path == path, doc


def test_a_list_index_or_an_odd_key_never_enters_the_path() -> None:
    """The path is built from identifiers only: an index becomes nothing, and a key that is not an
    identifier (it could carry a value the caller typed, a secret) is never echoed."""
    err = _refused(TokenRequest, {"tenant": "acme", "scopes": ["memory:read", "root"]})
    assert err.path == "$.scopes"
    err = _refused(UploadRequest, {"ghp_" + "x" * 70: 1})
    assert err.path == "$" and "ghp_" not in err.message
    err = _refused(UploadRequest, {"a-b": 1})
    assert err.path == "$" and err.code == "unknown_field"


def test_the_scopes_are_the_seven_named_ones() -> None:
    named = ("memory:write", "memory:read", "memory:forget", "cartridge:export", "log:read", "admin", "memory:review")
    assert c.SCOPES == named


def test_a_key_is_named_up_to_64_characters() -> None:
    """A 64-character identifier is a field name a client could mean; one longer is not echoed."""
    assert _refused(UploadRequest, {"k" * 64: 1}).path == "$." + "k" * 64
    assert _refused(UploadRequest, {"k" * 65: 1}).path == "$"


def test_the_known_fields_are_listed_by_their_json_names() -> None:
    """``async`` is what a client sends (the Python attribute is ``async_``)."""
    err = _refused(ExportRequest, {"asynch": True})
    assert err.message.endswith("(known: async, includeFieldLearned)")
