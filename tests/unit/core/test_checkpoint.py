"""C2SP signed-note checkpoints: format, key ids, signature checks."""

from __future__ import annotations

import base64
import hashlib

import pytest

from acx.core import checkpoint as ck
from acx.core.signing import LocalEd25519Signer, raw_ed25519
from tests.factories import P256Signer

ROOT = hashlib.sha256(b"root").digest()
HEAD = "ab" * 32
CP = ck.Checkpoint("dev.acx.local/t1/pkg", 7, ROOT, HEAD)


@pytest.fixture(scope="module")
def signer() -> LocalEd25519Signer:
    return LocalEd25519Signer()


def test_format_and_roundtrip(signer: LocalEd25519Signer) -> None:
    text = ck.sign_checkpoint(CP, "acx-log", signer)
    lines = text.split("\n")
    assert lines[:4] == [
        "dev.acx.local/t1/pkg",
        "7",
        base64.b64encode(ROOT).decode(),
        "chain-head " + "ab" * 32,
    ]
    assert lines[4] == "" and lines[5].startswith("\u2014 acx-log ") and lines[6] == ""
    vkey = ck.verifier_key_for("acx-log", signer)
    assert ck.verify_checkpoint(text, vkey) == CP
    assert ck.parse_checkpoint(text) == CP


def test_key_id_matches_c2sp_definition(signer: LocalEd25519Signer) -> None:
    pub = raw_ed25519(signer.public_key_der())
    expected = hashlib.sha256(b"acx-log\n\x01" + pub).digest()[:4]
    vkey = ck.verifier_key("acx-log", pub)
    b64 = base64.b64encode(bytes([1]) + pub).decode()
    assert vkey == f"acx-log+{expected.hex()}+{b64}"
    sig_line = ck.sign_checkpoint(CP, "acx-log", signer).split("\n")[5]
    assert base64.b64decode(sig_line.split(" ")[2])[:4] == expected


def test_rejects_tampered_body_wrong_key_and_garbage(signer: LocalEd25519Signer) -> None:
    text = ck.sign_checkpoint(CP, "acx-log", signer)
    vkey = ck.verifier_key_for("acx-log", signer)
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text.replace("\n7\n", "\n8\n"), vkey)
    other = ck.verifier_key_for("acx-log", LocalEd25519Signer())
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text, other)
    renamed = ck.verifier_key_for("other", signer)
    with pytest.raises(ck.CheckpointError, match="no signature"):
        ck.verify_checkpoint(text, renamed)
    sig = text.split("\n")[5].split(" ")[2]
    raw = bytearray(base64.b64decode(sig))
    raw[10] ^= 1
    forged = text.replace(sig, base64.b64encode(bytes(raw)).decode())
    with pytest.raises(ck.CheckpointError, match="does not verify"):
        ck.verify_checkpoint(forged, vkey)
    for bad in ("", "x\n", text.replace("\n\n", "\n"), text.replace("chain-head", "chainhead"), text[:-1]):
        with pytest.raises(ck.CheckpointError):
            ck.verify_checkpoint(bad, vkey)
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text, vkey.replace("+", "+00", 1))


def test_rejects_non_canonical_size(signer: LocalEd25519Signer) -> None:
    vkey = ck.verifier_key_for("acx-log", signer)
    text = ck.sign_checkpoint(CP, "acx-log", signer).replace("\n7\n", "\n07\n")
    with pytest.raises(ck.CheckpointError):
        ck.verify_checkpoint(text, vkey)


# Signed-note checkpoints: every refusal of a malformed note, body or verifier key, with its reason.
#
# The attacker here holds the store (can write any checkpoint text) but not the signing key; a few cases
# also give them a genuine signature over a body the verifier must still refuse.
NAME = "acx-log"


def _note(body: str, signer: LocalEd25519Signer, name: str = NAME) -> str:
    """A note over ``body`` exactly as given, with a genuine signature (what a key holder could make)."""
    pub = raw_ed25519(signer.public_key_der())
    sig = signer.sign(body.encode())
    return f"{body}\n{ck.EM_DASH} {name} {base64.b64encode(ck.key_id(name, pub) + sig).decode()}\n"


class ShortSigner(LocalEd25519Signer):
    def sign(self, message: bytes) -> bytes:
        return super().sign(message)[:63]


def test_size_zero_roundtrips(signer: LocalEd25519Signer) -> None:
    empty = ck.Checkpoint("o/t/p", 0, ROOT, HEAD)
    text = ck.sign_checkpoint(empty, NAME, signer)
    assert ck.verify_checkpoint(text, ck.verifier_key_for(NAME, signer)) == empty
    assert ck.origin_for("pub", "t1", "pkg") == "pub/t1/pkg"


