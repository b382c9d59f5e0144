"""Forget that holds (issue 11), through the API handler on moto: the knowledge stays forgotten
whatever its metadata, tier or small edits; files can be forgotten; repeats and skips behave."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from tests.integration.service import Service, bundle, record, scan_everything, start_service

PKG = "forget-pkg"
MARKER = "Quokka-harbour-lesson-5521"
CBF = "cbf1_" + "c" * 40


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def target() -> dict[str, Any]:
    return record(
        5, title="Stop the rollout early", summary=f"{MARKER}: freeze the deploy before the schema migration"
    )


def post(svc: Service, records: list[dict[str, Any]], **kw: Any) -> tuple[int, Any]:
    return svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(records, **kw.pop("extra", {})), **kw)


def log_size(svc: Service) -> int:
    return int(svc.call("GET", f"/v1/packages/{PKG}/log")[1]["size"])


def verified(svc: Service) -> str:
    return str(svc.call("GET", f"/v1/packages/{PKG}/log/verify")[1]["status"])


def forgotten(svc: Service) -> dict[str, Any]:
    assert post(svc, [record(1), target()])[0] == 201
    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0005")
    assert status == 200, body
    return dict(body)


VARIANTS = {
    "new id": {"id": "mem-0099"},
    "other timestamp": {"timestamp": "2027-01-01T00:00:00Z"},
    "same instant +02:00": {"timestamp": "2026-03-14T11:21:00+02:00"},
    "same instant .000Z": {"timestamp": "2026-03-14T09:21:00.000Z"},
    "same instant lowercase z": {"timestamp": "2026-03-14T09:21:00z"},
    "one tag more": {"tags": ["retries", "deploys"]},
    "one tag less": {"tags": []},
    "tag case": {"tags": ["RETRIES"]},
    "other xp": {"xpAwarded": 999},
    "other impact": {"impact": "positive"},
    "other sourceType": {"sourceType": "review"},
    "field-learned tier": {"portable": False, "codebaseFingerprint": CBF, "repoId": "r-1"},
    "zero-width space in the title": {"title": "Stop the roll\u200bout early"},
    "soft hyphen and bidi mark": {"title": "Stop the roll\u00adout\u200e early"},
    "doubled inner space": {"summary": f"{MARKER}:  freeze the deploy before the schema migration"},
    "NBSP and surrounding whitespace": {
        "summary": f"  {MARKER}:\u00a0freeze the deploy before the schema migration \n"
    },
    "case": {"title": "STOP THE ROLLOUT EARLY"},
    "fullwidth letters (NFKC)": {"title": "Ｓtop the rollout early"},
}


@pytest.mark.parametrize("change", list(VARIANTS), ids=list(VARIANTS))
def test_the_forgotten_knowledge_is_refused_whatever_its_metadata(svc: Service, change: str) -> None:
    forgotten(svc)
    size = log_size(svc)
    again = dict(target(), id="mem-0042") | VARIANTS[change]
    status, body = post(svc, [record(2), again])
    assert status == 409, body
    assert body["error"]["code"] == "forgotten" and "tombstone" in body["error"]["message"]
    assert body["forgotten"] == [{"index": 1, "id": again["id"], "rule": "exact", "forgetSeq": 2}]
    assert MARKER not in json.dumps(body)
    assert log_size(svc) == size  # refused whole: nothing written
    assert scan_everything(MARKER) == []


NEAR = {
    "one word changed": {"summary": f"{MARKER}: freeze the release before the schema migration"},
    "a sentence appended": {
        "summary": f"{MARKER}: freeze the deploy before the schema migration. Page the owner."
    },
}


@pytest.fixture
def fixed_forget_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Near-copy matching is a keyed sketch: with a fresh moto KMS key each run, a one-word edit is
    caught about 99.93% of the time (bench forget), so this test failed about once in a thousand runs.
    A fixed working key makes the outcome a fact of the code, not of the draw; the rate itself is the
    bench's figure."""
    from acx.adapters.forget_key import KmsMacKeyer

    monkeypatch.setattr(KmsMacKeyer, "key", lambda self: bytes(range(32)))


