"""KmsSigner on moto: ECDSA P-256 on stock moto, Ed25519 inside tests/integration/moto_ed25519.py's
block, the DSSE round trip; the DIGEST path for long ECDSA messages against a botocore Stubber."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from moto import mock_aws

from acx.adapters.kms import KmsSigner, KmsSignerError
from acx.core import dsse
from acx.core.signing import PublicKey
from tests import factories
from tests.integration.moto_ed25519 import ed25519_kms


@pytest.fixture
def kms() -> Iterator[Any]:
    with mock_aws(), ed25519_kms():
        yield boto3.client("kms", region_name="us-east-1")


def _key(kms: Any, spec: str) -> str:
    return str(kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec=spec)["KeyMetadata"]["KeyId"])


def test_ecdsa_p256_on_stock_moto_raw_signature_verifies_offline() -> None:
    with mock_aws():
        kms = boto3.client("kms", region_name="us-east-1")
        signer = KmsSigner(kms, _key(kms, "ECC_NIST_P256"))
        assert signer.algorithm == "ecdsa-p256"
        pub = PublicKey.from_der(signer.public_key_der())
        assert pub.verify(signer.sign(b"hello"), b"hello")
        assert not pub.verify(signer.sign(b"hello"), b"hellO")
        assert signer.keyid.startswith("ecdsa-p256:")


def test_ed25519_signer_signs_up_to_4096_bytes_and_refuses_more_before_calling_kms(kms: Any) -> None:
    signer = KmsSigner(kms, _key(kms, "ECC_NIST_EDWARDS25519"))
    assert signer.algorithm == "ed25519" and signer.keyid.startswith("ed25519:")
    pub = PublicKey.from_der(signer.public_key_der())
    assert pub.verify(signer.sign(b"m" * 4096), b"m" * 4096)
    assert not pub.verify(signer.sign(b"m" * 4096), b"m" * 4095)
    with Stubber(kms) as stub, pytest.raises(KmsSignerError, match="4096"):
        signer.sign(b"m" * 4097)  # the stubber has no answer queued: a call to KMS would fail it
    stub.assert_no_pending_responses()


def test_kms_ed25519_signer_signs_a_dsse_envelope_that_verifies(kms: Any) -> None:
    signer = KmsSigner(kms, _key(kms, "ECC_NIST_EDWARDS25519"))
    statement = factories.statement(subject_name="s")
    env = dsse.parse_envelope(dsse.envelope_json(dsse.sign_statement(statement, signer)))
    key = PublicKey.from_der(signer.public_key_der())
    assert env.signatures[0][0] == key.keyid == signer.keyid
    assert dsse.verify_envelope(env, key)


def test_ecdsa_digest_path_for_long_messages() -> None:
    """Over 4096 bytes the signer sends the sha256 as ``MessageType=DIGEST``; KMS then "skips the
    hashing step in the signing algorithm" (KMS API reference, Sign, MessageType), so the signature is
    ECDSA over the message. moto 5 ignores MessageType and hashes the digest again (its Verify says
    "The MessageType-parameter DIGEST is not yet implemented"), so AWS's answer is played by a
    Stubber here, made as KMS documents it."""
    private = ec.generate_private_key(ec.SECP256R1())
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    message = b"z" * 10_000
    digest = hashlib.sha256(message).digest()
    signature = private.sign(digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))
    client = boto3.client("kms", region_name="us-east-1")
    key_id = "1234abcd-12ab-34cd-56ef-1234567890ab"
    with Stubber(client) as stub:
        stub.add_response(
            "describe_key",
            {
                "KeyMetadata": {
                    "KeyId": key_id,
                    "KeySpec": "ECC_NIST_P256",
                    "KeyUsage": "SIGN_VERIFY",
                    "SigningAlgorithms": ["ECDSA_SHA_256"],
                    "CreationDate": datetime(2026, 1, 1, tzinfo=UTC),
                }
            },
            {"KeyId": key_id},
        )
        stub.add_response("get_public_key", {"KeyId": key_id, "PublicKey": der}, {"KeyId": key_id})
        stub.add_response(
            "sign",
            {"KeyId": key_id, "Signature": signature, "SigningAlgorithm": "ECDSA_SHA_256"},
            {
                "KeyId": key_id,
                "Message": digest,
                "MessageType": "DIGEST",
                "SigningAlgorithm": "ECDSA_SHA_256",
            },
        )
        signer = KmsSigner(client, key_id)
        pub = PublicKey.from_der(signer.public_key_der())
        assert pub.verify(signer.sign(message), message)
        assert not pub.verify(signature, message[:-1])
        stub.assert_no_pending_responses()


def test_symmetric_key_is_refused(kms: Any) -> None:
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    with pytest.raises(KmsSignerError):
        KmsSigner(kms, key_id)
    assert KmsSigner(kms, _key(kms, "ECC_NIST_P256")).algorithm == "ecdsa-p256"  # positive control


def test_works_in_threaded_moto_server() -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        kms = boto3.client("kms", region_name="us-east-1", endpoint_url=f"http://{host}:{port}")
        with ed25519_kms():
            signer = KmsSigner(kms, _key(kms, "ECC_NIST_EDWARDS25519"))
            assert PublicKey.from_der(signer.public_key_der()).verify(signer.sign(b"abc"), b"abc")
    finally:
        server.stop()
