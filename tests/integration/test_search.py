"""Search through the real api handler on moto: ranking, filters, refusals, forget, indexes in S3."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest

from tests.integration.service import ROOT, Context, Service, bundle, record, scan_everything, start_service

PKG = "search-notes"
PATH = f"/v1/packages/{PKG}/memories/search"
SECRET = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def _seed(svc: Service) -> None:
    records = [
        record(
            1, title="DynamoDB throttling on hot partitions", summary="Spread writes with a random suffix."
        ),
        record(
            2, title="Lambda cold start", summary="Keep imports lazy; the layer stays small.", tags=["lambda"]
        ),
        record(3, title="Retry storms", summary="Exponential backoff with jitter stops a retry storm."),
        record(
            4,
            title="Zyzzyva incident notes",
            summary="The zyzzyva deploy broke the queue consumer.",
            portable=False,
            codebaseFingerprint="cbf1_" + "a" * 40,
            tags=["incident"],
        ),
    ]
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(records))
    assert status == 201, body


def _search(svc: Service, **query: str) -> tuple[int, dict]:
    return svc.call("GET", PATH, query=query)


def test_ranked_results_carry_score_signals_and_the_advisory(svc: Service) -> None:
    _seed(svc)
    status, body = _search(svc, q="backoff for retrying storms", k="3")
    assert status == 200, body
    assert body["advisory"].startswith("Memory informs, it never authorizes")
    assert body["engine"] == "local-hash-128"
    top = body["results"][0]
    assert top["id"] == "mem-0003"
    assert top["record"]["title"] == "Retry storms"
    assert top["signals"]["lexical"]["rank"] == 1
    assert set(top["signals"]["lexical"]["terms"]) >= {"backoff", "storm"}  # stemmed: storms -> storm
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True) and len(scores) <= 3


def test_tier_and_tag_filters(svc: Service) -> None:
    _seed(svc)
    _, body = _search(svc, q="zyzzyva deploy", tier="rom")
    assert "mem-0004" not in [r["id"] for r in body["results"]]
    _, body = _search(svc, q="zyzzyva deploy", tier="save")
    assert [r["id"] for r in body["results"]] == ["mem-0004"]
    _, body = _search(svc, q="cold start imports", tag="lambda")
    assert [r["id"] for r in body["results"]] == ["mem-0002"]


BAD_INPUT = [
    ({}, "$.q", "required"),
    ({"q": "   "}, "$.q", "blank"),
    ({"q": "x" * 4097}, "$.q", "4096"),
    ({"q": "abc\x00def"}, "$.q", "binary"),
    ({"q": "ok", "k": "0"}, "$.k", "1 to 50"),
    ({"q": "ok", "k": "51"}, "$.k", "1 to 50"),
    ({"q": "ok", "k": "ten"}, "$.k", "1 to 50"),
    ({"q": "ok", "tier": "gold"}, "$.tier", "rom or save"),
    ({"q": "ok", "tag": "t" * 129}, "$.tag", "128"),
]


def test_bad_input_is_a_400_naming_the_parameter_and_limit(svc: Service) -> None:
    _seed(svc)  # one service for every case: each would otherwise start its own moto stack
    for query, path, needle in BAD_INPUT:
        status, body = _search(svc, **query)
        assert status == 400, (query, body)
        assert body["error"]["path"] == path and needle in body["error"]["message"], (query, body)


def test_a_4096_character_question_is_answered_and_nothing_relevant_says_so(svc: Service) -> None:
    _seed(svc)
    question = ("why do the retries of the payment test keep failing after a deploy " * 70)[:4096]
    status, body = _search(svc, q=question)
    assert status == 200 and body["results"] and body["reason"] is None
    status, body = _search(svc, q="sourdough bread recipe")
    assert status == 200 and body["results"] == [] and body["reason"] == "no_match"


def test_other_tenants_and_scopes_see_nothing(svc: Service) -> None:
    _seed(svc)
    status, _ = svc.call("GET", PATH, query={"q": "retry"}, tenant="other")
    assert status == 404
    status, _ = svc.call("GET", PATH, query={"q": "retry"}, scopes=["memory:write"])
    assert status == 403


def test_a_secret_in_the_query_is_neither_logged_nor_echoed(
    svc: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(svc)
    status, _ = _search(svc, q=f"token {SECRET}")
    assert status == 200
    status, err = _search(svc, q=f"{SECRET}\x00")
    assert status == 400 and SECRET not in json.dumps(err)
    out = capsys.readouterr()
    assert SECRET not in out.out and SECRET not in out.err
    assert scan_everything(SECRET) == []


def test_forget_removes_the_memory_from_results_and_from_every_index_object(svc: Service) -> None:
    _seed(svc)
    assert [r["id"] for r in _search(svc, q="zyzzyva")[1]["results"]] == ["mem-0004"]
    assert any("/indexes/" in where for where in scan_everything("zyzzyva"))
    status, _ = svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0004")
    assert status == 200
    assert _search(svc, q="zyzzyva")[1]["results"] == []
    assert scan_everything("zyzzyva") == []  # no segment, no old version, no bundle holds it


def test_new_writes_invalidate_the_warm_cache(svc: Service) -> None:
    _seed(svc)
    assert _search(svc, q="kestrel")[1]["results"] == []
    svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(9, title="Kestrel rollout")]))
    assert [r["id"] for r in _search(svc, q="kestrel")[1]["results"]] == ["mem-0009"]


def _manifest(svc: Service) -> dict:
    s3 = boto3.client("s3", region_name="us-east-1")
    key = f"indexes/acme/{PKG}/manifest.json"
    return json.loads(s3.get_object(Bucket=svc.env["DATA_BUCKET"], Key=key)["Body"].read())


def test_each_ingest_adds_one_segment_and_the_scheduled_run_compacts_them(svc: Service) -> None:
    from acx.usecases import search as search_uc

    for batch in range(search_uc.COMPACT_AT + 2):
        recs = [record(100 + batch * 3 + j, title=f"batch {batch} note {j}") for j in range(3)]
        assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(recs))[0] == 201
    manifest = _manifest(svc)
    assert len(manifest["segments"]) == search_uc.COMPACT_AT + 2
    assert all(s["docs"] == 3 for s in manifest["segments"])  # O(batch): one small segment per upload
    before = _search(svc, q="batch 4 note", k="5")[1]["results"]
    event = json.loads((ROOT / "events" / "schedule-verify.json").read_text())
    svc.verify.lambda_handler(event, Context())
    manifest = _manifest(svc)
    assert len(manifest["segments"]) == 1 and manifest["segments"][0]["docs"] == 3 * (
        search_uc.COMPACT_AT + 2
    )
    search_uc.CACHE.views.clear()
    after = _search(svc, q="batch 4 note", k="5")[1]["results"]
    assert [r["id"] for r in after] == [r["id"] for r in before]


def test_a_package_without_an_index_is_rebuilt_from_the_log(svc: Service) -> None:
    from acx.usecases import search as search_uc

    _seed(svc)
    s3 = boto3.client("s3", region_name="us-east-1")
    bucket = svc.env["DATA_BUCKET"]
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix="indexes/"):
        for v in page.get("Versions", []):
            s3.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
    search_uc.CACHE.views.clear()
    assert _search(svc, q="hot partitions")[1]["results"][0]["id"] == "mem-0001"
    assert len(_manifest(svc)["segments"]) == 1


def test_an_index_built_by_another_engine_is_rebuilt_not_queried(svc: Service) -> None:
    from acx.adapters.search_index import Manifest
    from acx.usecases import search as search_uc

    _seed(svc)
    s3 = boto3.client("s3", region_name="us-east-1")
    key = f"indexes/acme/{PKG}/manifest.json"
    doc = _manifest(svc)
    doc["engine"] = {"id": "bedrock:amazon.titan-embed-text-v2:0:256", "dim": 256}
    s3.put_object(Bucket=svc.env["DATA_BUCKET"], Key=key, Body=json.dumps(doc).encode())
    search_uc.CACHE.views.clear()
    status, body = _search(svc, q="hot partitions")
    assert status == 200 and body["results"][0]["id"] == "mem-0001"
    assert _manifest(svc)["engine"] == {"id": "local-hash-128", "dim": 128}
    assert Manifest  # the manifest type the store reads


def test_other_instances_changes_show_after_the_revalidation_interval_and_stale_views_skip_forgotten(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm view is revalidated against the manifest at most every REVALIDATE_SECONDS. A change
    made by another api instance (here: the cached view put back after this process's forget and
    ingest, as another instance would still hold it) shows once the interval passes, and even the
    stale view never returns the forgotten memory: every hit is re-read from the log."""
    from acx.usecases import search as search_uc

    clock = [1000.0]
    monkeypatch.setattr(search_uc.time, "monotonic", lambda: clock[0])
    _seed(svc)
    assert [r["id"] for r in _search(svc, q="zyzzyva")[1]["results"]] == ["mem-0004"]
    key = ("acme", PKG)
    stale = search_uc.CACHE.get(key)
    assert stale is not None
    assert svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0004")[0] == 200
    svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(7, title="Kestrel rollout")]))
    search_uc.CACHE.put(key, stale)  # another instance: it still holds the view from before both
    stale.checked = clock[0]
    assert "mem-0004" in set(stale.view.ids())  # the stale view still ranks the forgotten memory...
    assert _search(svc, q="zyzzyva")[1]["results"] == []  # ...and the log drops it
    assert _search(svc, q="kestrel")[1]["results"] == []  # the new memory: not yet revalidated
    clock[0] += search_uc.REVALIDATE_SECONDS + 0.01
    assert [r["id"] for r in _search(svc, q="kestrel")[1]["results"]] == ["mem-0007"]
    assert "mem-0004" not in set(search_uc.CACHE.get(key).view.ids())  # type: ignore[union-attr]


