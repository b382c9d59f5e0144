"""The request models refusing a bad body with its JSON path and code (never its value), and reading
or building a body by its field names.
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


def test_a_key_is_named_up_to_64_characters() -> None:
    """A 64-character identifier is a field name a client could mean; one longer is not echoed."""
    assert _refused(UploadRequest, {"k" * 64: 1}).path == "$." + "k" * 64
    assert _refused(UploadRequest, {"k" * 65: 1}).path == "$"


def test_the_known_fields_are_listed_by_their_json_names() -> None:
    """``async`` is what a client sends (the Python attribute is ``async_``)."""
    err = _refused(ExportRequest, {"asynch": True})
    assert err.message.endswith("(known: async, includeFieldLearned)")


def test_an_export_request_is_made_in_code_by_its_python_name() -> None:
    req = ExportRequest(async_=True, includeFieldLearned=True)
    assert req.async_ is True
    assert req.model_dump(by_alias=True) == {"includeFieldLearned": True, "async": True}
    assert ExportRequest.model_validate({"async": True}) == req.model_copy(
        update={"includeFieldLearned": False}
    )


def test_a_body_with_two_faults_is_refused_by_the_first_field() -> None:
    with pytest.raises(RequestError) as info:
        parse_request(UploadRequest, {"size": "big", "contentType": "text/plain"})
    assert (info.value.status, info.value.code, info.value.path) == (422, "invalid_type", "$.size")
    with pytest.raises(RequestError) as info:
        parse_request(TokenRequest, {"tenant": 5, "ttl": 0})
    assert info.value.path == "$.tenant"
