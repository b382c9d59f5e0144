"""usecases.uploads on fakes: what a presigned URL is bound to, and how ingest settles the job."""

from __future__ import annotations

import json

import pytest

from acx.contract import MAX_UPLOAD_BYTES
from acx.core.package import PackageRef
from acx.usecases import uploads
from acx.usecases.errors import ServiceError
from tests.fakes import fake_deps

REF = PackageRef("t1", "notes")


@pytest.fixture
def deps():
    d = fake_deps(UPLOAD_URL_TTL=120)
    d.log.create(REF)
    return d


def test_the_url_is_bound_to_one_key_and_content_type_and_the_job_waits(deps) -> None:
    out = uploads.create_upload(deps, "t1", "notes", "agent-1", size=10)
    key = uploads.upload_key("t1", "notes", out["uploadId"])
    assert deps.uploads.presigned == [(key, "application/json", 120)]
    assert out["expiresIn"] == 120 and out["declaredSize"] == 10 and out["maxBytes"] == MAX_UPLOAD_BYTES
    job = deps.jobs.get("t1", "notes", "upload", out["uploadId"])
    assert job["status"] == "pending" and job["actor"] == "agent-1"
    assert uploads.parse_upload_key(key) == ("t1", "notes", out["uploadId"])
    assert "actor" not in uploads.upload_status(deps, "t1", "notes", out["uploadId"])


@pytest.mark.parametrize("size", [0, -1, MAX_UPLOAD_BYTES + 1])
def test_a_declared_size_out_of_range_is_413_before_any_url(deps, size) -> None:
    with pytest.raises(ServiceError) as info:
        uploads.create_upload(deps, "t1", "notes", "a", size=size)
    assert (info.value.status, info.value.path) == (413, "$.size")
    assert deps.uploads.presigned == [] and deps.jobs.jobs == {}


def test_a_locked_package_issues_no_url(deps) -> None:
    deps.log.locks[REF] = True
    with pytest.raises(ServiceError) as info:
        uploads.create_upload(deps, "t1", "notes", "a", size=None)
    assert info.value.status == 423 and deps.uploads.presigned == []


def test_ingest_refuses_a_body_of_another_size_than_declared_and_deletes_it(deps) -> None:
    out = uploads.create_upload(deps, "t1", "notes", "a", size=5)
    key = uploads.upload_key("t1", "notes", out["uploadId"])
    deps.uploads.objects[key] = json.dumps({"records": []}).encode()
    assert uploads.ingest_upload(deps, key) == "rejected"
    job = deps.jobs.get("t1", "notes", "upload", out["uploadId"])
    assert job["error"]["code"] == "size_mismatch" and key not in deps.uploads.objects


@pytest.mark.parametrize(
    "key", ["uploads/t1/notes", "other/t1/notes/u.json", "uploads/t1/notes/u.txt", "uploads/a/b/c/d.json"]
)
def test_ingest_ignores_and_deletes_keys_that_are_not_uploads(deps, key) -> None:
    deps.uploads.objects[key] = b"{}"
    assert uploads.ingest_upload(deps, key) == "ignored" and key not in deps.uploads.objects


def test_a_redelivered_message_for_a_finished_job_does_nothing(deps) -> None:
    out = uploads.create_upload(deps, "t1", "notes", "a", size=None)
    deps.jobs.finish("t1", "notes", "upload", out["uploadId"], "ingested")
    key = uploads.upload_key("t1", "notes", out["uploadId"])
    deps.uploads.objects[key] = b"late copy"
    assert uploads.ingest_upload(deps, key) == "ingested" and key not in deps.uploads.objects


def test_status_of_an_unknown_upload_is_404(deps) -> None:
    with pytest.raises(ServiceError) as info:
        uploads.upload_status(deps, "t1", "notes", "0" * 32)
    assert info.value.status == 404