@pytest.mark.parametrize(
    "origin", ["", "a\nb", "dev/t1/pkg\n7", " dev/t1/pkg", "dev/t1/pkg ", "dev/t1/pkg\t"]
)
def test_an_origin_that_is_not_one_clean_line_is_refused(origin: str, signer: LocalEd25519Signer) -> None:
    """Line injection: an origin with a newline would add lines (a fake size or root) to the signed note."""
    cp = ck.Checkpoint(origin, 7, ROOT, HEAD)
    with pytest.raises(ck.CheckpointError, match="origin must be one non-empty line"):
        cp.body()
    with pytest.raises(ck.CheckpointError, match="origin must be one non-empty line"):
        ck.sign_checkpoint(cp, NAME, signer)


@pytest.mark.parametrize("root", [ROOT[:31], ROOT + b"\x00", ROOT * 2])
def test_a_root_that_is_not_32_bytes_is_refused(root: bytes, signer: LocalEd25519Signer) -> None:
    for bad in (root, b""):
        with pytest.raises(ck.CheckpointError, match="root must be 32 bytes"):
            ck.Checkpoint("o/t/p", 1, bad, HEAD).body()
    body = f"o/t/p\n1\n{base64.b64encode(root).decode()}\nchain-head {HEAD}\n"
    with pytest.raises(ck.CheckpointError, match="root must be 32 bytes"):
        ck.parse_checkpoint(_note(body, signer))


def test_a_signed_body_not_in_canonical_form_is_refused(signer: LocalEd25519Signer) -> None:
    """Genuinely signed, yet with an extra extension line: the verifier must not accept what it cannot
    re-create, or two different texts would verify as one checkpoint."""
    vkey = ck.verifier_key_for(NAME, signer)
    body = CP.body() + "other-extension x\n"
    text = _note(body, signer)
    with pytest.raises(ck.CheckpointError, match="not in canonical form"):
        ck.parse_checkpoint(text)
    with pytest.raises(ck.CheckpointError, match="not in canonical form"):
        ck.verify_checkpoint(text, vkey)
    leading = f"{CP.origin}\n{CP.size}\n{base64.b64encode(ROOT).decode()}\nnote\nchain-head {HEAD}\n"
    with pytest.raises(ck.CheckpointError, match="not in canonical form"):
        ck.verify_checkpoint(_note(leading, signer), vkey)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (f"o/t/p\n7\n{base64.b64encode(ROOT).decode()}\n", "exactly one chain-head"),
        (
            f"o/t/p\n7\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD}\nchain-head {HEAD}\n",
            "exactly one",
        ),
        (f"o/t/p\n7\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD[:-1]}\n", "exactly one chain-head"),
        (f"o/t/p\n7\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD}0\n", "exactly one chain-head"),
        ("o/t/p\n7\n", "needs origin, size and root"),
        (f"o/t/p\n-7\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD}\n", "bad origin or size line"),
        (f"o/t/p\n07\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD}\n", "bad origin or size line"),
        (f"o/t/p\n00\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD}\n", "bad origin or size line"),
        (f"o/t/p\nseven\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD}\n", "bad origin or size line"),
        (f"\n7\n{base64.b64encode(ROOT).decode()}\nchain-head {HEAD}\n", "bad origin or size line"),
        (f"o/t/p\n7\n{ROOT.hex()}!\nchain-head {HEAD}\n", "root is not valid base64"),
    ],
)
def test_a_malformed_body_is_refused(body: str, reason: str, signer: LocalEd25519Signer) -> None:
    with pytest.raises(ck.CheckpointError, match=reason):
        ck.parse_checkpoint(_note(body, signer))


def test_size_zero_line_is_accepted_and_one_is_not_zero(signer: LocalEd25519Signer) -> None:
    for size in (0, 1, 10):
        cp = ck.Checkpoint("o/t/p", size, ROOT, HEAD)
        assert ck.parse_checkpoint(_note(cp.body(), signer)).size == size


@pytest.mark.parametrize(
    "line",
    [
        "- acx-log AAAAAAAA",  # ASCII hyphen instead of the em dash
        "-- acx-log AAAAAAAA",
        "\u2013 acx-log AAAAAAAA",  # en dash
        "\u2014acx-log AAAAAAAA",
        "\u2014 acx-log",
        "\u2014 acx-log AAAAAAAA extra",
        "\u2014  acx-log AAAAAAAA",
    ],
)
def test_a_signature_line_not_of_the_form_em_dash_name_sig_is_refused(line: str) -> None:
    with pytest.raises(ck.CheckpointError, match="malformed signature line"):
        ck.parse_checkpoint(f"{CP.body()}\n{line}\n")


