"""Repo identity, codebase fingerprint and content address agree with the reference vectors."""

from __future__ import annotations

import hashlib

import pytest
import rfc8785

from acx.core.fingerprint import (
    artifact_fingerprint,
    artifact_object,
    canonical_repo_identity,
    codebase_fingerprint,
    content_address,
    slot_key,
)


def test_repo_identity_matches_every_vector(load_vector):
    for case in load_vector("repo-identity.json")["cases"]:
        assert canonical_repo_identity(case["url"]) == case["identity"], case["url"]


@pytest.mark.parametrize(
    ("origin", "identity"),
    [
        (
            "COMMIT:4B825DC642CB6EB9A060E54BF8D69288FBEE4904",
            "commit:4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        ),
        ("http://example.org:8080/a/b.git", "example.org:8080/a/b"),
        ("ssh://git@example.org:443/a/b", "example.org:443/a/b"),
        ("user:secret@example.org:team/repo.git/", "example.org/team/repo"),
    ],
)
def test_repo_identity_edge_cases(origin, identity):
    assert canonical_repo_identity(origin) == identity


@pytest.mark.parametrize("origin", ["", "   "])
def test_empty_origin_is_refused(origin):
    with pytest.raises(ValueError):
        canonical_repo_identity(origin)


def test_codebase_fingerprint_matches_every_vector(load_vector):
    doc = load_vector("codebase-fingerprint.json")
    salt = bytes.fromhex(doc["saltHex"])
    for case in doc["cases"]:
        assert codebase_fingerprint(salt, case["identity"]) == case["codebaseFingerprint"]


def test_short_salt_is_refused():
    with pytest.raises(ValueError, match="32 bytes"):
        codebase_fingerprint(b"x" * 31, "github.com/acme/api")


def test_artifact_fingerprint_matches_every_vector(load_vector):
    cases = load_vector("artifact-fingerprint.json")["cases"]
    assert len(cases) >= 30
    for case in cases:
        assert artifact_fingerprint(case["record"]) == case["artifactFingerprint"], case["record"]["id"]


def test_content_address_is_sha1_over_rfc8785_of_the_artifact_object(load_vector):
    record = load_vector("artifact-fingerprint.json")["cases"][0]["record"]
    expected = hashlib.sha1(rfc8785.dumps(artifact_object(record)), usedforsecurity=False).hexdigest()
    assert content_address(record) == expected and len(expected) == 40


def test_artifact_object_normalises_as_the_standard_says():
    obj = artifact_object({"title": "\ufeff  Hello\u3000", "tags": ["B", "a", "\ue000", "\U0001f600"]})
    assert obj["title"] == "hello"  # JS trim() strips U+FEFF and U+3000
    assert obj["summary"] == "" and obj["repoId"] is None and obj["timestamp"] == ""
    assert obj["impact"] == "neutral" and obj["xpAwarded"] == 0
    assert obj["tags"] == ["a", "b", "\U0001f600", "\ue000"]  # UTF-16 order: surrogates < U+E000


def test_fingerprint_ignores_tier_fields_but_slot_key_does_not():
    base = {"id": "a", "title": "t", "summary": "s", "portable": True, "codebaseFingerprint": None}
    other = base | {"portable": False, "codebaseFingerprint": "cbf1_" + "0" * 40, "id": "b"}
    assert artifact_fingerprint(base) == artifact_fingerprint(other)
    assert slot_key(base) != slot_key(other)
    assert slot_key(base) == f"{content_address(base)}|rom|"
    assert slot_key(other).endswith("|save|cbf1_" + "0" * 40)
