"""acx.client.records: plain words become valid ACX records, with ids, titles and repo fingerprints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acx.client import records as rec
from acx.core.fingerprint import codebase_fingerprint
from acx.core.records import validate_record


def test_a_sentence_becomes_a_valid_portable_record_with_derived_id_and_title() -> None:
    record = rec.build_record("Retry the upload with backoff. It fails on cold caches.", tags=["ci", "ci"])
    assert validate_record(record) is record
    assert record["title"] == "Retry the upload with backoff."
    assert record["id"].startswith("mem-") and len(record["id"]) == 4 + 16
    assert (record["portable"], record["codebaseFingerprint"], record["repoId"]) == (True, None, None)
    assert record["tags"] == ["ci"] and record["impact"] == "neutral" and record["xpAwarded"] == 0


def test_the_same_lesson_gets_the_same_id_so_a_retry_lands_once() -> None:
    a = rec.build_record("Use  jitter.", timestamp="2026-01-01T00:00:00Z")
    b = rec.build_record("use jitter.", timestamp="2026-02-01T00:00:00Z")
    assert a["id"] == b["id"]
    bound = rec.build_record("Use jitter.", fingerprint="cbf1_" + "a" * 40)
    assert bound["id"] != a["id"]  # another tier is another memory: never folded together


def test_a_repo_bound_record_carries_only_the_fingerprint() -> None:
    record = rec.build_record("Tests need the docker socket.", fingerprint="cbf1_" + "b" * 40)
    assert validate_record(record)["portable"] is False
    assert record["repoId"] is None and record["repoLabel"] == "field-learned"


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        ("  ", {}, "empty"),
        ("x" * 16_385, {}, "at most"),
        ("x", {"impact": "great"}, "impact"),
        ("x", {"tags": [""]}, "tag"),
    ],
)
def test_plain_words_that_cannot_be_a_record_say_why(text: str, kwargs: dict, message: str) -> None:
    with pytest.raises(rec.RecordInputError, match=message):
        rec.build_record(text, **kwargs)


def test_a_long_first_sentence_is_cut_at_a_word() -> None:
    title = rec.derive_title("word " * 40)
    assert len(title) <= rec.TITLE_MAX and title.endswith("…") and "wor…" not in title


def test_revise_keeps_fields_replaces_the_text_and_rederives_a_derived_title() -> None:
    old = rec.build_record("Old lesson. Details.", tags=["a"])
    old["artifactFingerprint"] = "0123456789"
    new = rec.revise_record(old, "New lesson. More.")
    assert new["id"] == old["id"] and new["tags"] == ["a"] and new["title"] == "New lesson."
    assert "artifactFingerprint" not in new and validate_record(new)
    kept = rec.revise_record({**old, "title": "Hand-written"}, "Newer.")
    assert kept["title"] == "Hand-written"
    assert rec.revise_record(old, "Newer.", title="Given")["title"] == "Given"


def _checkout(path: Path, origin: str | None) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if origin:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def test_repo_identity_of_the_working_directory_and_of_an_url(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(_checkout(tmp_path / "c", "https://user:pw@github.com/Acme/API.git"))
    assert rec.repo_identity() == "github.com/acme/api"
    assert rec.repo_identity("git@github.com:acme/api.git") == "github.com/acme/api"
    with pytest.raises(rec.RecordInputError, match="neither a directory nor a git origin"):
        rec.repo_identity("some words")
    with pytest.raises(rec.RecordInputError, match="not a git checkout"):
        rec.repo_identity(_checkout(tmp_path / "empty", None))


def test_the_salt_is_created_on_first_use_saying_where(tmp_path: Path, monkeypatch, capsys) -> None:
    salt_file = tmp_path / "cfg" / "salt"
    monkeypatch.setenv("ACX_SALT_FILE", str(salt_file))
    fp = rec.repo_fingerprint("github.com/acme/api")
    assert str(salt_file) in capsys.readouterr().err and oct(salt_file.stat().st_mode)[-3:] == "600"
    salt = bytes.fromhex(salt_file.read_text().strip())
    assert fp == codebase_fingerprint(salt, "github.com/acme/api")
    assert rec.repo_fingerprint("https://github.com/acme/api") == fp and capsys.readouterr().err == ""
