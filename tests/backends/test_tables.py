"""The jobs, idempotency and catalog ports' contract, the same tests on every backend."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from acx.core.faults import IdempotencyInProgress, IdempotencyKeyReused
from acx.core.package import PackageRef
from tests.backends.conftest import REF, Backend, record, write_of

# ----------------------------------------------------------------------------- jobs


def test_a_job_moves_only_from_the_status_expected(backend: Backend) -> None:
    jobs = backend.jobs
    assert jobs.get("t1", "pkg", "upload", "u1") is None
    jobs.create("t1", "pkg", "upload", "u1", actor="t1/alice", declaredSize=12)
    job = jobs.get("t1", "pkg", "upload", "u1")
    assert job is not None
    assert (job["status"], job["jobId"], job["kind"], job["actor"], job["declaredSize"]) == (
        "pending", "u1", "upload", "t1/alice", 12
    )  # fmt: skip
    assert isinstance(job["createdAt"], int)
    assert not jobs.finish("t1", "pkg", "upload", "u1", "ingested", expect="rejected")
    assert jobs.finish("t1", "pkg", "upload", "u1", "ingested", summary={"accepted": 3})
    assert not jobs.finish("t1", "pkg", "upload", "u1", "rejected")  # a redelivery: already moved
    job = jobs.get("t1", "pkg", "upload", "u1")
    assert job is not None and job["status"] == "ingested" and job["summary"] == {"accepted": 3}
    assert job["actor"] == "t1/alice"  # the fields it was created with stay
    assert jobs.finish("t1", "pkg", "upload", "u1", "purged", expect=None)
    assert not jobs.finish("t1", "pkg", "upload", "nope", "ingested")
    assert jobs.get("t1", "pkg", "export", "u1") is None  # another kind is another job


def test_creating_a_job_twice_keeps_the_first(backend: Backend) -> None:
    backend.jobs.create("t1", "pkg", "export", "e1", status="queued", n=1)
    with pytest.raises(Exception):
        backend.jobs.create("t1", "pkg", "export", "e1", n=2)
    job = backend.jobs.get("t1", "pkg", "export", "e1")
    assert job is not None and job["n"] == 1 and job["status"] == "queued"


def test_jobs_list_and_page_in_id_order_and_refuse_a_foreign_cursor(backend: Backend) -> None:
    jobs = backend.jobs
    for jid in ("c", "a", "e", "b", "d"):
        jobs.create("t1", "pkg", "upload", jid)
    jobs.create("t1", "pkg", "export", "x")
    jobs.create("t1", "other", "upload", "z")
    assert [j["jobId"] for j in jobs.list("t1", "pkg", "upload")] == ["a", "b", "c", "d", "e"]
    seen: list[str] = []
    cursor = None
    for _ in range(6):
        page, cursor = jobs.page("t1", "pkg", "upload", 2, cursor)
        seen += [j["jobId"] for j in page]
        if cursor is None:
            break
    assert seen == ["a", "b", "c", "d", "e"]
    _, mine = jobs.page("t1", "pkg", "upload", 1, None)
    assert mine is not None
    for foreign in ("garbage!", base64.urlsafe_b64encode(b'{"pk": 1}').decode()):
        with pytest.raises(ValueError):
            jobs.page("t1", "pkg", "upload", 1, foreign)
    with pytest.raises(ValueError):
        jobs.page("t1", "pkg", "export", 1, mine)  # a cursor of the upload listing
    with pytest.raises(ValueError):
        jobs.page("t2", "pkg", "upload", 1, mine)  # another tenant's package


# ----------------------------------------------------------------------------- idempotency


def _once(backend: Backend, fn: Any, seconds: int = 3600) -> Any:
    return backend.idempotency.once(
        fn, name="ingest", key="[tenant, package, idempotencyKey]", payload="bodySha256",
        expires_after_seconds=seconds,
    )  # fmt: skip


def _request(key: str, body: str) -> dict[str, Any]:
    return {"tenant": "t1", "package": "pkg", "idempotencyKey": key, "bodySha256": body}


def test_a_retry_gets_the_first_answer_and_runs_nothing(backend: Backend) -> None:
    calls: list[bytes] = []

    def handler(request: dict[str, Any], body: bytes) -> dict[str, Any]:
        calls.append(body)
        return {"accepted": len(calls), "nested": {"ok": True}}

    call = _once(backend, handler)
    first = call(_request("k1", "h1"), b"one", None)
    assert call(_request("k1", "h1"), b"one again", None) == first == {"accepted": 1, "nested": {"ok": True}}
    assert calls == [b"one"]
    assert call(_request("k2", "h1"), b"two", None) == {"accepted": 2, "nested": {"ok": True}}
    with pytest.raises(IdempotencyKeyReused):
        call(_request("k1", "another body"), b"three", None)
    assert calls == [b"one", b"two"]


def test_a_retry_while_the_first_runs_is_refused_and_a_failed_call_leaves_no_record(backend: Backend) -> None:
    inner: list[BaseException] = []
    runs: list[str] = []

    def handler(request: dict[str, Any], body: bytes) -> dict[str, Any]:
        runs.append(request["idempotencyKey"])
        if body == b"nested":
            try:
                call(request, b"nested", None)
            except Exception as exc:
                inner.append(exc)
        if body == b"fail" and runs.count("k-fail") == 1:
            raise RuntimeError("the store is down")
        return {"body": body.decode()}

    call = _once(backend, handler)
    assert call(_request("k1", "h"), b"nested", None) == {"body": "nested"}
    assert len(inner) == 1 and isinstance(inner[0], IdempotencyInProgress)
    with pytest.raises(RuntimeError):
        call(_request("k-fail", "h"), b"fail", None)
    assert call(_request("k-fail", "h"), b"fail", None) == {"body": "fail"}  # the retry runs again
    assert runs == ["k1", "k-fail", "k-fail"]


def test_an_idempotency_record_expires(backend: Backend) -> None:
    runs: list[int] = []
    call = _once(backend, lambda request, body: {"n": runs.append(1) or len(runs)}, seconds=1)
    assert call(_request("k", "h1"), b"", None) == {"n": 1}
    with pytest.raises(IdempotencyKeyReused):
        call(_request("k", "h2"), b"", None)
    time.sleep(2.1)
    assert call(_request("k", "h2"), b"", None) == {"n": 2}  # expired: a new request, any body


def test_a_request_without_its_key_is_refused(backend: Backend) -> None:
    call = _once(backend, lambda request, body: {})
    with pytest.raises(Exception):
        call({"tenant": None, "package": None, "bodySha256": "h"}, b"", None)


# ----------------------------------------------------------------------------- catalog


def test_the_catalog_pages_a_tenants_packages_and_refuses_a_foreign_cursor(backend: Backend) -> None:
    names = ["p3", "p1", "p5", "p2", "p4"]
    for name in names:
        backend.log.append(PackageRef("t1", name), "a", [write_of(record(1))])
    backend.log.append(PackageRef("t2", "theirs"), "b", [write_of(record(1))])
    seen: list[str] = []
    cursor = None
    for _ in range(6):
        page, cursor = backend.catalog.packages("t1", 2, cursor)
        assert len(page) <= 2
        seen += page
        if cursor is None:
            break
    assert sorted(seen) == sorted(names) and len(seen) == len(names)  # DynamoDB: scan order, no order
    _, mine = backend.catalog.packages("t1", 1, None)
    assert mine is not None
    with pytest.raises(ValueError):
        backend.catalog.packages("t2", 5, mine)  # a cursor into another tenant's packages
    with pytest.raises(ValueError):
        backend.catalog.packages("t1", 5, base64.urlsafe_b64encode(json.dumps({"a": 1}).encode()).decode())
    assert backend.catalog.packages("t3", 5, None) == ([], None)


def test_the_catalog_counts_active_memories(backend: Backend) -> None:
    backend.log.append(REF, "a", [write_of(record(i)) for i in range(4)])
    assert backend.catalog.active_records("t1", "pkg") == 4
    backend.log.forget(REF, "a", "m-00002")
    backend.log.invalidate(REF, "a", "m-00003", expected=3, content_hash="d" * 64)
    assert backend.catalog.active_records("t1", "pkg") == 2
    assert backend.catalog.active_records("t1", "empty") == 0
