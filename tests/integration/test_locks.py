"""Operator lock (scope admin): writes refused with 423 while locked, reads work, receipted entries."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest

from tests.integration.service import Service, bundle, record, scan_everything, start_service

PKG = "ops-notes"
LOCKED = {
    "error": {
        "code": "locked",
        "message": "package is locked by an operator; writes are refused until it is unlocked",
    }
}
REASON = "incident-4711 freeze: Quokka-lantern-unique-reason"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def seed(svc: Service) -> None:
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1), record(2)]))
    assert status == 201, body


def log_size(svc: Service) -> int:
    status, body = svc.call("GET", f"/v1/packages/{PKG}/log")
    assert status == 200, body
    return int(body["size"])


def test_lock_refuses_every_write_with_423_and_reads_keep_working(svc: Service) -> None:
    from acx.core.canonical import sha256_hex

    seed(svc)
    status, exported = svc.call("POST", f"/v1/packages/{PKG}/cartridges", body={})
    assert status == 201 and exported["status"] == "ready"
    status, up = svc.call("POST", f"/v1/packages/{PKG}/uploads", body={})
    assert status == 201

    status, lock = svc.call("POST", f"/v1/packages/{PKG}/lock", body={"reason": REASON}, scopes=["admin"])
    assert status == 200, lock
    assert lock["locked"] is True and lock["changed"] is True
    assert lock["log"] == {"fromSeq": 2, "toSeq": 2}
    assert lock["checkpoint"].splitlines()[1] == "3"
    assert lock["contentHash"] == sha256_hex({"locked": True, "reason": REASON})
    assert REASON not in json.dumps(lock)

    writes = [
        ("POST", f"/v1/packages/{PKG}/bundles", {"body": bundle([record(3)])}),
        (
            "POST",
            f"/v1/packages/{PKG}/bundles",
            {"body": bundle([record(3)]), "headers": {"Idempotency-Key": "k1"}},
        ),
        ("POST", f"/v1/packages/{PKG}/uploads", {"body": {"size": 100}}),
        ("DELETE", f"/v1/packages/{PKG}/memories/mem-0001", {}),
        ("DELETE", f"/v1/packages/{PKG}/memories", {"query": {"contentHash": sha256_hex(record(1))}}),
        ("POST", f"/v1/packages/{PKG}/cartridges", {"body": {}}),
        ("POST", f"/v1/packages/{PKG}/cartridges", {"body": {"async": True}}),
    ]
    for method, path, kwargs in writes:
        status, body = svc.call(method, path, **kwargs)
        assert (status, body) == (423, LOCKED), (method, path, status, body)
        assert "url" not in body  # no presigned PUT for a locked package
    assert log_size(svc) == 3  # nothing was written

    # reads keep working
    status, page = svc.call("GET", f"/v1/packages/{PKG}/memories")
    assert status == 200 and [r["id"] for r in page["records"]] == ["mem-0001", "mem-0002"]
    status, verified = svc.call("GET", f"/v1/packages/{PKG}/log/verify")
    assert status == 200 and verified["status"] == "ok" and verified["size"] == 3, verified
    status, proof = svc.call(
        "GET", f"/v1/packages/{PKG}/log/proof/inclusion", query={"index": "2", "size": "3"}
    )
    assert status == 200 and proof["index"] == 2
    status, proof = svc.call(
        "GET", f"/v1/packages/{PKG}/log/proof/consistency", query={"from": "2", "to": "3"}
    )
    assert status == 200
    status, dl = svc.call("GET", f"/v1/packages/{PKG}/cartridges/{exported['cartridgeId']}")
    assert status == 200 and dl["url"]
    status, job = svc.call("GET", f"/v1/packages/{PKG}/uploads/{up['uploadId']}")
    assert status == 200 and job["status"] == "pending"

    # the free-text reason is nowhere the service keeps data
    assert scan_everything(REASON) == []

    status, unlock = svc.call("POST", f"/v1/packages/{PKG}/unlock", scopes=["admin"])
    assert status == 200 and unlock["locked"] is False and unlock["changed"] is True
    assert unlock["log"] == {"fromSeq": 3, "toSeq": 3}
    assert unlock["contentHash"] == sha256_hex({"locked": False, "reason": None})
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(3)]))
    assert status == 201 and body["log"] == {"fromSeq": 4, "toSeq": 4}, body
    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0001")
    assert status == 200, body
    status, verified = svc.call("GET", f"/v1/packages/{PKG}/log/verify")
    assert verified["status"] == "ok" and verified["size"] == 6 and verified["orphanCount"] == 0, verified


def test_lock_and_unlock_are_idempotent_and_receipted_with_hashes_only(svc: Service) -> None:
    from acx.core.package import PackageRef
    from acx.usecases.deps import deps
    from acx.usecases.verify import verify_all, verify_package

    seed(svc)
    first = svc.call("POST", f"/v1/packages/{PKG}/lock", scopes=["admin"])
    again = svc.call("POST", f"/v1/packages/{PKG}/lock", body={"reason": "other"}, scopes=["admin"])
    assert first[0] == again[0] == 200
    assert again[1]["locked"] is True and again[1]["changed"] is False
    assert again[1]["log"] == {"fromSeq": None, "toSeq": None}
    assert again[1]["checkpoint"] == first[1]["checkpoint"]
    assert log_size(svc) == 3
    status, body = svc.call("POST", f"/v1/packages/{PKG}/unlock", scopes=["admin"])
    assert status == 200 and body["changed"] is True
    status, body = svc.call("POST", f"/v1/packages/{PKG}/unlock", scopes=["admin"])
    assert status == 200 and body["changed"] is False and body["locked"] is False
    assert log_size(svc) == 4

    ref, pub = PackageRef("acme", PKG), deps().settings.publisher_id
    entries = list(deps().log.entries(ref))
    assert [e.payload["operation"] for e in entries] == ["remember", "remember", "lock", "unlock"]
    for e in entries[2:]:
        assert e.payload["tier"] == "package" and e.key is None and "covers" not in e.payload
    # full, then incremental verification (the witness sits after the lock entries)
    assert verify_package(deps().log, ref, pub).status == "ok"
    assert svc.call("POST", f"/v1/packages/{PKG}/lock", scopes=["admin"])[0] == 200
    result = verify_package(deps().log, ref, pub, incremental=True)
    assert result.status == "ok" and result.incremental and result.checked == 1, result.to_dict()
    # the scheduled verifier (every package) agrees
    assert all(r.status == "ok" for r in verify_all(deps().log, pub))


def test_pending_upload_is_rejected_at_ingest_with_the_423_reason(svc: Service) -> None:
    seed(svc)
    status, up = svc.call("POST", f"/v1/packages/{PKG}/uploads", body={})
    assert status == 201
    assert svc.call("POST", f"/v1/packages/{PKG}/lock", scopes=["admin"])[0] == 200
    svc.put_upload(up["uploadId"], json.dumps(bundle([record(7)])).encode(), package=PKG)
    assert svc.pump() >= 1
    status, job = svc.call("GET", f"/v1/packages/{PKG}/uploads/{up['uploadId']}")
    assert status == 200 and job["status"] == "rejected" and job["error"] == LOCKED["error"], job
    s3 = boto3.client("s3", region_name="us-east-1")
    assert s3.list_objects_v2(Bucket=svc.env["UPLOADS_BUCKET"]).get("KeyCount", 0) == 0
    assert log_size(svc) == 3


def test_queued_export_is_rejected_when_the_package_is_locked_before_it_runs(svc: Service) -> None:
    seed(svc)
    status, pending = svc.call("POST", f"/v1/packages/{PKG}/cartridges", body={"async": True})
    assert status == 202, pending
    assert svc.call("POST", f"/v1/packages/{PKG}/lock", scopes=["admin"])[0] == 200
    svc.pump("EXPORT_QUEUE_URL", "export")
    status, job = svc.call("GET", f"/v1/packages/{PKG}/cartridges/{pending['cartridgeId']}")
    assert status == 200 and job["status"] == "rejected" and "url" not in job, job
    cartridges = boto3.client("s3", region_name="us-east-1").list_objects_v2(
        Bucket=svc.env["CARTRIDGES_BUCKET"]
    )
    assert cartridges.get("KeyCount", 0) == 0


def test_lock_needs_admin_and_hides_other_tenants_packages(svc: Service) -> None:
    seed(svc)
    everything_but_admin = ["memory:write", "memory:read", "memory:forget", "cartridge:export", "log:read"]
    for op in ("lock", "unlock"):
        status, body = svc.call("POST", f"/v1/packages/{PKG}/{op}", scopes=everything_but_admin)
        assert status == 403 and body["error"]["code"] == "forbidden"
        status, body = svc.call("POST", f"/v1/packages/{PKG}/{op}", tenant=None)
        assert status == 401
        other = svc.call("POST", f"/v1/packages/{PKG}/{op}", tenant="globex", scopes=["admin"])
        unknown = svc.call("POST", f"/v1/packages/no-such-pkg/{op}", scopes=["admin"])
        assert other == unknown and other[0] == 404 and other[1]["error"]["code"] == "not_found"
    # another tenant's lock does not touch this tenant's package of the same name, and vice versa
    assert svc.call("POST", "/v1/packages/shared-name/bundles", body=bundle([record(1)]))[0] == 201
    assert (
        svc.call("POST", "/v1/packages/shared-name/bundles", body=bundle([record(1)]), tenant="globex")[0]
        == 201
    )
    assert svc.call("POST", "/v1/packages/shared-name/lock", tenant="globex", scopes=["admin"])[0] == 200
    assert svc.call("POST", "/v1/packages/shared-name/bundles", body=bundle([record(2)]))[0] == 201
    status, body = svc.call(
        "POST", "/v1/packages/shared-name/bundles", body=bundle([record(2)]), tenant="globex"
    )
    assert status == 423
    assert log_size(svc) == 2  # untouched by the refused attempts


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"reason": "x" * 257}, "too_long"),
        ({"reason": 5}, "invalid_type"),
        ({"reason": "ok", "until": 5}, "unknown_field"),
        ("[1]", "invalid_body"),
    ],
)
def test_lock_body_is_validated(svc: Service, body: object, code: str) -> None:
    seed(svc)
    status, got = svc.call("POST", f"/v1/packages/{PKG}/lock", body=body, scopes=["admin"])
    assert status == 422 and got["error"]["code"] == code, got
    assert log_size(svc) == 2
    status, ok = svc.call("POST", f"/v1/packages/{PKG}/lock", body={"reason": "x" * 256}, scopes=["admin"])
    assert status == 200 and ok["changed"] is True
