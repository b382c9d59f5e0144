"""Ed25519 KMS keys on moto, for one test at a time: AWS has them (``ECC_NIST_EDWARDS25519``), moto 5
does not, and the service signs cartridges and checkpoints with them.

:func:`ed25519_kms` patches moto's KMS *classes* for the ``with`` block and puts moto's own objects
back when it ends, so a test after it runs on moto as shipped. Patching classes (not a running
server) makes it work the same under ``mock_aws`` and in a same-process ``ThreadedMotoServer``.
Keys made inside the block are only usable inside it: enter it inside ``mock_aws``, not around it.

What an Ed25519 key does inside the block, as the KMS API reference documents it (each pinned in
tests/integration/test_moto_ed25519.py):

- ``CreateKey`` accepts ``KeySpec=ECC_NIST_EDWARDS25519`` with ``KeyUsage=SIGN_VERIFY`` ("signing and
  verification only");
- ``DescribeKey`` and ``GetPublicKey`` list the key's signing algorithms, ``ED25519_SHA_512`` and
  ``ED25519_PH_SHA_512``; ``GetPublicKey`` returns a DER SubjectPublicKeyInfo (RFC 5280; RFC 8410 for
  the Ed25519 algorithm identifier);
- ``Sign`` and ``Verify`` with ``ED25519_SHA_512`` need ``MessageType=RAW`` ("ED25519_SHA_512 signing
  algorithm requires KMS MessageType:RAW") and sign the message itself with pure Ed25519 (RFC 8032);
  ``Message`` holds at most 4096 bytes.

Not modelled: ``ED25519_PH_SHA_512`` (HashEdDSA over a ``DIGEST``): a ``Sign`` or ``Verify`` with it
is refused, so code that starts using it fails here instead of passing against something untested.
The exact error codes AWS answers for a wrong message type or length are not documented; the block
answers ``ValidationException``. Other key specs stay as moto ships them (ECDSA ``DIGEST`` signing
included). Like moto itself, this models no IAM, no key policy beyond moto's and no audit trail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

ED_SPEC = "ECC_NIST_EDWARDS25519"
ED_ALG = "ED25519_SHA_512"
ED_PH_ALG = "ED25519_PH_SHA_512"
MAX_RAW = 4096  # Sign and Verify: "You can submit messages of up to 4096 bytes"


class Ed25519KmsKey:
    """The private half of an Ed25519 KMS key, with the interface of moto's RSA and ECDSA keys."""

    def __init__(self) -> None:
        self.private_key = ed25519.Ed25519PrivateKey.generate()

    def sign(self, message: bytes, signing_algorithm: str) -> bytes:
        """Pure Ed25519 over the message itself: 64 bytes."""
        _check_algorithm(signing_algorithm)
        return self.private_key.sign(message)

    def verify(self, message: bytes, signature: bytes, signing_algorithm: str) -> bool:
        """Whether ``signature`` is this key's pure Ed25519 signature of ``message``."""
        _check_algorithm(signing_algorithm)
        try:
            self.private_key.public_key().verify(signature, message)
        except InvalidSignature:
            return False
        return True

    def public_key(self) -> bytes:
        """DER SubjectPublicKeyInfo, as GetPublicKey returns it."""
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def _validation(message: str) -> Exception:
    from moto.kms.exceptions import ValidationException

    return ValidationException(message)


def _check_algorithm(signing_algorithm: str) -> None:
    if signing_algorithm == ED_PH_ALG:
        raise _validation(f"{ED_PH_ALG} is not modelled by tests/integration/moto_ed25519.py")
    if signing_algorithm != ED_ALG:
        raise _validation(
            f"1 validation error detected: Value '{signing_algorithm}' at 'SigningAlgorithm' failed to "
            f"satisfy constraint: Member must satisfy enum value set: ['{ED_ALG}', '{ED_PH_ALG}']"
        )


def _check_request(response: Any) -> None:
    """What AWS refuses of a Sign or Verify on an Ed25519 key and moto does not check (moto never
    reads ``MessageType``); requests on other keys pass through untouched."""
    key_id = response._get_param("KeyId")
    response._validate_key_id(key_id)
    if response.kms_backend.describe_key(key_id).key_spec != ED_SPEC:
        return
    _check_algorithm(response._get_param("SigningAlgorithm"))
    message = response._get_param("Message")
    size = len(message.encode() if isinstance(message, str) else bytes(message or b""))
    if (response._get_param("MessageType") or "RAW") != "RAW":
        raise _validation(f"{ED_ALG} requires MessageType RAW")
    if size > MAX_RAW:
        raise _validation(
            "1 validation error detected: Value at 'message' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_RAW}"
        )


def _checked(original: Callable[[Any], str]) -> Callable[[Any], str]:
    def handler(self: Any) -> str:
        _check_request(self)
        return original(self)

    return handler


@contextmanager
def ed25519_kms() -> Iterator[None]:
    """moto's KMS with Ed25519 keys inside the block, and exactly as shipped after it."""
    from moto.kms import models, responses

    generate = models.generate_private_key
    valid_spec = models.KmsBackend._KmsBackend__ensure_valid_key_spec  # type: ignore[attr-defined]
    algorithms: Any = models.Key.signing_algorithms

    def generate_private_key(key_spec: str) -> Any:
        return Ed25519KmsKey() if key_spec == ED_SPEC else generate(key_spec)

    def ensure_valid_key_spec(backend: Any, key_spec: str) -> None:
        if key_spec != ED_SPEC:
            valid_spec(backend, key_spec)

    def signing_algorithms(key: Any) -> Any:
        if key.key_spec == ED_SPEC and key.key_usage == "SIGN_VERIFY":
            return [ED_ALG, ED_PH_ALG]
        return algorithms.fget(key)

    with ExitStack() as patches:
        for owner, name, value in (
            (models, "generate_private_key", generate_private_key),
            (models.KmsBackend, "_KmsBackend__ensure_valid_key_spec", ensure_valid_key_spec),
            (models.Key, "signing_algorithms", property(signing_algorithms)),
            (responses.KmsResponse, "sign", _checked(responses.KmsResponse.sign)),
            (responses.KmsResponse, "verify", _checked(responses.KmsResponse.verify)),
        ):
            patches.enter_context(mock.patch.object(owner, name, value))
        yield
