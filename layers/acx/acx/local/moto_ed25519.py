"""Teach moto 5's KMS the Ed25519 keys AWS has (``ECC_NIST_EDWARDS25519`` / ``ED25519_SHA_512``).

moto has no Ed25519 KMS keys; the service signs cartridges with them, so the tests and the local
stack patch moto's KMS *classes* (not a running server), which makes it work the same under
``mock_aws`` and in a same-process ``ThreadedMotoServer``. Call :func:`install` before creating
keys; it is idempotent. What changes, as AWS documents it:

- ``CreateKey KeySpec=ECC_NIST_EDWARDS25519 KeyUsage=SIGN_VERIFY`` is accepted and holds an Ed25519 key;
- ``DescribeKey``/``GetPublicKey`` report ``SigningAlgorithms = [ED25519_SHA_512]``; ``GetPublicKey``
  returns the DER SubjectPublicKeyInfo;
- ``Sign``/``Verify`` with ``ED25519_SHA_512`` need ``MessageType=RAW``; any RAW message over 4096
  bytes is a ``ValidationException`` (for every key spec, as in AWS);
- ``MessageType=DIGEST`` with ECDSA keys signs/verifies the given digest (stock moto would hash it
  again, yielding signatures no real verifier accepts).

This is a stand-in: it does NOT model IAM, key policies beyond moto's, or KMS's audit trail.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

ED_SPEC = "ECC_NIST_EDWARDS25519"
ED_ALG = "ED25519_SHA_512"
MAX_RAW = 4096
_installed = False
_lock = threading.Lock()


class Ed25519KmsKey:
    """moto private-key object for an Ed25519 KMS key (same interface as moto's ECDSA/RSA ones)."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import ed25519

        self.private_key = ed25519.Ed25519PrivateKey.generate()

    def sign(self, message: bytes, signing_algorithm: str) -> bytes:
        """Pure Ed25519 over the RAW message."""
        _check_alg(signing_algorithm)
        return self.private_key.sign(message)

    def verify(self, message: bytes, signature: bytes, signing_algorithm: str) -> bool:
        """True if the signature is valid."""
        from cryptography.exceptions import InvalidSignature

        _check_alg(signing_algorithm)
        try:
            self.private_key.public_key().verify(signature, message)
        except InvalidSignature:
            return False
        return True

    def public_key(self) -> bytes:
        """DER SubjectPublicKeyInfo."""
        from cryptography.hazmat.primitives import serialization

        return self.private_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def _validation(message: str) -> Exception:
    from moto.kms.exceptions import ValidationException

    return ValidationException(message)


def _check_alg(signing_algorithm: str) -> None:
    if signing_algorithm != ED_ALG:
        raise _validation(
            f"1 validation error detected: Value '{signing_algorithm}' at 'SigningAlgorithm' failed to "
            f"satisfy constraint: Member must satisfy enum value set: ['{ED_ALG}']"
        )


def _message(resp: Any) -> bytes:
    message = resp._get_param("Message")
    return message.encode("utf-8") if isinstance(message, str) else bytes(message or b"")


def _guard(resp: Any, *, verify: bool) -> str | None:
    """Validate MessageType/length as AWS does; return a JSON body when we answer ourselves."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, utils

    key_id = resp._get_param("KeyId")
    message_type = resp._get_param("MessageType") or "RAW"
    algorithm = resp._get_param("SigningAlgorithm")
    message = _message(resp)
    resp._validate_key_id(key_id)
    key = resp.kms_backend.describe_key(key_id)
    if message_type == "RAW" and len(message) > MAX_RAW:
        raise _validation(
            "1 validation error detected: Value at 'message' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_RAW}"
        )
    if key.key_spec == ED_SPEC and message_type != "RAW":
        raise _validation(f"{ED_ALG} requires MessageType RAW")
    if message_type != "DIGEST" or key.key_spec != "ECC_NIST_P256" or algorithm != "ECDSA_SHA_256":
        return None
    if len(message) != 32:
        raise _validation("Digest is invalid length for algorithm ECDSA_SHA_256.")
    pk = key.private_key.private_key
    prehashed = ec.ECDSA(utils.Prehashed(hashes.SHA256()))
    if not verify:
        sig = pk.sign(message, prehashed)
        return json.dumps(
            {"KeyId": key.arn, "Signature": base64.b64encode(sig).decode(), "SigningAlgorithm": algorithm}
        )
    signature = resp._get_param("Signature")
    sig_bytes = base64.b64decode(signature) if isinstance(signature, str) else bytes(signature)
    try:
        pk.public_key().verify(sig_bytes, message, prehashed)
        valid = True
    except InvalidSignature:
        valid = False
    return json.dumps({"KeyId": key.arn, "SignatureValid": valid, "SigningAlgorithm": algorithm})


def install() -> None:
    """Patch moto's KMS model and responses once (safe to call many times, from any thread)."""
    with _lock:
        if not _installed:
            _install()


def _install() -> None:
    global _installed
    from moto.kms import models, responses

    original_generate = models.generate_private_key

    def generate_private_key(key_spec: str) -> Any:
        return Ed25519KmsKey() if key_spec == ED_SPEC else original_generate(key_spec)

    models.generate_private_key = generate_private_key

    original_validate = models.KmsBackend._KmsBackend__ensure_valid_key_spec  # type: ignore[attr-defined]

    def ensure_valid_key_spec(self: Any, key_spec: str) -> None:
        if key_spec != ED_SPEC:
            original_validate(self, key_spec)

    models.KmsBackend._KmsBackend__ensure_valid_key_spec = ensure_valid_key_spec  # type: ignore[attr-defined]

    original_algs: Any = models.Key.signing_algorithms

    def signing_algorithms(self: Any) -> Any:
        return [ED_ALG] if self.key_spec == ED_SPEC else original_algs.fget(self)

    models.Key.signing_algorithms = property(signing_algorithms)  # type: ignore[assignment,method-assign]

    original_sign, original_verify = responses.KmsResponse.sign, responses.KmsResponse.verify

    def sign(self: Any) -> str:
        return _guard(self, verify=False) or original_sign(self)

    def verify(self: Any) -> str:
        return _guard(self, verify=True) or original_verify(self)

    responses.KmsResponse.sign = sign  # type: ignore[method-assign]
    responses.KmsResponse.verify = verify  # type: ignore[method-assign]
    _installed = True
