"""KmsSigner on moto: Ed25519 via acx.local.moto_ed25519, ECDSA P-256 on stock moto, DSSE round trip."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from acx.adapters.kms import KmsSigner, KmsSignerError
from acx.core import dsse
from acx.core.signing import PublicKey
from acx.local import moto_ed25519
from tests import factories


@pytest.fixture
def kms():
    with mock_aws():
        yield boto3.client("kms", region_name="us-east-1")


def _key(kms, spec: str) -> str:
    return kms.create_key(KeyUsage="SIGN_VERIFY", KeySpec=spec)["KeyMetadata"]["KeyId"]


def test_ecdsa_p256_on_stock_moto_raw_signature_verifies_offline(kms) -> None:
    signer = KmsSigner(kms, _key(kms, "ECC_NIST_P256"))
    assert signer.algorithm == "ecdsa-p256"
    pub = PublicKey.from_der(signer.public_key_der())
    assert pub.verify(signer.sign(b"hello"), b"hello")
    assert not pub.verify(signer.sign(b"hello"), b"hellO")
    assert signer.keyid.startswith("ecdsa-p256:")


def test_ed25519_key_behaves_as_aws_documents(kms) -> None:
    moto_ed25519.install()
    moto_ed25519.install()  # idempotent
    key_id = _key(kms, "ECC_NIST_EDWARDS25519")
    meta = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    assert meta["KeySpec"] == "ECC_NIST_EDWARDS25519"
    assert meta["SigningAlgorithms"] == ["ED25519_SHA_512"]
    der = kms.get_public_key(KeyId=key_id)["PublicKey"]
    assert PublicKey.from_der(der).algorithm == "ed25519"
    sig = kms.sign(KeyId=key_id, Message=b"m" * 4096, MessageType="RAW", SigningAlgorithm="ED25519_SHA_512")
    assert len(sig["Signature"]) == 64
    assert PublicKey.from_der(der).verify(sig["Signature"], b"m" * 4096)
    ok = kms.verify(
        KeyId=key_id,
        Message=b"m" * 4096,
        MessageType="RAW",
        Signature=sig["Signature"],
        SigningAlgorithm="ED25519_SHA_512",
    )
    assert ok["SignatureValid"] is True
    bad = kms.verify(
        KeyId=key_id,
        Message=b"x" * 10,
        MessageType="RAW",
        Signature=sig["Signature"],
        SigningAlgorithm="ED25519_SHA_512",
    )
    assert bad["SignatureValid"] is False
    with pytest.raises(ClientError) as exc:
        kms.sign(KeyId=key_id, Message=b"m" * 4097, MessageType="RAW", SigningAlgorithm="ED25519_SHA_512")
    assert exc.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError):
        kms.sign(KeyId=key_id, Message=b"m", MessageType="RAW", SigningAlgorithm="ECDSA_SHA_256")


def test_kms_ed25519_signer_signs_a_dsse_envelope_that_verifies(kms) -> None:
    moto_ed25519.install()
    signer = KmsSigner(kms, _key(kms, "ECC_NIST_EDWARDS25519"))
    statement = factories.statement(subject_name="s")
    env = dsse.parse_envelope(dsse.envelope_json(dsse.sign_statement(statement, signer)))
    key = PublicKey.from_der(signer.public_key_der())
    assert env.signatures[0][0] == key.keyid == signer.keyid
    assert dsse.verify_envelope(env, key)
    with pytest.raises(KmsSignerError):
        signer.sign(b"x" * 5000)


def test_ecdsa_digest_path_for_long_messages(kms) -> None:
    moto_ed25519.install()  # makes moto's DIGEST signing correct
    signer = KmsSigner(kms, _key(kms, "ECC_NIST_P256"))
    message = b"z" * 10_000
    assert PublicKey.from_der(signer.public_key_der()).verify(signer.sign(message), message)


def test_symmetric_key_is_refused(kms) -> None:
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    with pytest.raises(KmsSignerError):
        KmsSigner(kms, key_id)


def test_works_in_threaded_moto_server() -> None:
    from moto.server import ThreadedMotoServer

    moto_ed25519.install()
    server = ThreadedMotoServer(port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        kms = boto3.client("kms", region_name="us-east-1", endpoint_url=f"http://{host}:{port}")
        signer = KmsSigner(kms, _key(kms, "ECC_NIST_EDWARDS25519"))
        assert PublicKey.from_der(signer.public_key_der()).verify(signer.sign(b"abc"), b"abc")
    finally:
        server.stop()
