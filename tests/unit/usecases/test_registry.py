"""usecases.registry on fakes: the registry a verifier trusts names only public keys, in a window."""

from __future__ import annotations

import datetime as dt

from acx.core.signing import LocalEd25519Signer, PublicKey
from acx.usecases import registry
from tests.fakes import fake_deps


def test_the_registry_lists_the_signing_key_for_the_publisher_with_its_window() -> None:
    deps = fake_deps(PUBLISHER_ID="mem.example.org")
    deps.signer = LocalEd25519Signer()
    deps.signer.created_at = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    doc = registry.trust_registry(deps)
    [key] = doc["keys"]
    expected = PublicKey.from_der(deps.signer.public_key_der())
    assert doc["schemaVersion"] == "acx.trust-registry/1"
    assert (key["keyid"], key["publisherId"], key["status"]) == (expected.keyid, "mem.example.org", "active")
    assert key["publicKeyPem"] == expected.pem and "PRIVATE" not in str(doc)
    assert key["notBefore"] == "2026-01-02T03:04:05Z"
    assert key["notAfter"] == "2028-01-02T03:04:05Z"  # KEY_VALIDITY_DAYS = 730 from creation
    assert key["namespaceProof"]["txtRecord"] == "_acx-challenge.org.example.mem"


def test_a_configured_txt_record_is_named_as_configured() -> None:
    deps = fake_deps(NAMESPACE_TXT_RECORD="_acx.example.com")
    deps.signer = LocalEd25519Signer()
    assert registry.trust_registry(deps)["keys"][0]["namespaceProof"]["txtRecord"] == "_acx.example.com"
