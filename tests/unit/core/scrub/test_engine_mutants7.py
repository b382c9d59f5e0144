"""Base64 of zero bytes is a run of ``A``: the Twitter bearer-token trigger (21 A) used to fire at every
byte of such a run, so a blob holding about 600 zero bytes in a row spent its whole scan budget and was
refused, and a run of 101 A after a separator was named a Twitter token. Both are clean text.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from acx.core.scrub import scan_text

TWITTER_BEARER = (
    "AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAAA0%2BuSeid%2BULvsea4JtiGRiSDSJSI%3D"
    "EUifiRBkKG5E2XzMDjRfl76ZC9Ub0wnz4XsNiRVBChTYbJcE3F"
)


def _named(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


@pytest.mark.parametrize("zeros", [300, 600, 3000, 30000])
def test_a_base64_blob_with_a_long_run_of_zero_bytes_is_clean(zeros: int) -> None:
    """A data URI of a file with many zero bytes (an icon, a font, a wasm module): one long run of
    ``A`` between ordinary base64, and a blob that starts with it. Neither is a secret, and neither
    spends the scan budget (the run is one candidate, not one per byte)."""
    tail = bytes(range(1, 40)) * 3
    inner = base64.b64encode(b"\x89PNG header" + bytes(zeros) + tail).decode()
    leading = base64.b64encode(bytes(zeros) + tail).decode()
    assert _named(f"icon: data:image/png;base64,{inner}") == []
    assert _named(f"icon: data:image/png;base64,{leading}") == []
    assert _named("pad: " + "A" * zeros + "==") == []


@pytest.mark.parametrize("template", ["{}", "x {}", 'token = "{}"', "Authorization=Bearer {}"])
def test_a_twitter_bearer_token_is_still_named_wherever_it_stands(template: str) -> None:
    """A real bearer token (21 A, then its random part) is named by its rule at its own offset, at the
    start of a text and after any separator, and so is one following a long A run's separator."""
    text = template.format(TWITTER_BEARER)
    assert ("twitter-bearer-token", text.index("AAAA")) in _named(text)


def test_a_twitter_bearer_token_after_a_zero_blob_is_named() -> None:
    """The zero-byte run before it does not hide a token standing after it (each is its own candidate)."""
    blob = base64.b64encode(bytes(3000)).decode()
    text = f"{blob} {TWITTER_BEARER}"
    assert _named(text) == [("twitter-bearer-token", len(blob) + 1)]


def test_a_random_run_of_a_after_the_21_is_still_a_token() -> None:
    """Only a value made of nothing but ``A`` is excused: 21 A and any random rest is a token."""
    rest = (hashlib.sha256(b"twitter").hexdigest() * 2)[:90]
    assert _named(f"x {'A' * 21}{rest}") == [("twitter-bearer-token", 2)]


@pytest.mark.parametrize("name", ["myZendeskSecret", "apiZendeskSecret", "zendesk_secret", "ZENDESK_SECRET"])
def test_a_keyword_starting_a_camel_case_word_with_z_is_the_keyword(name: str) -> None:
    """``myZendeskSecret``: a capital after a lowercase letter starts a new camel-case word, Z included,
    so the Zendesk keyword there is at a word edge and its rule names the value."""
    value = hashlib.sha256(b"zendesk").hexdigest()[:40]
    assert _named(f"{name} = {value}") == [("zendesk-secret-key", len(name) + 3)]