@pytest.mark.parametrize("change", list(NEAR), ids=list(NEAR))
@pytest.mark.usefixtures("fixed_forget_key")
def test_near_copies_are_refused_and_named_as_such(svc: Service, change: str) -> None:
    forgotten(svc)
    status, body = post(svc, [dict(target(), id="mem-0043") | NEAR[change]])
    assert status == 409 and body["forgotten"][0]["rule"] == "near", body
    unrelated = record(7, title="Cache keys", summary="Namespace cache keys by tenant and schema version.")
    assert post(svc, [unrelated])[0] == 201


def test_forget_erases_both_tiers_and_refuses_both(svc: Service) -> None:
    rom = target()
    save = dict(target(), id="mem-0006", portable=False, codebaseFingerprint=CBF, repoId="r-1")
    assert post(svc, [rom, save])[0] == 201
    assert len(scan_everything(MARKER)) >= 3  # two rows and the canonical bundle
    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0006")
    assert status == 200 and body["forgotten"] == "mem-0006" and body["alsoForgotten"] == ["mem-0005"], body
    assert body["log"]["toSeq"] - body["log"]["fromSeq"] == 1  # one forget entry per erased row
    assert scan_everything(MARKER) == []
    assert svc.call("GET", f"/v1/packages/{PKG}/memories")[1]["records"] == []
    for again in (dict(rom, id="mem-0070"), dict(save, id="mem-0071")):
        assert post(svc, [again])[0] == 409
    assert verified(svc) == "ok"


def test_a_repeated_forget_answers_as_the_first_and_writes_nothing(svc: Service) -> None:
    first = forgotten(svc)
    size = log_size(svc)
    status, again = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0005")
    assert status == 200 and again["repeated"] is True and first["repeated"] is False
    for field in ("forgotten", "contentHash", "log", "checkpoint"):
        assert again[field] == first[field], field
    status, by_hash = svc.call(
        "DELETE", f"/v1/packages/{PKG}/memories", query={"contentHash": first["contentHash"]}
    )
    assert status == 200 and by_hash["log"] == first["log"] and by_hash["repeated"] is True
    assert log_size(svc) == size
    assert svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0404")[0] == 404


def test_skip_mode_lands_the_rest_and_reports_what_was_skipped(svc: Service) -> None:
    forgotten(svc)
    size = log_size(svc)
    copy_ = dict(target(), id="mem-0044", tags=["other"])
    fresh = [record(10), copy_, record(11)]
    status, body = post(svc, fresh)
    assert status == 409 and [h["index"] for h in body["forgotten"]] == [1]
    status, body = post(svc, fresh, query={"onForgotten": "skip"})
    assert status == 201, body
    assert body["accepted"] == 2 and body["refused"] == 1
    assert body["skipped"] == [{"index": 1, "id": "mem-0044", "rule": "exact", "forgetSeq": 2}]
    assert log_size(svc) == size + 2
    ids = {r["id"] for r in svc.call("GET", f"/v1/packages/{PKG}/memories")[1]["records"]}
    assert ids == {"mem-0001", "mem-0010", "mem-0011"}
    assert scan_everything(MARKER) == []  # the skipped record is not in the canonical bundle either
    assert post(svc, fresh, query={"onForgotten": "maybe"})[0] in (400, 422)


def _presigned(svc: Service, records: list[dict[str, Any]], query: dict[str, str] | None) -> dict[str, Any]:
    """POST .../uploads (with ``query``), PUT the bundle under the upload's key, run the ingest function
    from the SQS queue S3 notified, and answer the upload's status."""
    raw = json.dumps(bundle(records)).encode()
    status, up = svc.call("POST", f"/v1/packages/{PKG}/uploads", body={"size": len(raw)}, query=query)
    assert status == 201, up
    assert up["onForgotten"] == (query or {}).get("onForgotten", "refuse")
    svc.put_upload(up["uploadId"], raw, package=PKG)
    assert svc.pump() >= 1
    status, body = svc.call("GET", f"/v1/packages/{PKG}/uploads/{up['uploadId']}")
    assert status == 200, body
    return dict(body)