def test_an_ingest_indexing_after_a_racing_forget_removes_the_forgotten_memory_again(svc: Service) -> None:
    """The hook of an ingest that committed before a forget but indexes after it: the state check
    (rows read by state only) sees the tombstone and takes the memory out of the new segment."""
    from acx.usecases import search as search_uc
    from acx.usecases.deps import deps

    _seed(svc)
    late = record(4, title="Zyzzyva incident notes", summary="The zyzzyva deploy broke the queue consumer.")
    assert svc.call("DELETE", f"/v1/packages/{PKG}/memories/mem-0004")[0] == 200
    search_uc.SearchIndexer(deps()).indexed("acme", PKG, [late], {}, new_package=False)
    assert _search(svc, q="zyzzyva")[1]["results"] == []
    assert scan_everything("zyzzyva") == []


def test_a_purged_segment_reads_as_segment_missing_on_s3() -> None:
    """S3 answers GetObject on a key with no current version with NoSuchKey (a delete marker or
    every version gone); the index adapter turns it into ``SegmentMissing`` so the use case rebuilds
    instead of matching botocore's error shape."""
    from moto import mock_aws

    from acx.adapters.objects import ObjectStore
    from acx.adapters.search_index import SearchIndexStore, SegmentMissing

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="data")
        s3.put_bucket_versioning(Bucket="data", VersioningConfiguration={"Status": "Enabled"})
        store = SearchIndexStore(ObjectStore(s3, "data"))
        s3.put_object(Bucket="data", Key="seg-1", Body=b"x")
        assert store.get_segment("seg-1") == b"x"
        s3.delete_object(Bucket="data", Key="seg-1")  # a delete marker: old versions remain
        with pytest.raises(SegmentMissing):
            store.get_segment("seg-1")
        with pytest.raises(SegmentMissing):
            store.get_segment("never-written")
