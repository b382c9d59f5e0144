"""tests/integration/moto_ed25519.py against what the KMS API reference documents, one test each, and
moto as shipped again once the block ends.

The signer (acx.adapters.kms.KmsSigner) relies on: CreateKey accepting ``ECC_NIST_EDWARDS25519`` with
``SIGN_VERIFY``; DescribeKey and GetPublicKey listing ``ED25519_SHA_512``; GetPublicKey returning a
DER SubjectPublicKeyInfo (RFC 8410, OID 1.3.101.112); Sign with ``MessageType=RAW`` producing a pure
Ed25519 signature (RFC 8032, 64 bytes) over the message itself; Sign's ``Message`` being at most 4096
bytes; a signing algorithm the key does not offer being refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from moto import mock_aws

from tests.integration.moto_ed25519 import ed25519_kms

# DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410 section 4): SEQUENCE { SEQUENCE { OID
# 1.3.101.112 }, BIT STRING (32 bytes) }.
ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


@pytest.fixture
def kms() -> Iterator[Any]:
    with mock_aws(), ed25519_kms():
        yield boto3.client("kms", region_name="us-east-1")


@pytest.fixture
def key_id(kms: Any) -> str:
    meta = kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec="ECC_NIST_EDWARDS25519")["KeyMetadata"]
    return str(meta["KeyId"])


def _sign(kms: Any, key_id: str, message: bytes, **kw: Any) -> Any:
    args = {"MessageType": "RAW", "SigningAlgorithm": "ED25519_SHA_512"} | kw
    return kms.sign(KeyId=key_id, Message=message, **args)


def _code(err: pytest.ExceptionInfo[ClientError]) -> str:
    return str(err.value.response["Error"]["Code"])


def test_create_and_describe_an_ed25519_signing_key(kms: Any, key_id: str) -> None:
    meta = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    assert (meta["KeySpec"], meta["KeyUsage"]) == ("ECC_NIST_EDWARDS25519", "SIGN_VERIFY")
    assert meta["SigningAlgorithms"] == ["ED25519_SHA_512", "ED25519_PH_SHA_512"]


def test_get_public_key_is_der_spki_of_a_32_byte_ed25519_key(kms: Any, key_id: str) -> None:
    out = kms.get_public_key(KeyId=key_id)
    der = bytes(out["PublicKey"])
    assert len(der) == 44 and der.startswith(ED25519_SPKI_PREFIX)
    assert isinstance(serialization.load_der_public_key(der), ed25519.Ed25519PublicKey)
    # AWS also returns KeySpec here (moto only the deprecated CustomerMasterKeySpec); the signer
    # reads the spec from DescribeKey, so only these two are relied on.
    assert out["KeyUsage"] == "SIGN_VERIFY" and "ED25519_SHA_512" in out["SigningAlgorithms"]


def test_raw_sign_is_pure_ed25519_over_the_message_and_verify_agrees(kms: Any, key_id: str) -> None:
    public = serialization.load_der_public_key(bytes(kms.get_public_key(KeyId=key_id)["PublicKey"]))
    assert isinstance(public, ed25519.Ed25519PublicKey)
    out = _sign(kms, key_id, b"checkpoint body")
    assert out["SigningAlgorithm"] == "ED25519_SHA_512" and len(out["Signature"]) == 64
    public.verify(out["Signature"], b"checkpoint body")  # raises if it is not pure Ed25519

    def verify(message: bytes) -> bool:
        return bool(
            kms.verify(
                KeyId=key_id,
                Message=message,
                MessageType="RAW",
                Signature=out["Signature"],
                SigningAlgorithm="ED25519_SHA_512",
            )["SignatureValid"]
        )

    assert verify(b"checkpoint body") and not verify(b"checkpoint bodY")


def test_a_raw_message_over_4096_bytes_is_a_validation_error(kms: Any, key_id: str) -> None:
    assert len(_sign(kms, key_id, b"m" * 4096)["Signature"]) == 64  # the limit itself is allowed
    with pytest.raises(ClientError) as err:
        _sign(kms, key_id, b"m" * 4097)
    assert _code(err) == "ValidationException"


def test_ed25519_sha_512_refuses_a_digest_message_type(kms: Any, key_id: str) -> None:
    assert _sign(kms, key_id, b"\x00" * 64, MessageType="RAW")["Signature"]
    with pytest.raises(ClientError) as err:
        _sign(kms, key_id, b"\x00" * 64, MessageType="DIGEST")
    assert _code(err) == "ValidationException"


def test_an_algorithm_the_key_does_not_offer_is_refused(kms: Any, key_id: str) -> None:
    assert _sign(kms, key_id, b"m")["Signature"]
    with pytest.raises(ClientError) as err:
        _sign(kms, key_id, b"m", SigningAlgorithm="ECDSA_SHA_256")
    assert _code(err) == "ValidationException"


def test_the_unmodelled_prehash_algorithm_is_refused_rather_than_faked(kms: Any, key_id: str) -> None:
    with pytest.raises(ClientError) as err:
        _sign(kms, key_id, b"\x00" * 64, MessageType="DIGEST", SigningAlgorithm="ED25519_PH_SHA_512")
    assert "not modelled" in err.value.response["Error"]["Message"]


def test_moto_is_stock_again_once_the_block_ends() -> None:
    from moto.kms import models, responses

    stock = (
        models.generate_private_key,
        models.KmsBackend._KmsBackend__ensure_valid_key_spec,  # type: ignore[attr-defined]
        models.Key.__dict__["signing_algorithms"],
        responses.KmsResponse.sign,
        responses.KmsResponse.verify,
    )
    with mock_aws():
        kms = boto3.client("kms", region_name="us-east-1")
        with ed25519_kms():  # the positive control: inside, an Ed25519 key signs and verifies
            key = kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec="ECC_NIST_EDWARDS25519")["KeyMetadata"]
            der = bytes(kms.get_public_key(KeyId=key["KeyId"])["PublicKey"])
            signature = _sign(kms, key["KeyId"], b"inside")["Signature"]
            public = serialization.load_der_public_key(der)
            assert isinstance(public, ed25519.Ed25519PublicKey)
            public.verify(signature, b"inside")
        with pytest.raises(ClientError) as err:
            kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec="ECC_NIST_EDWARDS25519")
        assert _code(err) == "ValidationException"
    assert stock == (
        models.generate_private_key,
        models.KmsBackend._KmsBackend__ensure_valid_key_spec,  # type: ignore[attr-defined]
        models.Key.__dict__["signing_algorithms"],
        responses.KmsResponse.sign,
        responses.KmsResponse.verify,
    )


def test_the_block_restores_moto_when_the_test_inside_it_fails() -> None:
    from moto.kms import models

    stock = models.generate_private_key
    with pytest.raises(RuntimeError), mock_aws(), ed25519_kms():
        assert models.generate_private_key is not stock
        raise RuntimeError("a failing test")
    assert models.generate_private_key is stock
