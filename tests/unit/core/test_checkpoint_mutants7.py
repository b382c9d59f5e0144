"""The signed-note size limit is 16 KiB (a note with many cosignature lines still fits; one character
more is refused), and a NoteSigner's verifier key is the one that verifies its notes, computed once."""

from __future__ import annotations

import pytest

from acx.core import checkpoint as ck
from acx.core.signing import LocalEd25519Signer
from tests.unit.core.test_checkpoint_mutants6 import CP, NAME, _note_of_length

LIMIT = 16 * 1024


def test_the_note_limit_is_16_kib() -> None:
    signer = LocalEd25519Signer()
    assert ck.parse_checkpoint(_note_of_length(LIMIT, signer)) == CP
    with pytest.raises(ck.CheckpointError, match="checkpoint too large"):
        ck.parse_checkpoint(_note_of_length(LIMIT + 1, signer))


class _CountingSigner(LocalEd25519Signer):
    def __init__(self) -> None:
        super().__init__()
        self.key_reads = 0

    def public_key_der(self) -> bytes:
        self.key_reads += 1
        return super().public_key_der()


def test_a_note_signers_verifier_key_verifies_its_notes_and_is_read_once() -> None:
    signer = _CountingSigner()
    notes = ck.NoteSigner(NAME, signer)
    key = notes.verifier_key()
    assert key == ck.verifier_key_for(NAME, signer)
    assert ck.verify_checkpoint(notes.sign(CP), key) == CP
    reads = signer.key_reads
    assert notes.verifier_key() == key
    assert signer.key_reads == reads  # the second call is the cached value, no second KMS call
