"""A :class:`acx.core.signing.Signer` backed by an AWS KMS asymmetric key (the private key never leaves KMS).

Ed25519 (KeySpec ``ECC_NIST_EDWARDS25519``) signs with ``ED25519_SHA_512`` over the RAW message,
which AWS caps at 4096 bytes: longer messages raise :class:`KmsSignerError` (a cartridge's DSSE PAE is
about 1 KiB, far below). ECDSA P-256 (``ECC_NIST_P256``) signs RAW messages up to 4096 bytes and
larger ones as ``MessageType=DIGEST`` over their sha256, which yields the same signature.

Does NOT stop a caller with ``kms:Sign`` on the key from signing anything: IAM scoping is the guard.
"""

from __future__ import annotations

import hashlib
from typing import Any

from acx.core.signing import Algorithm, PublicKey

MAX_RAW = 4096
_SPECS: dict[str, tuple[Algorithm, str]] = {
    "ECC_NIST_EDWARDS25519": ("ed25519", "ED25519_SHA_512"),
    "ECC_NIST_P256": ("ecdsa-p256", "ECDSA_SHA_256"),
}


class KmsSignerError(RuntimeError):
    """The key cannot be used as an ACX signer, or the message cannot be signed."""


class KmsSigner:
    """Signer over ``kms_client`` (a boto3 KMS client) and one key id/ARN/alias."""

    def __init__(self, kms_client: Any, key_id: str) -> None:
        self._kms = kms_client
        self.key_id = key_id
        meta = kms_client.describe_key(KeyId=key_id)["KeyMetadata"]
        spec = meta.get("KeySpec") or meta.get("CustomerMasterKeySpec")
        if spec not in _SPECS:
            raise KmsSignerError(f"KMS key spec {spec!r} is not Ed25519 or P-256")
        if meta.get("KeyUsage") != "SIGN_VERIFY":
            raise KmsSignerError("KMS key usage must be SIGN_VERIFY")
        self.algorithm: Algorithm = _SPECS[spec][0]
        self.signing_algorithm = _SPECS[spec][1]
        if self.signing_algorithm not in (meta.get("SigningAlgorithms") or [self.signing_algorithm]):
            raise KmsSignerError(f"KMS key does not offer {self.signing_algorithm}")
        self._der: bytes | None = None
        self.created_at = meta.get("CreationDate")  # datetime: the key's validity starts here

    def public_key_der(self) -> bytes:
        """DER SPKI from GetPublicKey (fetched once, cached; checked to match the key spec)."""
        if self._der is None:
            der = bytes(self._kms.get_public_key(KeyId=self.key_id)["PublicKey"])
            if PublicKey.from_der(der).algorithm != self.algorithm:
                raise KmsSignerError("GetPublicKey returned a key of another algorithm")
            self._der = der
        return self._der

    @property
    def keyid(self) -> str:
        """ACX key id of this KMS key."""
        return PublicKey.from_der(self.public_key_der()).keyid

    def sign(self, message: bytes) -> bytes:
        """Signature over ``message`` (Ed25519 raw 64 bytes, ECDSA DER)."""
        if not message:
            raise KmsSignerError("KMS cannot sign an empty message")
        if len(message) <= MAX_RAW:
            kwargs: dict[str, Any] = {"Message": message, "MessageType": "RAW"}
        elif self.algorithm == "ecdsa-p256":
            kwargs = {"Message": hashlib.sha256(message).digest(), "MessageType": "DIGEST"}
        else:
            raise KmsSignerError(
                f"Ed25519 on KMS signs RAW messages of at most {MAX_RAW} bytes; this one has {len(message)}"
            )
        out = self._kms.sign(KeyId=self.key_id, SigningAlgorithm=self.signing_algorithm, **kwargs)
        return bytes(out["Signature"])
