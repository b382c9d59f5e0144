"""Request models, continued: ExportRequest is built in code by its Python field name as well as read by
its JSON name, and a body with several faults is refused by the first one (in field order).
"""

from __future__ import annotations

import pytest

from acx.contract.models import ExportRequest, RequestError, TokenRequest, UploadRequest, parse_request


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
