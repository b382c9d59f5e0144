"""C2SP signed-note / tlog-checkpoint for a package's log.

Body: origin line ``<publisherId>/<tenant>/<package>``, tree size, base64 Merkle root, extension line
``chain-head <hex>``, then a blank line and signature lines ``— <key name> <base64(keyid4 || sig)>``.
Ed25519 key id = sha256(name || 0x0A || 0x01 || pubkey)[:4]; verifier key = ``name+hex(keyid)+
base64(0x01 || pubkey)``.

A valid signature stops an attacker who rewrites the store and the receipts consistently (they cannot
sign a new root). It does not stop one who replays an older, genuinely signed checkpoint: the
verifier's witness (largest verified size) catches that.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from acx.core.signing import Signer, raw_ed25519

ALG_ED25519 = 0x01
EM_DASH = "\u2014"
MAX_TEXT = 16 * 1024


class CheckpointError(ValueError):
    """A checkpoint or verifier key that is malformed or whose signature does not verify."""


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    chain_head: str

    def body(self) -> str:
        """The signed note text (every line newline-terminated)."""
        if not self.origin or "\n" in self.origin or self.origin != self.origin.strip():
            raise CheckpointError("origin must be one non-empty line")
        if len(self.root) != 32:
            raise CheckpointError("root must be 32 bytes")
        return (
            f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"
            f"chain-head {self.chain_head}\n"
        )


def origin_for(publisher_id: str, tenant: str, package: str) -> str:
    """Origin line: binds the checkpoint to one publisher, tenant and package (no cross-package replay)."""
    return f"{publisher_id}/{tenant}/{package}"


def key_id(name: str, pubkey: bytes) -> bytes:
    """4-byte signed-note key id of an Ed25519 key."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + pubkey).digest()[:4]


def _check_name(name: str) -> None:
    if not name or any(c in name for c in "+ \n\t") or not name.isprintable():
        raise CheckpointError("key name must be non-empty, printable, without '+' or spaces")


def verifier_key(name: str, pubkey: bytes) -> str:
    """Verifier key line for an Ed25519 public key (32 raw bytes)."""
    _check_name(name)
    if len(pubkey) != 32:
        raise CheckpointError("Ed25519 public key must be 32 bytes")
    return f"{name}+{key_id(name, pubkey).hex()}+{base64.b64encode(bytes([ALG_ED25519]) + pubkey).decode()}"


def verifier_key_for(name: str, signer: Signer) -> str:
    """Verifier key of a signer; only Ed25519 signers can sign notes."""
    if signer.algorithm != "ed25519":
        raise CheckpointError("checkpoints are signed with Ed25519 keys only")
    return verifier_key(name, raw_ed25519(signer.public_key_der()))


def sign_checkpoint(cp: Checkpoint, name: str, signer: Signer) -> str:
    """Signed note text: body, blank line, one signature line."""
    _check_name(name)
    body = cp.body()
    pub = raw_ed25519(signer.public_key_der()) if signer.algorithm == "ed25519" else None
    if pub is None:
        raise CheckpointError("checkpoints are signed with Ed25519 keys only")
    sig = signer.sign(body.encode())
    if len(sig) != 64:
        raise CheckpointError("Ed25519 signature must be 64 bytes")
    return f"{body}\n{EM_DASH} {name} {base64.b64encode(key_id(name, pub) + sig).decode()}\n"


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CheckpointError(f"{what} is not valid base64") from None


def _split_note(text: str) -> tuple[str, list[tuple[str, bytes]]]:
    if len(text) > MAX_TEXT:
        raise CheckpointError("checkpoint too large")
    sep = text.find("\n\n")
    if sep < 0 or not text.endswith("\n"):
        raise CheckpointError("signed note needs a body, a blank line and signature lines")
    body, sigs_text = text[: sep + 1], text[sep + 2 :]
    sigs: list[tuple[str, bytes]] = []
    for line in sigs_text[:-1].split("\n"):
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != EM_DASH:
            raise CheckpointError("malformed signature line")
        raw = _b64(parts[2], "signature")
        if len(raw) < 5:
            raise CheckpointError("signature too short")
        sigs.append((parts[1], raw))
    if not sigs:
        raise CheckpointError("no signature lines")
    return body, sigs


def parse_checkpoint(text: str) -> Checkpoint:
    """Parse the body (does NOT verify the signature)."""
    body, _ = _split_note(text)
    lines = body[:-1].split("\n")
    if len(lines) < 3:
        raise CheckpointError("checkpoint body needs origin, size and root")
    origin, size_text, root_text, *ext = lines
    if not origin or not size_text.isdigit() or (size_text != "0" and size_text.startswith("0")):
        raise CheckpointError("bad origin or size line")
    root = _b64(root_text, "root")
    if len(root) != 32:
        raise CheckpointError("root must be 32 bytes")
    heads = [e.removeprefix("chain-head ") for e in ext if e.startswith("chain-head ")]
    if len(heads) != 1 or len(heads[0]) != 64:
        raise CheckpointError("exactly one chain-head extension line expected")
    cp = Checkpoint(origin, int(size_text), root, heads[0])
    if cp.body() != body:
        raise CheckpointError("checkpoint body is not in canonical form")
    return cp


def parse_verifier_key(vkey: str) -> tuple[str, bytes, bytes]:
    """(name, key id, 32-byte public key) of a verifier key line."""
    parts = vkey.strip().split("+", 2)  # base64 may itself contain "+"
    if len(parts) != 3:
        raise CheckpointError("verifier key must be name+keyid+key")
    name, kid_hex, key_b64 = parts
    _check_name(name)
    try:
        kid = bytes.fromhex(kid_hex)
    except ValueError:
        raise CheckpointError("verifier key id is not hex") from None
    raw = _b64(key_b64, "verifier key")
    if len(raw) != 33 or raw[0] != ALG_ED25519 or len(kid) != 4:
        raise CheckpointError("only Ed25519 verifier keys are supported")
    if key_id(name, raw[1:]) != kid:
        raise CheckpointError("verifier key id does not match the key")
    return name, kid, raw[1:]


def verify_checkpoint(text: str, vkey: str) -> Checkpoint:
    """Parse ``text`` and require a valid signature by ``vkey``; raise :class:`CheckpointError` otherwise."""
    from cryptography.exceptions import InvalidSignature  # lazy: see acx.core.signing
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    name, kid, pub = parse_verifier_key(vkey)
    body, sigs = _split_note(text)
    cp = parse_checkpoint(text)
    key = Ed25519PublicKey.from_public_bytes(pub)
    for sig_name, raw in sigs:
        if sig_name == name and raw[:4] == kid:
            try:
                key.verify(raw[4:], body.encode())
            except InvalidSignature:
                raise CheckpointError("checkpoint signature does not verify") from None
            return cp
    raise CheckpointError("checkpoint carries no signature by the verifier key")


class NoteSigner:
    """A checkpoint signer bound to its key name: ``sign`` is the callback the log store is given.
    The verifier key is computed on first use (it needs the public key: one KMS call)."""

    def __init__(self, name: str, signer: Signer) -> None:
        _check_name(name)
        self.name = name
        self.signer = signer
        self._vkey: str | None = None

    def sign(self, cp: Checkpoint) -> str:
        return sign_checkpoint(cp, self.name, self.signer)

    def verifier_key(self) -> str:
        if self._vkey is None:
            self._vkey = verifier_key_for(self.name, self.signer)
        return self._vkey
