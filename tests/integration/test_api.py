"""The api, ingest, export and verify handlers on moto, driven by API Gateway v2, SQS, EventBridge events."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import boto3
import pytest

from tests.integration.service import ROOT, Service, bundle, record, scan_everything, start_service

PKG = "team-notes"
# Built at run time so no scanner flags this test file itself.
PLANTED = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def test_health_needs_no_token_and_protected_routes_need_a_tenant(svc: Service) -> None:
    assert svc.call("GET", "/v1/health", tenant=None) == (200, {"status": "ok"})
    status, body = svc.call("GET", f"/v1/packages/{PKG}/memories", tenant=None)
    assert status == 401 and body["error"]["code"] == "unauthorized"


def test_inline_bundle_is_merged_receipted_and_recalled_with_the_advisory(svc: Service) -> None:
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1), record(2)]))
    assert status == 201, body
    assert body["accepted"] == 2 and body["log"] == {"fromSeq": 0, "toSeq": 1}
    assert body["checkpoint"].splitlines()[1] == "2"
    again = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(2), record(1)]))
    assert again[0] == 201 and again[1]["unchanged"] == 2 and again[1]["log"]["fromSeq"] is None
    status, page = svc.call("GET", f"/v1/packages/{PKG}/memories", query={"limit": "1"})
    assert status == 200 and page["advisory"] and page["corrupt"] is False
    assert [r["id"] for r in page["records"]] == ["mem-0001"] and page["nextCursor"]
    status, page2 = svc.call("GET", f"/v1/packages/{PKG}/memories", query={"cursor": page["nextCursor"]})
    assert [r["id"] for r in page2["records"]] == ["mem-0002"]


def test_invalid_record_refuses_the_whole_bundle_naming_the_path_and_writes_nothing(svc: Service) -> None:
    bad = record(2, portable="true")
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1), bad]))
    assert status == 422
    assert body["error"]["path"] == "$.records[1].portable"
    assert svc.call("GET", f"/v1/packages/{PKG}/memories")[0] == 404


def test_duplicate_keys_are_refused_with_their_path(svc: Service) -> None:
    raw = json.dumps(bundle([record(1)]))[:-1] + ', "skills": []}'
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=raw)
    assert status in (400, 422) and body["error"]["path"] == "$.skills"


def test_secret_is_blocked_never_echoed_and_never_persisted(svc: Service) -> None:
    poisoned = record(3, summary=f"the deploy token is {PLANTED} for now")
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1), poisoned]))
    assert status == 422 and body["error"]["code"] == "blocked"
    text = json.dumps(body)
    assert PLANTED not in text and PLANTED[4:20] not in text
    finding = body["report"]["findings"][0]
    assert finding["location"] == "record:mem-0003" and finding["path"] == "$.summary"
    assert scan_everything(PLANTED) == []
    assert svc.call("GET", f"/v1/packages/{PKG}/memories")[0] == 404


def test_idempotency_key_returns_the_first_answer_and_writes_once(svc: Service) -> None:
    headers = {"Idempotency-Key": "upload-42"}
    first = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)]), headers=headers)
    second = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)]), headers=headers)
    assert first == second and first[0] == 201 and first[1]["accepted"] == 1
    status, log = svc.call("GET", f"/v1/packages/{PKG}/log")
    assert status == 200 and log["size"] == 1
    other = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(2)]), headers=headers)
    assert other[0] == 422 and other[1]["error"]["code"] == "idempotency_key_reused"


def test_forget_erases_plaintext_everywhere_and_refuses_the_memory_back(svc: Service) -> None:
    marker = "Zebra-crossing-lesson-unique-7731"
    target = record(5, summary=f"{marker}: stop the rollout before the migration")
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1), target]))[0] == 201
    # An edited copy of the record: both versions' plaintext must go.
    edited = dict(target, summary=target["summary"] + " and page the owner")
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([edited]))[0] == 201
    status, exported = svc.call("POST", f"/v1/packages/{PKG}/cartridges", body={})
    assert status == 201 and exported["status"] == "ready"
    assert scan_everything(marker)  # it is stored before the forget

    status, body = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0005")
    assert status == 200, body
    assert body["forgotten"] == "mem-0005" and exported["cartridgeId"] in body["revokedCartridges"]
    assert scan_everything(marker) == []
    gone = svc.call("GET", f"/v1/packages/{PKG}/cartridges/{exported['cartridgeId']}")
    assert gone[0] == 410
    # Same id (any version), or the forgotten content under another id (same content slot).
    for again in (target, edited, dict(edited, id="mem-0099"), dict(edited, id="mem-0099", tags=["RETRIES"])):
        status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([again]))
        assert status == 409 and "tombstone" in body["error"]["message"] and marker not in json.dumps(body)
    status, verified = svc.call("GET", f"/v1/packages/{PKG}/log/verify")
    assert verified["status"] == "ok", verified


def test_forget_also_refuses_older_versions_and_the_ids_folded_into_the_memory(svc: Service) -> None:
    first = record(20, summary="Version one of the canary lesson")
    copy_ = dict(first, id="mem-0021")  # the same memory under another id: folded into mem-0020
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([first]))[0] == 201
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([copy_]))
    assert status == 201 and body["merged"] == 1
    second = dict(first, summary="Version two of the canary lesson, rewritten")
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([second]))[0] == 201
    assert svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0020")[0] == 200
    for again in (
        dict(first, id="mem-0077"),  # version one's content under a new id (a past slot)
        dict(second, id="mem-0021"),  # an id folded into the forgotten memory, new content
        dict(second, id="mem-0078"),  # the current version under a new id
    ):
        status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([again]))
        assert status == 409 and "tombstone" in body["error"]["message"], (again["id"], body)
    assert svc.call("GET", f"/v1/packages/{PKG}/log/verify")[1]["status"] == "ok"


def test_presigned_upload_is_ingested_through_sqs_and_the_raw_object_deleted(svc: Service) -> None:
    raw = json.dumps(bundle([record(7)])).encode()
    status, up = svc.call("POST", f"/v1/packages/{PKG}/uploads", body={"size": len(raw)})
    assert status == 201 and up["method"] == "PUT" and up["expiresIn"] <= 900
    query = parse_qs(urlparse(up["url"]).query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and int(query["X-Amz-Expires"][0]) <= 900
    assert "content-type" in query["X-Amz-SignedHeaders"][0]
    svc.put_upload(up["uploadId"], raw, package=PKG)
    assert svc.pump() >= 1
    status, job = svc.call("GET", f"/v1/packages/{PKG}/uploads/{up['uploadId']}")
    assert job["status"] == "ingested" and job["summary"]["accepted"] == 1
    s3 = boto3.client("s3", region_name="us-east-1")
    assert s3.list_objects_v2(Bucket=svc.env["UPLOADS_BUCKET"]).get("KeyCount", 0) == 0


def test_refused_upload_is_deleted_and_reported_without_the_secret(svc: Service) -> None:
    status, up = svc.call("POST", f"/v1/packages/{PKG}/uploads", body={})
    svc.put_upload(
        up["uploadId"], json.dumps(bundle([record(8, summary=f"token {PLANTED}")])).encode(), package=PKG
    )
    svc.pump()
    status, job = svc.call("GET", f"/v1/packages/{PKG}/uploads/{up['uploadId']}")
    assert status == 200 and job["status"] == "rejected" and job["report"]["blocked"] is True
    assert PLANTED not in json.dumps(job)
    assert scan_everything(PLANTED) == []


def test_export_signs_a_cartridge_and_the_download_url_is_scoped_and_short(
    svc: Service, tmp_path: Path
) -> None:
    from acx.core.trust import evaluate

    field = record(9, portable=False, repoId="acme/api", codebaseFingerprint="cbf1_" + "a" * 40)
    files = {
        "knowledge": [{"path": "knowledge/retries.md", "content": "# Retries\nBack off.\n"}],
        "skills": [
            {
                "path": "skills/retry-budget/SKILL.md",
                "content": "---\nname: retry-budget\ndescription: Retry within a budget.\n---\nBody\n",
            }
        ],
    }
    doc = {**bundle([record(1), record(2), field]), **files}
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=doc)[0] == 201
    status, exported = svc.call("POST", f"/v1/packages/{PKG}/cartridges", body={})
    assert status == 201 and "quarantined" in exported["fieldLearned"]
    status, dl = svc.call("GET", f"/v1/packages/{PKG}/cartridges/{exported['cartridgeId']}")
    assert status == 200 and dl["expiresIn"] <= 300
    url = urlparse(dl["url"])
    query = parse_qs(url.query)
    assert int(query["X-Amz-Expires"][0]) <= 300
    assert url.path.endswith(f"/cartridges/acme/{PKG}/{exported['cartridgeId']}.acx")
    s3 = boto3.client("s3", region_name="us-east-1")
    path = tmp_path / "c.acx"
    path.write_bytes(
        s3.get_object(
            Bucket=svc.env["CARTRIDGES_BUCKET"], Key=f"cartridges/acme/{PKG}/{exported['cartridgeId']}.acx"
        )["Body"].read()
    )
    status, registry = svc.call("GET", "/v1/trust-registry", tenant=None)
    verdict = evaluate(path, registry=registry)
    assert verdict.verdict == "trusted", verdict.reasons
    from acx.core.cartridge import CartridgeReader

    with CartridgeReader(path) as reader:
        assert {"rom/knowledge/retries.md", "rom/skills/retry-budget/SKILL.md"} <= set(reader.file_names())
        assert [s["name"] for s in reader.skills()] == ["retry-budget"]
    assert verdict.inclusion.get("checked", verdict.inclusion.get("proofs")), verdict.inclusion


def test_other_tenant_sees_nothing_and_cannot_write_into_the_package(svc: Service) -> None:
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)]))[0] == 201
    for method, path in (
        ("GET", f"/v1/packages/{PKG}/memories"),
        ("GET", f"/v1/packages/{PKG}/log"),
        ("DELETE", f"/v1/packages/{PKG}/memories/mem-0001"),
    ):
        status, body = svc.call(method, path, tenant="globex")
        assert status == 404 and "mem-0001" not in json.dumps(body)
    status, body = svc.call("GET", f"/v1/packages/{PKG}/memories", scopes=["memory:write"])
    assert status == 403


def test_scheduled_verification_writes_a_report(svc: Service) -> None:
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)]))[0] == 201
    event = json.loads((ROOT / "events" / "schedule-verify.json").read_text())
    from tests.integration.service import Context

    out = svc.verify.lambda_handler(copy.deepcopy(event), Context())
    assert out["packages"] == 1 and out["failed"] == 0
    s3 = boto3.client("s3", region_name="us-east-1")
    report = json.loads(s3.get_object(Bucket=svc.env["DATA_BUCKET"], Key=out["report"])["Body"].read())
    assert report["packages"][0]["status"] == "ok"