def test_signature_lines_are_checked_each(signer: LocalEd25519Signer) -> None:
    text = ck.sign_checkpoint(CP, NAME, signer)
    with pytest.raises(ck.CheckpointError, match="signature too short"):
        ck.parse_checkpoint(f"{CP.body()}\n\u2014 acx-log {base64.b64encode(b'1234').decode()}\n")
    with pytest.raises(ck.CheckpointError, match="signature is not valid base64"):
        ck.parse_checkpoint(f"{CP.body()}\n\u2014 acx-log not*base64\n")
    # A second, bad line after a good one is still refused: every line must be well-formed.
    with pytest.raises(ck.CheckpointError, match="malformed signature line"):
        ck.parse_checkpoint(text + "- other AAAAAAAA\n")
    with pytest.raises(ck.CheckpointError, match="signed note needs"):
        ck.parse_checkpoint(text.rstrip("\n"))
    with pytest.raises(ck.CheckpointError, match="too large"):
        ck.parse_checkpoint(text + "\u2014 x " + "A" * ck.MAX_TEXT + "\n")


def test_a_note_signed_by_another_key_among_several_lines_verifies_by_its_own(
    signer: LocalEd25519Signer,
) -> None:
    other = LocalEd25519Signer()
    mine = ck.sign_checkpoint(CP, NAME, signer)
    theirs = ck.sign_checkpoint(CP, NAME, other).split("\n\n", 1)[1]
    both = mine + theirs
    assert ck.verify_checkpoint(both, ck.verifier_key_for(NAME, signer)) == CP
    assert ck.verify_checkpoint(both, ck.verifier_key_for(NAME, other)) == CP
    # Same name and key id but a signature by another key: refused, not skipped to "no signature".
    pub = raw_ed25519(signer.public_key_der())
    forged_sig = other.sign(CP.body().encode())
    forged = f"{CP.body()}\n\u2014 {NAME} {base64.b64encode(ck.key_id(NAME, pub) + forged_sig).decode()}\n"
    with pytest.raises(ck.CheckpointError, match="does not verify"):
        ck.verify_checkpoint(forged, ck.verifier_key_for(NAME, signer))


def test_a_signature_with_the_right_name_but_another_key_id_is_not_used(signer: LocalEd25519Signer) -> None:
    text = ck.sign_checkpoint(CP, NAME, signer)
    sig = text.split("\n")[5].split(" ")[2]
    raw = bytearray(base64.b64decode(sig))
    raw[0] ^= 1
    wrong_kid = text.replace(sig, base64.b64encode(bytes(raw)).decode())
    with pytest.raises(ck.CheckpointError, match="no signature by the verifier key"):
        ck.verify_checkpoint(wrong_kid, ck.verifier_key_for(NAME, signer))


@pytest.mark.parametrize("pub", [b"", b"\x01" * 31, b"\x01" * 33])
def test_a_public_key_that_is_not_32_bytes_is_refused(pub: bytes) -> None:
    with pytest.raises(ck.CheckpointError, match="must be 32 bytes"):
        ck.verifier_key(NAME, pub)


def test_a_non_ed25519_signer_cannot_sign_or_publish_a_note_key() -> None:
    p256 = P256Signer()
    with pytest.raises(ck.CheckpointError, match="Ed25519 keys only"):
        ck.verifier_key_for(NAME, p256)
    with pytest.raises(ck.CheckpointError, match="Ed25519 keys only"):
        ck.sign_checkpoint(CP, NAME, p256)


def test_a_signature_that_is_not_64_bytes_is_refused() -> None:
    with pytest.raises(ck.CheckpointError, match="64 bytes"):
        ck.sign_checkpoint(CP, NAME, ShortSigner())


@pytest.mark.parametrize("name", ["", "a+b", "a b", "a\nb", "a\tb", "a\x00b", "a\u200bb"])
def test_a_key_name_that_could_break_the_note_is_refused(name: str, signer: LocalEd25519Signer) -> None:
    pub = raw_ed25519(signer.public_key_der())
    with pytest.raises(ck.CheckpointError, match="key name"):
        ck.verifier_key(name, pub)
    with pytest.raises(ck.CheckpointError, match="key name"):
        ck.sign_checkpoint(CP, name, signer)


