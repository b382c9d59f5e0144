"""Service limits and strict parsing, through the api handler on moto.

Every refusal: a 4xx with ``error.code`` and ``error.path`` naming where, a message naming the limit
where there is one, nothing written (the seeded package's log does not grow, a fresh package still
404s), and no echo of the offending value (it could be a secret).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration import service
from tests.integration.service import Service, scan_everything, start_service

SEEDED = "limits-seeded"
FRESH = "limits-fresh"
# Built at run time so no scanner flags this file; long and random enough to be unmistakable.
SECRET = "ghp_" + "Zq8Wv3Nt6Rk1Pd9Lm4Hx7Cb2Fj5Ys0Ga3Ue"


def record(i: int = 1, **over: Any) -> dict[str, Any]:
    """``service.record`` under this module's ids, titled "Limit lesson <i>" (tests edit that text)."""
    return service.record(i, **{"id": f"lim-{i:04d}", "title": f"Limit lesson {i}", **over})


def bundle(records: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return service.bundle([record()] if records is None else records, **extra)


@pytest.fixture(scope="module")
def svc() -> Iterator[Service]:
    for running in start_service():
        status, body = running.call("POST", f"/v1/packages/{SEEDED}/bundles", body=bundle([record(0)]))
        assert status == 201, body
        yield running


def log_size(svc: Service) -> int:
    status, body = svc.call("GET", f"/v1/packages/{SEEDED}/log")
    assert status == 200, body
    return int(body["size"])


def refused(
    svc: Service,
    body: bytes | str | dict,
    status: int,
    code: str,
    path: str | None,
    *,
    limit: str | None = None,
    secret: str | None = None,
    path_prefix: bool = False,
) -> dict[str, Any]:
    """POST ``body`` to the seeded and to a fresh package; both refused alike, nothing written."""
    before = log_size(svc)
    answers = []
    for pkg in (SEEDED, FRESH):
        got_status, got = svc.call("POST", f"/v1/packages/{pkg}/bundles", body=body)
        assert got_status == status, (got_status, got)
        assert isinstance(got, dict) and set(got) == {"error"}, got
        error = got["error"]
        assert error["code"] == code, error
        if path is not None:
            assert error["path"].startswith(path) if path_prefix else error["path"] == path, error
        if limit is not None:
            assert limit in error["message"], error
        if secret is not None:
            text = json.dumps(got)
            assert secret not in text and secret[4:20] not in text, text
        answers.append(got)
    assert answers[0] == answers[1]
    assert log_size(svc) == before
    assert svc.call("GET", f"/v1/packages/{FRESH}/memories")[0] == 404
    return answers[0]


# --- size and count limits


def test_inline_body_over_5_mib_is_413(svc: Service) -> None:
    filler = "x" * 1000
    doc = bundle([record(i, summary=filler) for i in range(5300)])
    raw = json.dumps(doc)
    assert len(raw) > 5 * 1024 * 1024
    error = refused(svc, raw, 413, "body_too_large", "$", limit=str(5 * 1024 * 1024))
    assert "/uploads" in error["error"]["message"]


def test_too_many_records_is_413(svc: Service) -> None:
    # Records are checked as they stream in: all valid, the 10,001st is refused for the count.
    many = [record(i) for i in range(10_001)]
    refused(svc, bundle(many), 413, "too_many_records", "$.records", limit="10000")


@pytest.mark.parametrize(
    ("field", "limit"), [("title", 512), ("summary", 16_384), ("sourceType", 1024), ("repoLabel", 1024)]
)
def test_string_longer_than_its_field_limit(svc: Service, field: str, limit: int) -> None:
    value = (SECRET + " ") * (limit // len(SECRET) + 2)
    refused(
        svc,
        bundle([record(1, **{field: value})]),
        422,
        "too_long",
        f"$.records[0].{field}",
        limit=str(limit),
        secret=SECRET,
    )


def test_string_at_its_limit_is_accepted(svc: Service) -> None:
    ok = record(7, title="t" * 512, summary="s" * 16_384, tags=["t" * 128] * 64)
    status, body = svc.call("POST", f"/v1/packages/{SEEDED}-edge/bundles", body=bundle([ok]))
    assert status == 201, body


def test_too_many_tags(svc: Service) -> None:
    refused(
        svc,
        bundle([record(1, tags=[f"t{i}" for i in range(65)])]),
        422,
        "too_many_tags",
        "$.records[0].tags",
        limit="64",
    )


def test_tag_too_long(svc: Service) -> None:
    refused(
        svc,
        bundle([record(1, tags=["ok", SECRET * 4])]),
        422,
        "too_long",
        "$.records[0].tags[1]",
        limit="128",
        secret=SECRET,
    )


def test_nesting_deeper_than_16_levels(svc: Service) -> None:
    deep: Any = "x"
    for _ in range(20):
        deep = [deep]
    refused(
        svc,
        bundle([record(1, title=deep)]),
        422,
        "too_deep",
        "$.records[0].title",
        limit="16",
        path_prefix=True,
    )


def test_pathological_nesting_is_refused_not_crashed(svc: Service) -> None:
    raw = "[" * 100_000 + "]" * 100_000
    refused(svc, raw, 422, "invalid_json", "$")


def test_knowledge_and_skill_bytes_over_4_mib_is_413(svc: Service) -> None:
    chunk = "k" * (1024 * 1024)
    files = [{"path": f"knowledge/part-{i}.md", "content": chunk} for i in range(4)]
    files.append({"path": "knowledge/part-4.md", "content": SECRET})
    refused(
        svc,
        bundle(knowledge=files),
        413,
        "files_too_large",
        "$.knowledge[4].content",
        limit=str(4 * 1024 * 1024),
        secret=SECRET,
    )


# --- ids


@pytest.mark.parametrize(
    ("pkg", "fragment"), [("Bad_Pkg", "[a-z0-9-]"), ("a" * 65, "64"), ("sp%20ace", "[a-z0-9-]")]
)
def test_package_id_charset_and_length(svc: Service, pkg: str, fragment: str) -> None:
    status, body = svc.call("POST", f"/v1/packages/{pkg}/bundles", body=bundle())
    assert status == 400, body
    assert body["error"]["path"] == "$.pkg" and fragment in body["error"]["message"], body


@pytest.mark.parametrize("rid", ["a" * 129, "has space", "sl/ash", "", "ü-nicode"])
def test_record_id_charset_and_length(svc: Service, rid: str) -> None:
    error = refused(svc, bundle([record(1, id=rid)]), 422, "invalid_record", "$.records[0].id")
    if rid:
        assert "1-128" in error["error"]["message"] and "[A-Za-z0-9._:-]" in error["error"]["message"]


def test_forget_by_overlong_record_id_is_400(svc: Service) -> None:
    status, body = svc.call("DELETE", f"/v1/packages/{SEEDED}/memories/{'a' * 129}")
    assert status == 400 and body["error"]["path"] == "$.id" and "128" in body["error"]["message"]


# --- pagination


@pytest.mark.parametrize(
    ("limit", "fragment"), [("0", "1"), ("1001", "1000"), ("-5", "1"), ("abc", "integer")]
)
def test_pagination_limit_out_of_range_is_400(svc: Service, limit: str, fragment: str) -> None:
    status, body = svc.call("GET", f"/v1/packages/{SEEDED}/memories", query={"limit": limit})
    assert status == 400, body
    assert body["error"]["path"] == "$.limit" and fragment in body["error"]["message"], body


@pytest.mark.parametrize(
    "cursor", ["garbage", "", "eyJ4IjoxfQ", "%%%", "A" * 2048, "eyJzayI6InIjenp6In0=", "bnVsbA", "W10"]
)
def test_garbage_cursor_is_400(svc: Service, cursor: str) -> None:
    status, body = svc.call("GET", f"/v1/packages/{SEEDED}/memories", query={"cursor": cursor})
    if cursor == "":
        assert status == 200, body  # an empty cursor is the first page
        return
    assert status == 400, body
    assert (
        body["error"]["code"] in ("invalid_cursor", "invalid_request") and "cursor" in body["error"]["path"]
    )
    assert cursor not in json.dumps(body) or len(cursor) < 4


def test_cursor_longer_than_2048_is_400(svc: Service) -> None:
    status, body = svc.call("GET", f"/v1/packages/{SEEDED}/memories", query={"cursor": "A" * 2049})
    assert status == 400 and body["error"]["path"] == "$.cursor" and "2048" in body["error"]["message"]


# --- strict JSON and shape


def test_invalid_utf8_body(svc: Service) -> None:
    raw = json.dumps(bundle()).encode().replace(b"Limit lesson", b"Limit \xff\xfe lesson")
    error = refused(svc, raw, 422, "invalid_json", "$.records[0]")  # the record holding the bad bytes
    assert "UTF-8" in error["error"]["message"]


def test_invalid_utf8_body_on_small_routes_is_400(svc: Service) -> None:
    for route in ("uploads", "cartridges"):
        status, body = svc.call("POST", f"/v1/packages/{SEEDED}/{route}", body=b'{"size": \xff}')
        assert status == 400 and body["error"]["code"] == "invalid_json", body


def test_duplicate_keys(svc: Service) -> None:
    raw = json.dumps(bundle([record(1)]))
    raw = raw.replace('"title": "Limit lesson 1"', f'"title": "Limit lesson 1", "title": "{SECRET}"')
    refused(svc, raw, 422, "invalid_json", "$.records[0].title", secret=SECRET)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers(svc: Service, token: str) -> None:
    raw = json.dumps(bundle([record(1)])).replace('"xpAwarded": 1', f'"xpAwarded": {token}')
    refused(svc, raw, 422, "invalid_json", "$.records[0].xpAwarded")


@pytest.mark.parametrize("number", [2**53, -(2**53), 2**64])
def test_integers_beyond_2_53(svc: Service, number: int) -> None:
    raw = json.dumps(bundle([record(1)])).replace('"xpAwarded": 1', f'"xpAwarded": {number}')
    error = refused(svc, raw, 422, "invalid_json", "$.records[0].xpAwarded")
    assert "2^53" in error["error"]["message"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("title", 5),
        ("summary", None),
        ("tags", "retries"),
        ("portable", "true"),
        ("xpAwarded", "5"),
        ("timestamp", 1710000000),
        ("impact", ["neutral"]),
        ("repoId", 7),
    ],
)
def test_wrong_types(svc: Service, field: str, value: Any) -> None:
    refused(svc, bundle([record(1, **{field: value})]), 422, "invalid_record", f"$.records[0].{field}")


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"records": {}}, "$.records"),
        ({"knowledge": "x"}, "$.knowledge"),
        ({"schemaVersion": 1}, "$.schemaVersion"),
    ],
)
def test_wrong_top_level_types(svc: Service, doc: dict[str, Any], path: str) -> None:
    error = svc.call("POST", f"/v1/packages/{SEEDED}/bundles", body={**bundle(), **doc})
    assert error[0] == 422 and error[1]["error"]["path"] == path, error


