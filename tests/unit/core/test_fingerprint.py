"""Repo identity, codebase fingerprint and content address agree with the reference vectors."""

from __future__ import annotations

import hashlib

import pytest
import rfc8785

from acx.core.fingerprint import (
    MIN_SALT_BYTES,
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


# Repository identity at its edges: origins that reduce to nothing, ports, credentials, scp forms.
#
# The origin is user input (a git remote URL); two spellings of one repository must give one identity
# (else one codebase gets two fingerprints), and an origin with no repository in it must be refused
# (else every such origin shares one fingerprint).


@pytest.mark.parametrize("origin", ["", " ", "\t\n"])
def test_an_empty_origin_is_refused(origin: str) -> None:
    with pytest.raises(ValueError, match="empty repository origin"):
        canonical_repo_identity(origin)


@pytest.mark.parametrize(
    "origin", ["https://", "ssh://git@", "/", "//", ".git", "/.git", "https://.git", "git@:"]
)
def test_an_origin_that_reduces_to_nothing_is_refused(origin: str) -> None:
    with pytest.raises(ValueError, match="no host or path"):
        canonical_repo_identity(origin)


@pytest.mark.parametrize(
    ("origin", "identity"),
    [
        ("https://github.com/acme/api.git", "github.com/acme/api"),
        ("https://github.com:443/acme/api", "github.com/acme/api"),
        ("http://github.com:80/acme/api", "github.com/acme/api"),
        ("http://github.com:443/acme/api", "github.com:443/acme/api"),
        ("ssh://git@github.com:22/acme/api.git", "github.com/acme/api"),
        ("git+ssh://git@github.com:22/acme/api", "github.com/acme/api"),
        ("ssh+git://github.com:22/acme/api", "github.com/acme/api"),
        ("https://user:token@github.com/acme/api", "github.com/acme/api"),
        ("https://a@b@github.com/acme/api", "github.com/acme/api"),
        ("git@github.com:acme/api.git", "github.com/acme/api"),
        ("git@github.com:/acme/api", "github.com/acme/api"),
        ("github.com:acme/api", "github.com/acme/api"),
        ("GitHub.com/Acme/API.git/", "github.com/acme/api"),
        ("github.com/acme/api.git.git", "github.com/acme/api.git"),
        ("github.com/acme/api/.git", "github.com/acme/api"),
        ("file://host/path/x", "host/path/x"),
        ("ftp://host:21/r", "host:21/r"),
        ("/srv/repos/api.git", "/srv/repos/api"),
        ("host/dir:with-colon", "host/dir:with-colon"),
        ("commit:ABC", "commit:abc"),
        ("  https://github.com/acme/api  ", "github.com/acme/api"),
    ],
)
def test_one_repository_one_identity(origin: str, identity: str) -> None:
    assert canonical_repo_identity(origin) == identity


def test_fingerprint_is_keyed_and_needs_a_long_salt() -> None:
    salt = bytes(range(MIN_SALT_BYTES))
    fp = codebase_fingerprint(salt, "github.com/acme/api")
    assert fp.startswith("cbf1_") and len(fp) == 45
    assert fp != codebase_fingerprint(bytes(reversed(salt)), "github.com/acme/api")
    assert codebase_fingerprint(salt + b"x", "github.com/acme/api") != fp
    with pytest.raises(ValueError, match=f"at least {MIN_SALT_BYTES} bytes"):
        codebase_fingerprint(salt[:-1], "github.com/acme/api")


def test_artifact_object_takes_the_recorded_values_when_present() -> None:
    record = {
        "title": "T",
        "summary": " S ",
        "sourceType": "Doc",
        "projectLabel": "P",
        "repoId": "acme/api",
        "timestamp": "2026-01-01T00:00:00Z",
        "impact": "negative",
        "xpAwarded": 7,
        "tags": ["b", "A"],
    }
    assert artifact_object(record) == {
        "title": "t",
        "summary": "s",
        "sourceType": "doc",
        "repoId": "acme/api",
        "projectLabel": "p",
        "timestamp": "2026-01-01T00:00:00Z",
        "impact": "negative",
        "xpAwarded": 7,
        "tags": ["a", "b"],
    }
    assert artifact_object({"title": 5, "xpAwarded": 0, "tags": None})["title"] == ""


def test_slot_key_zone_needs_portable_true_exactly() -> None:
    base = {"title": "t", "summary": "s"}
    assert slot_key(base | {"portable": True}).endswith("|rom|")
    for value in (False, None, 1, "true"):
        assert slot_key(base | {"portable": value}).split("|")[1] == "save"


def test_an_at_sign_after_the_host_is_part_of_the_path() -> None:
    """Only a user@ before the first slash is credentials; a path may hold an @ (a version, a scope)."""
    assert canonical_repo_identity("example.org/team/repo@v2") == "example.org/team/repo@v2"
    assert canonical_repo_identity("git@example.org:team/@scope/repo") == "example.org/team/@scope/repo"
