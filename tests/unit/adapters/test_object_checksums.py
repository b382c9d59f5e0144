"""Which S3 reads botocore checks against the object's stored checksum.

The service's S3 client is made with ``response_checksum_validation="when_required"``: per the AWS
SDKs' checksum specification (and botocore's ``handle_request_validation_mode_member``), a
response is then validated exactly when its request set ``ChecksumMode=ENABLED``, which botocore's
default ("when_supported") sets on every GetObject. Every read asks for it but the search index's
segments (derived data, see ``SearchIndexStore.get_segment``). Checked at the wire: the request's
``x-amz-checksum-mode`` header and whether the answer carried a checksum for botocore to check.
"""

from __future__ import annotations

from typing import Any

import pytest
from moto import mock_aws

from acx.adapters import aws
from acx.adapters.objects import ObjectStore
from acx.adapters.search_index import Manifest, SearchIndexStore


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    aws.reset()
    with mock_aws():
        client = aws.client("s3")
        client.create_bucket(Bucket="data-bucket")
        yield client
    aws.reset()


def _watched(client: Any) -> list[tuple[str | None, bool]]:
    """(x-amz-checksum-mode sent, a CRC came back) for each GetObject from now on."""
    seen: list[tuple[str | None, bool]] = []
    sent: list[str | None] = []

    def before_send(request: Any, **_: Any) -> None:
        mode = request.headers.get("x-amz-checksum-mode")
        sent.append(mode.decode() if isinstance(mode, bytes) else mode)

    def after_call(parsed: dict[str, Any], **_: Any) -> None:
        seen.append((sent.pop(), "ChecksumCRC32" in parsed))

    client.meta.events.register("before-send.s3.GetObject", before_send)
    client.meta.events.register("after-call.s3.GetObject", after_call)
    return seen


def test_the_s3_client_checks_only_the_reads_that_ask(s3: Any) -> None:
    assert s3.meta.config.response_checksum_validation == "when_required"
    objects = ObjectStore(s3, "data-bucket")
    objects.put("bundles/a.json", b'{"a":1}')
    seen = _watched(s3)
    assert objects.get("bundles/a.json") == b'{"a":1}'
    assert b"".join(objects.chunks("bundles/a.json", size=3)) == b'{"a":1}'
    assert seen == [("ENABLED", True), ("ENABLED", True)]


def test_every_index_read_is_checked_but_the_segments(s3: Any) -> None:
    store = SearchIndexStore(ObjectStore(s3, "data-bucket"))
    key = store.put_segment("t1", "p1", b"segment bytes")
    store.put_manifest("t1", "p1", Manifest(engine="local-hash-128", dim=128, segments=[key], docs=[1]))
    seen = _watched(s3)
    assert store.manifest("t1", "p1").segments == [key]
    assert store.get_segment(key) == b"segment bytes"
    assert seen == [("ENABLED", True), (None, False)]


def test_under_when_required_s3_sends_a_checksum_only_when_asked(s3: Any) -> None:
    """The moto stand-in behaves as the SDK specification says S3 does: no ``ChecksumMode``, no
    checksum in the answer (so nothing for botocore to check); with it, the stored CRC32."""
    s3.put_object(Bucket="data-bucket", Key="k", Body=b"hello world")
    assert "ChecksumCRC32" not in s3.get_object(Bucket="data-bucket", Key="k")
    assert s3.get_object(Bucket="data-bucket", Key="k", ChecksumMode="ENABLED")["ChecksumCRC32"] == "DUoRhQ=="
