"""Presigned URLs of the local stack: bound to method, bucket, key, content type and expiry."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest

from acx.local.presigned import Presigner, PresignRefused

NOW = 1_800_000_000.0


def _parts(url: str) -> tuple[str, str]:
    p = urlsplit(url)
    return p.path, p.query


def test_a_url_as_issued_passes_and_names_its_object() -> None:
    signer = Presigner(os.urandom(32), "http://127.0.0.1:1")
    url = signer.sign("PUT", "acx-uploads", "uploads/t/p/u 1.json", "application/json", 60, now=NOW)
    assert url.url.startswith("http://127.0.0.1:1/acx-uploads/uploads/t/p/u%201.json?")
    path, query = _parts(url.url)
    assert signer.check("PUT", path, query, {"content-type": "application/json"}, now=NOW + 59) == (
        "acx-uploads",
        "uploads/t/p/u 1.json",
    )


@pytest.mark.parametrize(
    "change",
    ["method", "bucket", "key", "content-type", "expiry", "signature", "secret", "expired", "no-signature"],
)
def test_a_url_changed_in_any_bound_part_is_refused(change: str) -> None:
    secret = os.urandom(32)
    signer = Presigner(secret, "")
    path, query = _parts(signer.sign("PUT", "b", "k/1", "application/json", 60, now=NOW).url)
    method, headers, now, checker = "PUT", {"content-type": "application/json"}, NOW, signer
    assert checker.check(method, path, query, headers, now=now) == ("b", "k/1")  # the control
    if change == "method":
        method = "GET"
    elif change == "bucket":
        path = path.replace("/b/", "/c/")
    elif change == "key":
        path = path.replace("k/1", "k/2")
    elif change == "content-type":
        headers = {"content-type": "text/html"}
    elif change == "expiry":
        query = query.replace(str(int(NOW) + 60), str(int(NOW) + 6000))
    elif change == "signature":
        query = query[:-1] + ("0" if query[-1] != "0" else "1")
    elif change == "secret":
        checker = Presigner(os.urandom(32), "")
    elif change == "expired":
        now = NOW + 61
    else:
        query = ""
    with pytest.raises(PresignRefused):
        checker.check(method, path, query, headers, now=now)


def test_the_secret_is_never_short() -> None:
    with pytest.raises(ValueError):
        Presigner(b"x" * 8)
    assert Presigner(b"x" * 32).sign("GET", "b", "k", "", 1).expires_in == 1  # the control