def test_skip_mode_for_a_presigned_upload_is_declared_when_the_url_is_asked_for(svc: Service) -> None:
    forgotten(svc)
    size = log_size(svc)
    fresh = [record(10), dict(target(), id="mem-0044", xpAwarded=7), record(11)]
    refused = _presigned(svc, fresh, None)  # the default stays: refuse the whole bundle, name the record
    assert refused["status"] == "rejected" and refused["error"]["code"] == "forgotten"
    assert refused["forgotten"] == [{"index": 1, "id": "mem-0044", "rule": "exact", "forgetSeq": 2}]
    assert refused["onForgotten"] == "refuse" and log_size(svc) == size
    skipped = _presigned(svc, fresh, {"onForgotten": "skip"})
    assert skipped["status"] == "ingested" and skipped["onForgotten"] == "skip", skipped
    summary = skipped["summary"]
    assert summary["accepted"] == 2 and summary["refused"] == 1
    assert summary["skipped"] == [{"index": 1, "id": "mem-0044", "rule": "exact", "forgetSeq": 2}]
    assert log_size(svc) == size + 2
    ids = {r["id"] for r in svc.call("GET", f"/v1/packages/{PKG}/memories")[1]["records"]}
    assert ids == {"mem-0001", "mem-0010", "mem-0011"}
    assert scan_everything(MARKER) == []  # not in the canonical bundle, and the raw upload is deleted
    listed = svc.call("GET", f"/v1/packages/{PKG}/uploads")[1]["uploads"]
    assert sorted(u["onForgotten"] for u in listed) == ["refuse", "skip"]
    status, body = svc.call("POST", f"/v1/packages/{PKG}/uploads", body={}, query={"onForgotten": "maybe"})
    assert status in (400, 422) and "onForgotten" in json.dumps(body)


def test_forget_a_file_everywhere_then_refuse_its_content(svc: Service) -> None:
    secretless = f"# Runbook\n\n{MARKER}: drain the queue first.\n"
    files = {"knowledge": [{"path": "knowledge/runbook.md", "content": secretless}]}
    assert post(svc, [record(1)], extra=files)[0] == 201
    status, exported = svc.call("POST", f"/v1/packages/{PKG}/cartridges", body={})
    assert status == 201 and exported["status"] == "ready"
    assert scan_everything(MARKER)  # row, canonical bundle, cartridge
    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/files/knowledge/runbook.md")
    assert status == 200, body
    assert (
        body["forgottenFile"] == "knowledge/runbook.md"
        and exported["cartridgeId"] in body["revokedCartridges"]
    )
    assert scan_everything(MARKER) == []  # every table item and every S3 object version
    assert svc.call("GET", f"/v1/packages/{PKG}/cartridges/{exported['cartridgeId']}")[0] == 410
    assert verified(svc) == "ok"
    size = log_size(svc)
    again = svc.call("DELETE", f"/v1/packages/{PKG}/files/knowledge%2Frunbook.md")
    assert again[0] == 200 and again[1]["repeated"] is True and again[1]["log"] == body["log"]
    by_hash = svc.call("DELETE", f"/v1/packages/{PKG}/files", query={"contentHash": body["contentHash"]})
    assert by_hash[0] == 200 and by_hash[1]["repeated"] is True
    assert log_size(svc) == size
    moved = {"knowledge": [{"path": "knowledge/elsewhere.md", "content": secretless.upper()}]}
    status, refused = post(svc, [record(2)], extra=moved)
    assert status == 409 and refused["forgottenFiles"] == ["knowledge/elsewhere.md"], refused
    assert svc.call("DELETE", f"/v1/packages/{PKG}/files/knowledge/none.md")[0] == 404
    assert (
        svc.call("DELETE", f"/v1/packages/{PKG}/files/knowledge/runbook.md", scopes=["memory:read"])[0] == 403
    )


def test_the_tombstones_hold_no_text_and_no_unkeyed_hash(svc: Service) -> None:
    from acx.core.canonical import sha256_hex
    from acx.core.forgetting import knowledge_text

    body = forgotten(svc)
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    items = [
        i
        for page in ddb.get_paginator("scan").paginate(TableName=svc.env["RECORDS_TABLE"])
        for i in page["Items"]
    ]
    stones = [i for i in items if i["sk"]["S"].startswith("t#")]
    assert {s["sk"]["S"][:4] for s in stones} == {"t#k#", "t#i#", "t#n#"}
    text = repr(stones)
    plain = [
        "mem-0005",
        MARKER,
        sha256_hex(knowledge_text(target()["title"], target()["summary"])),  # unkeyed: dictionary-checkable
    ]
    for needle in plain:
        assert needle not in text
    assert body["contentHash"] not in repr(stones)  # the old tombstone keyed on it in clear
