"""The scrub gate through the API on moto: secrets in file paths, record ids, vector ids and behind
Unicode tricks are refused before anything is stored, and no output holds any piece of them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.service import Service, bundle, record, scan_everything, start_service

PKG = "team-notes"
# Built at run time so no scanner flags this test file itself.
TOKEN = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"
AWS = "AKIA" + "Q7X3M2N4B5V6C7Z8"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def pieces(secret: str) -> list[str]:
    """Every 8-character piece of ``secret`` (what a report must never hold)."""
    return [secret[i : i + 8] for i in range(len(secret) - 7)]


def assert_nowhere(secret: str, *outputs: str) -> None:
    for out in outputs:
        for piece in pieces(secret):
            assert piece not in out, piece
    for piece in (secret, secret[4:20]):
        assert scan_everything(piece) == []


def knowledge(path: str) -> dict[str, str]:
    return {"path": path, "content": "# Notes\n\nretry with jitter\n"}


@pytest.mark.parametrize(
    ("files", "where"),
    [
        ({"knowledge": [knowledge("knowledge/ok.md"), knowledge(f"knowledge/{TOKEN}.md")]}, "knowledge[1]"),
        (
            {"skills": [{"path": f"skills/{TOKEN}/SKILL.md", "content": "---\nname: x\n---\nbody\n"}]},
            "skills[0]",
        ),
    ],
)
def test_a_secret_in_a_file_path_is_refused_before_anything_is_stored(
    svc: Service, capsys: pytest.CaptureFixture[str], files: dict, where: str
) -> None:
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)], **files))
    assert status == 422 and body["error"]["code"] == "blocked", body
    locations = {f["location"] for f in body["report"]["findings"]}
    assert locations == {where}
    logs = capsys.readouterr()
    assert_nowhere(TOKEN, json.dumps(body), logs.out, logs.err)
    assert svc.call("GET", f"/v1/packages/{PKG}/memories")[0] == 404


def test_a_record_whose_id_is_a_secret_is_named_by_its_index(
    svc: Service, capsys: pytest.CaptureFixture[str]
) -> None:
    poisoned = record(2, id=TOKEN)
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1), poisoned]))
    assert status == 422 and body["error"]["code"] == "blocked", body
    assert {f["location"] for f in body["report"]["findings"]} == {"records[1]"}
    logs = capsys.readouterr()
    assert_nowhere(TOKEN, json.dumps(body), logs.out, logs.err)


def test_a_secret_in_a_vector_id_is_refused(svc: Service, capsys: pytest.CaptureFixture[str]) -> None:
    vectors = {"engine": {"id": "local-hash-128", "dim": 2}, "items": [{"id": TOKEN, "vector": [0.1, 0.2]}]}
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1)], vectors=vectors))
    assert status == 422 and body["error"]["code"] == "blocked", body
    logs = capsys.readouterr()
    assert_nowhere(TOKEN, json.dumps(body), logs.out, logs.err)


@pytest.mark.parametrize("trick", ["\u200b", "\u00ad", "\u200d", "\u202e"])
def test_invisible_characters_inside_a_key_do_not_hide_it(svc: Service, trick: str) -> None:
    hidden = AWS[:4] + trick + AWS[4:]
    status, body = svc.call(
        "POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1, summary=f"old key {hidden} rotated")])
    )
    assert status == 422 and body["error"]["code"] == "blocked", body
    finding = body["report"]["findings"][0]
    assert finding["path"] == "$.summary" and finding["offset"] == len("old key ")
    assert_nowhere(AWS, json.dumps(body))


def test_fullwidth_token_is_caught(svc: Service) -> None:
    wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in TOKEN)
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([record(1, title=wide)]))
    assert status == 422 and body["error"]["code"] == "blocked", body
    assert body["report"]["findings"][0]["rule"] == "github-pat"
