"""A cold api function's first search (the real handler on moto) builds only the clients a search
uses: S3 (the index) and DynamoDB (the rows). No KMS client, so no DescribeKey: the signer is built
by the routes that sign. A warm search builds none."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.session import Session

from tests.integration.service import Service, bundle, record, start_service

PKG = "cold-notes"
PATH = f"/v1/packages/{PKG}/memories/search"
STORMS = "Exponential backoff with jitter stops a retry storm."


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def _go_cold() -> None:
    """What a new Lambda instance starts from: no adapters, no clients, no cached index."""
    from acx.usecases import search as search_uc
    from acx.usecases.deps import reset

    reset()
    search_uc.CACHE.views.clear()
    search_uc.CACHE.segments.clear()


def test_a_cold_search_makes_only_the_s3_and_dynamodb_clients(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [record(1, title="Retry storms", summary=STORMS)]
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(records))
    assert status == 201, body
    _go_cold()
    made: list[str] = []
    real = Session.create_client  # what every client is made by (acx.adapters.aws and boto3.client)

    def recording(self: Session, service: str, *args: Any, **kwargs: Any) -> Any:
        made.append(service)
        return real(self, service, *args, **kwargs)

    monkeypatch.setattr(Session, "create_client", recording)
    status, body = svc.call("GET", PATH, query={"q": "backoff storms"})
    assert status == 200, body
    assert [r["id"] for r in body["results"]] == ["mem-0001"]
    assert sorted(made) == ["dynamodb", "s3"]  # before: kms too (the signer's DescribeKey at deps())
    status, _ = svc.call("GET", PATH, query={"q": "jitter"})
    assert status == 200 and sorted(made) == ["dynamodb", "s3"]  # warm: the same clients


def test_the_first_signing_route_after_a_cold_search_still_signs(svc: Service) -> None:
    records = [record(1, title="Retry storms", summary=STORMS)]
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(records))[0] == 201
    _go_cold()
    assert svc.call("GET", PATH, query={"q": "backoff"})[0] == 200
    more = [record(2, title="Cold starts", summary="Lazy clients keep the first request short.")]
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(more))
    assert status == 201, body  # the checkpoint was signed by the KMS signer built on this first use
    status, verified = svc.call("GET", f"/v1/packages/{PKG}/log/verify")
    assert status == 200 and verified["status"] == "ok", verified
