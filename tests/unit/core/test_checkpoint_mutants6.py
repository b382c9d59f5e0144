"""A signed note of exactly MAX_TEXT characters is read; one character more is refused as too large."""

from __future__ import annotations

import hashlib

import pytest

from acx.core import checkpoint as ck
from acx.core.signing import LocalEd25519Signer

CP = ck.Checkpoint("dev.acx.local/t1/pkg", 7, hashlib.sha256(b"root").digest(), "ab" * 32)
NAME = "acx-log"


def _note_of_length(n: int, signer: LocalEd25519Signer) -> str:
    """A genuine note padded to ``n`` characters by a second signature line under a long key name."""
    signed = ck.sign_checkpoint(CP, NAME, signer)
    tail = " AAAAAAAA\n"  # 6 bytes: long enough to be a signature line, from no key we know
    pad = n - len(signed) - len(ck.EM_DASH) - 1 - len(tail)
    note = f"{signed}{ck.EM_DASH} {'k' * pad}{tail}"
    assert len(note) == n
    return note


def test_a_note_of_exactly_max_text_characters_is_read() -> None:
    signer = LocalEd25519Signer()
    note = _note_of_length(ck.MAX_TEXT, signer)
    assert ck.parse_checkpoint(note) == CP
    assert ck.verify_checkpoint(note, ck.verifier_key_for(NAME, signer)) == CP


def test_a_note_one_character_over_max_text_is_too_large() -> None:
    note = _note_of_length(ck.MAX_TEXT + 1, LocalEd25519Signer())
    with pytest.raises(ck.CheckpointError, match="checkpoint too large"):
        ck.parse_checkpoint(note)
