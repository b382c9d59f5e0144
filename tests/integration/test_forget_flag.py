"""The head's ``forgotten`` flag: an ingest into a package that never had a forget skips the tombstone
check (22 point reads per record), and every package that may hold tombstones still runs it.

Tombstones are written only by a forget's row requests, after the claim that sets the flag in the same
transaction as the forget's receipt; a head claimed before the flag existed has no flag and is checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from acx.adapters.log_rows import RowStore
from tests.integration.service import Service, bundle, record, start_service

PKG = "flag-pkg"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many records each tombstone check was asked about (one entry per check)."""
    calls: list[int] = []
    real = RowStore.tombstone_hits

    def counting(self: RowStore, ref: Any, probes: Any, near: Any) -> Any:
        calls.append(len(probes))
        return real(self, ref, probes, near)

    monkeypatch.setattr(RowStore, "tombstone_hits", counting)
    return calls


def head(svc: Service) -> dict[str, Any]:
    got = boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=svc.env["HEADS_TABLE"], Key={"pk": {"S": f"acme#{PKG}"}, "sk": {"S": "head"}}
    )
    return dict(got["Item"])


def post(svc: Service, records: list[dict[str, Any]]) -> tuple[int, Any]:
    return svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(records))


def test_a_package_without_forgets_skips_the_check_and_a_forget_turns_it_on(
    svc: Service, checks: list[int]
) -> None:
    assert post(svc, [record(1), record(2)])[0] == 201
    assert head(svc)["forgotten"] == {"BOOL": False}
    assert post(svc, [record(3)])[0] == 201
    assert checks == []  # no forget ever claimed: no tombstone can exist, nothing read
    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0002")
    assert status == 200, body
    assert head(svc)["forgotten"] == {"BOOL": True}
    status, body = post(svc, [record(4), dict(record(2), id="mem-0042")])
    assert status == 409, body  # the forgotten knowledge under another id
    assert checks == [2]
    other = record(5, title="Rotate the signing key", summary="Quarterly rotation, from the vault.")
    assert post(svc, [other])[0] == 201
    assert checks == [2, 1]  # stays on: the flag is never cleared


def test_a_head_claimed_before_the_flag_existed_is_checked(svc: Service, checks: list[int]) -> None:
    assert post(svc, [record(1), record(2)])[0] == 201
    assert svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0002")[0] == 200
    boto3.client("dynamodb", region_name="us-east-1").update_item(
        TableName=svc.env["HEADS_TABLE"],
        Key={"pk": {"S": f"acme#{PKG}"}, "sk": {"S": "head"}},
        UpdateExpression="REMOVE forgotten",  # as an older version of the service left it
    )
    status, body = post(svc, [dict(record(2), id="mem-0042")])
    assert status == 409, body
    assert checks == [1]
    assert "forgotten" not in head(svc)  # an append does not claim what it cannot know
