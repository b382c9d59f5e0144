"""Edges of the tombstone matcher that the main tests pass by: long deployment secrets, one-word texts
and probes as values. Each is a behaviour a forgotten memory's refusal depends on.
"""

from __future__ import annotations

import dataclasses

import pytest

from acx.core import forgetting as f

TITLE, SUMMARY = "Retry the deploy step", "The flaky deploy passed after three retries with backoff"


def test_a_secret_longer_than_blake2b_accepts_keys_the_sketch_with_its_first_64_bytes() -> None:
    """BLAKE2b takes a key of at most 64 bytes; a longer deployment secret (a 96-byte KMS data key,
    say) must still sketch, and the sketch must not depend on what lies past byte 64, so every
    tombstone written with that secret keeps matching."""
    long_secret = bytes(range(96))
    text = f.knowledge_text(TITLE, SUMMARY)
    sk = f.sketch(f.StaticKeyer(long_secret), text)
    assert sk is not None
    assert sk == f.sketch(f.StaticKeyer(long_secret[:64]), text)
    assert sk == f.sketch(f.StaticKeyer(long_secret[:64] + b"\xff" * 40), text)
    assert sk != f.sketch(f.StaticKeyer(long_secret[:63]), text)
    # the exact rules (HMAC) take any key length, and every byte of it
    assert f.knowledge_key(f.StaticKeyer(long_secret), TITLE, SUMMARY) != f.knowledge_key(
        f.StaticKeyer(long_secret[:64]), TITLE, SUMMARY
    )


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", []),
        ("deploy", ["deploy"]),  # a single word is its own shingle
        ("  deploy!  ", ["deploy"]),
        ("retry the deploy", ["retry the", "the deploy"]),
        ("a b a b", ["a b", "b a", "a b"]),  # repeats kept: the caller takes the set
    ],
)
def test_shingles_are_word_bigrams_and_a_lone_word_is_itself(text: str, want: list[str]) -> None:
    assert f.shingles(text) == want


def test_a_probe_is_an_immutable_value() -> None:
    """The keys a probe carries are checked by three rules (exact, id, near) in separate store reads;
    none of them can alter what the next one checks, and equal probes are one set member."""
    (probe,) = f.probes(
        f.StaticKeyer(b"k" * 32), [{"id": "m", "title": TITLE, "summary": SUMMARY}], f.NearPolicy()
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        probe.knowledge = "0" * 64  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        probe.sketch = None  # type: ignore[misc]
    again = f.probes(
        f.StaticKeyer(b"k" * 32), [{"id": "m", "title": TITLE, "summary": SUMMARY}], f.NearPolicy()
    )
    assert {probe, *again} == {probe}