def test_unknown_top_level_field(svc: Service) -> None:
    refused(svc, bundle(extra=True), 422, "unknown_field", "$.extra")


def test_unknown_record_field(svc: Service) -> None:
    refused(
        svc, bundle([record(1, bogus=SECRET)]), 422, "invalid_record", "$.records[0].bogus", secret=SECRET
    )


@pytest.mark.parametrize(
    "key", [SECRET, "AKIA" + "Z7Q4" + "MPLE" + "K3XD" + "W9QA", "password=" + SECRET[4:]]
)
def test_unknown_field_names_that_look_like_secrets_are_not_echoed(svc: Service, key: str) -> None:
    for doc in ({**bundle(), key: 1}, bundle([record(1, **{key: 1})])):
        status, body = svc.call("POST", f"/v1/packages/{SEEDED}/bundles", body=doc)
        assert status == 422 and body["error"]["code"] in ("unknown_field", "invalid_record"), body
        text = json.dumps(body)
        assert key not in text and key[4:16] not in text, text


@pytest.mark.parametrize(
    ("where", "path"),
    [
        ("knowledge", "../x.md"),
        ("knowledge", "/etc/x.md"),
        ("knowledge", "knowledge\\x.md"),
        ("knowledge", "knowledge/x\x00.md"),
        ("knowledge", "knowledge/../x.md"),
        ("knowledge", "knowledge/./x.md"),
        ("knowledge", "knowledge//x.md"),
        ("knowledge", "C:\\x.md"),
        ("knowledge", "knowledge/x.md/"),
        ("skills", "skills/../SKILL.md"),
        ("skills", "skills/a/../SKILL.md"),
        ("skills", "/skills/a/SKILL.md"),
        ("skills", "skills\\a\\SKILL.md"),
        ("skills", "skills/a/SKILL.md\x00"),
    ],
)
def test_escaping_file_paths(svc: Service, where: str, path: str) -> None:
    doc = bundle(**{where: [{"path": path, "content": "# hi\n"}]})
    error = refused(svc, doc, 422, "invalid_path", f"$.{where}[0].path")
    assert path not in error["error"]["message"]


def test_nothing_refused_here_was_persisted(svc: Service) -> None:
    # Runs last in this module: no refused bundle above left the planted value anywhere.
    assert scan_everything(SECRET) == []
    assert scan_everything(SECRET[4:24]) == []


@pytest.mark.parametrize("route", ["uploads", "cartridges"])
def test_small_routes_do_not_echo_secret_looking_keys(svc: Service, route: str) -> None:
    for raw in (json.dumps({SECRET: 1}), f'{{"{SECRET}": 1, "{SECRET}": 2}}'):
        status, body = svc.call("POST", f"/v1/packages/{SEEDED}/{route}", body=raw)
        assert status in (400, 422) and SECRET[4:16] not in json.dumps(body), body
