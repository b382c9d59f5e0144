"""Repository identity at its edges: origins that reduce to nothing, ports, credentials, scp forms.

The origin is user input (a git remote URL); two spellings of one repository must give one identity
(else one codebase gets two fingerprints), and an origin with no repository in it must be refused
(else every such origin shares one fingerprint).
"""

from __future__ import annotations

import pytest

from acx.core.fingerprint import (
    MIN_SALT_BYTES,
    artifact_object,
    canonical_repo_identity,
    codebase_fingerprint,
    slot_key,
)


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
