"""Signers and signature verification, kept apart from any transport (KMS lives in adapters).

A :class:`Signer` signs raw bytes and publishes its public key; the private key of a production
signer never leaves KMS. :class:`LocalEd25519Signer` holds its key in memory and exists for tests and
offline tooling only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ed25519

# cryptography is imported by the functions that use it, not here: a search imports this module (the
# log store's checkpoints) and never signs or verifies, and serialization + ec + ed25519 cost ~30 ms
# of CPU at a cold start (bench/search.py cold row).

Algorithm = Literal["ed25519", "ecdsa-p256"]


class Signer(Protocol):
    """Anything that signs bytes with a key whose public half it can publish."""

    algorithm: Algorithm

    def public_key_der(self) -> bytes:
        """DER SubjectPublicKeyInfo of the signing key."""
        ...

    def sign(self, message: bytes) -> bytes:
        """Signature over ``message`` (Ed25519: raw 64 bytes; ECDSA: DER)."""
        ...


def keyid_for(algorithm: Algorithm, spki_der: bytes) -> str:
    """ACX key id: ``<alg>:`` + hex sha256 of the DER SubjectPublicKeyInfo."""
    return f"{algorithm}:{hashlib.sha256(spki_der).hexdigest()}"


def spki_pem(spki_der: bytes) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_der_public_key(spki_der)
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def raw_ed25519(spki_der: bytes) -> bytes:
    """The 32 raw public key bytes of an Ed25519 SPKI (for signed-note verifier keys)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = serialization.load_der_public_key(spki_der)
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


@dataclass(frozen=True)
class PublicKey:
    """A verifying key parsed from PEM or DER, with its ACX key id."""

    algorithm: Algorithm
    spki_der: bytes

    @property
    def keyid(self) -> str:
        return keyid_for(self.algorithm, self.spki_der)

    @property
    def pem(self) -> str:
        return spki_pem(self.spki_der)

    @classmethod
    def from_pem(cls, pem: str | bytes) -> PublicKey:
        from cryptography.hazmat.primitives import serialization

        data = pem.encode("ascii") if isinstance(pem, str) else pem
        key = serialization.load_pem_public_key(data)
        return cls._from_key(key)

    @classmethod
    def from_der(cls, der: bytes) -> PublicKey:
        from cryptography.hazmat.primitives import serialization

        return cls._from_key(serialization.load_der_public_key(der))

    @classmethod
    def _from_key(cls, key: object) -> PublicKey:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519

        if isinstance(key, ed25519.Ed25519PublicKey):
            alg: Algorithm = "ed25519"
        elif isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1":
            alg = "ecdsa-p256"
        else:
            raise ValueError("unsupported public key type (expected Ed25519 or ECDSA P-256)")
        der = key.public_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return cls(alg, der)

    def verify(self, signature: bytes, message: bytes) -> bool:
        """True when ``signature`` is valid over ``message``; never raises on a bad signature."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519

        key = serialization.load_der_public_key(self.spki_der)
        try:
            if isinstance(key, ed25519.Ed25519PublicKey):
                key.verify(signature, message)
            elif isinstance(key, ec.EllipticCurvePublicKey):
                key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
            else:
                return False
        except (InvalidSignature, ValueError):
            return False
        return True


class LocalEd25519Signer:
    """In-memory Ed25519 signer for tests and offline tools. Not for production keys."""

    algorithm: Algorithm = "ed25519"

    def __init__(self, private_key: ed25519.Ed25519PrivateKey | None = None) -> None:
        from cryptography.hazmat.primitives.asymmetric import ed25519

        self._key = private_key or ed25519.Ed25519PrivateKey.generate()

    def public_key_der(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)