def _vkey_parts(signer: LocalEd25519Signer) -> tuple[str, str, bytes]:
    pub = raw_ed25519(signer.public_key_der())
    return ck.key_id(NAME, pub).hex(), base64.b64encode(b"\x01" + pub).decode(), pub


def test_verifier_key_parses_back(signer: LocalEd25519Signer) -> None:
    kid, key_b64, pub = _vkey_parts(signer)
    assert ck.parse_verifier_key(f"  {NAME}+{kid}+{key_b64}\n") == (NAME, bytes.fromhex(kid), pub)


def test_a_verifier_key_id_that_is_not_hex_raises_checkpoint_error(signer: LocalEd25519Signer) -> None:
    _, key_b64, _ = _vkey_parts(signer)
    for kid in ("zzzzzzzz", "0x123456", "1234567"):
        with pytest.raises(ck.CheckpointError, match="not hex"):
            ck.parse_verifier_key(f"{NAME}+{kid}+{key_b64}")


@pytest.mark.parametrize("kind", ["alg", "short", "long", "kid-len", "kid-mismatch", "parts", "b64", "name"])
def test_a_malformed_verifier_key_is_refused(kind: str, signer: LocalEd25519Signer) -> None:
    kid, _, pub = _vkey_parts(signer)

    def key(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    good = key(b"\x01" + pub)
    cases = {
        "alg": (f"{NAME}+{kid}+{key(b'x' + pub)}", "only Ed25519"),
        "short": (f"{NAME}+{kid}+{key(bytes([1]) + pub[:31])}", "only Ed25519"),
        "long": (f"{NAME}+{kid}+{key(bytes([1]) + pub + bytes(1))}", "only Ed25519"),
        "kid-len": (f"{NAME}+{kid[:6]}+{good}", "only Ed25519"),
        "kid-mismatch": (f"{NAME}+{(int(kid, 16) ^ 1):08x}+{good}", "does not match"),
        "parts": (f"{NAME}+{kid}", "name\\+keyid\\+key"),
        "b64": (f"{NAME}+{kid}+***", "verifier key is not valid base64"),
        "name": (f"a b+{kid}+{good}", "key name"),
    }
    vkey, reason = cases[kind]
    with pytest.raises(ck.CheckpointError, match=reason):
        ck.parse_verifier_key(vkey)


def test_a_note_without_a_body_or_without_a_blank_line_is_refused_as_such(signer: LocalEd25519Signer) -> None:
    text = ck.sign_checkpoint(CP, NAME, signer)
    sig_line = text.split("\n\n", 1)[1]
    for bad in (CP.body() + sig_line, text.replace("\n\n", "\n")):
        with pytest.raises(
            ck.CheckpointError, match="signed note needs a body, a blank line and signature lines"
        ):
            ck.parse_checkpoint(bad)
    with pytest.raises(ck.CheckpointError, match="checkpoint body needs origin, size and root"):
        ck.parse_checkpoint("\n\n" + sig_line)


def test_a_five_byte_signature_is_long_enough_to_parse_but_does_not_verify(
    signer: LocalEd25519Signer,
) -> None:
    pub = raw_ed25519(signer.public_key_der())
    five = base64.b64encode(ck.key_id(NAME, pub) + b"s").decode()
    text = f"{CP.body()}\n\u2014 {NAME} {five}\n"
    assert ck.parse_checkpoint(text) == CP
    with pytest.raises(ck.CheckpointError, match="does not verify"):
        ck.verify_checkpoint(text, ck.verifier_key_for(NAME, signer))


# A signed note of exactly MAX_TEXT characters is read; one character more is refused as too large.


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


# The signed-note size limit is 16 KiB (a note with many cosignature lines still fits; one character
# more is refused), and a NoteSigner's verifier key is the one that verifies its notes, computed once.

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


# A root of the wrong length is refused as such, before the extension lines are looked at.

SIGNER = LocalEd25519Signer()


@pytest.mark.parametrize("root", [ROOT[:31], ROOT + b"\x00", ROOT[:1]])
@pytest.mark.parametrize("ext", ["", f"chain-head {HEAD[:-1]}\n", f"chain-head {HEAD}\nchain-head {HEAD}\n"])
def test_a_wrong_length_root_is_the_reason_even_with_a_bad_chain_head_line(root: bytes, ext: str) -> None:
    """The body is checked line by line: a 31-, 33- or 1-byte root is refused for its length, even
    when the chain-head extension that follows is missing, short or doubled."""
    body = f"o/t/p\n1\n{base64.b64encode(root).decode()}\n{ext}"
    with pytest.raises(ck.CheckpointError, match="root must be 32 bytes"):
        ck.parse_checkpoint(_note(body, SIGNER))
