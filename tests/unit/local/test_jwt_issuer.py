"""The dev issuer must refuse exactly what the HTTP API JWT authorizer refuses."""

from __future__ import annotations

import time

import jwt
import pytest

from acx.local.jwt_issuer import (
    ALL_SCOPES,
    DevIssuer,
    InvalidToken,
    scopes_of,
    stringify_claims,
)


@pytest.fixture(scope="module")
def issuer() -> DevIssuer:
    return DevIssuer()


def test_issue_and_verify_carries_the_claims(issuer: DevIssuer) -> None:
    token = issuer.issue("acme", ["memory:read", "log:read"], sub="alice", ttl=60)
    claims = issuer.verify(token)
    assert claims["tenant"] == "acme"
    assert claims["sub"] == "alice"
    assert claims["scope"] == "memory:read log:read"
    assert claims["iss"] == issuer.issuer and claims["aud"] == issuer.audience
    assert claims["exp"] - claims["iat"] == 60
    assert jwt.get_unverified_header(token)["kid"] == issuer.kid


def test_default_scopes_are_all_scopes(issuer: DevIssuer) -> None:
    assert scopes_of(issuer.verify(issuer.issue("t"))) == list(ALL_SCOPES)


def test_expired_token_is_rejected(issuer: DevIssuer) -> None:
    token = issuer.issue("acme", ttl=10, now=int(time.time()) - 100)
    with pytest.raises(InvalidToken):
        issuer.verify(token)


def test_not_yet_valid_token_is_rejected(issuer: DevIssuer) -> None:
    now = int(time.time())
    token = jwt.encode(
        {"iss": issuer.issuer, "aud": issuer.audience, "exp": now + 600, "nbf": now + 300, "tenant": "x"},
        issuer._private,
        algorithm="EdDSA",
        headers={"kid": issuer.kid},
    )
    with pytest.raises(InvalidToken):
        issuer.verify(token)


def test_token_of_another_key_is_rejected(issuer: DevIssuer) -> None:
    other = DevIssuer()
    with pytest.raises(InvalidToken):
        issuer.verify(other.issue("acme"))


def test_same_kid_forged_signature_is_rejected(issuer: DevIssuer) -> None:
    other = DevIssuer()
    other.kid = issuer.kid  # attacker copies the kid from the public JWKS
    with pytest.raises(InvalidToken):
        issuer.verify(other.issue("acme"))


@pytest.mark.parametrize(
    "override",
    [{"iss": "https://evil.example"}, {"aud": "other-api"}, {"exp": None}],
)
def test_wrong_issuer_audience_or_missing_exp_is_rejected(issuer: DevIssuer, override: dict) -> None:
    now = int(time.time())
    claims = {"iss": issuer.issuer, "aud": issuer.audience, "exp": now + 600, "tenant": "x"}
    claims.update(override)
    claims = {k: v for k, v in claims.items() if v is not None}
    token = jwt.encode(claims, issuer._private, algorithm="EdDSA", headers={"kid": issuer.kid})
    with pytest.raises(InvalidToken):
        issuer.verify(token)


def test_client_id_satisfies_audience_like_the_authorizer(issuer: DevIssuer) -> None:
    now = int(time.time())
    claims = {"iss": issuer.issuer, "client_id": issuer.audience, "exp": now + 600, "tenant": "x"}
    token = jwt.encode(claims, issuer._private, algorithm="EdDSA", headers={"kid": issuer.kid})
    assert issuer.verify(token)["tenant"] == "x"


def test_alg_none_and_garbage_are_rejected(issuer: DevIssuer) -> None:
    now = int(time.time())
    unsigned = jwt.encode(
        {"iss": issuer.issuer, "aud": issuer.audience, "exp": now + 600},
        key=None,
        algorithm="none",
        headers={"kid": issuer.kid},
    )
    for bad in (unsigned, "not.a.token", "", issuer.issue("acme") + "x"):
        with pytest.raises(InvalidToken):
            issuer.verify(bad)


@pytest.mark.parametrize("alg", ["ES256", "RS256"])
def test_other_algorithms_round_trip(alg: str) -> None:
    iss = DevIssuer(algorithm=alg)  # type: ignore[arg-type]
    assert iss.verify(iss.issue("acme"))["tenant"] == "acme"
    assert iss.jwks()["keys"][0]["alg"] == alg


def test_jwks_verifies_tokens_with_a_standard_client(issuer: DevIssuer) -> None:
    jwk = issuer.jwks()["keys"][0]
    assert jwk["kid"] == issuer.kid and "d" not in jwk  # public half only
    key = jwt.PyJWK(jwk)
    claims = jwt.decode(issuer.issue("acme"), key.key, algorithms=["EdDSA"], audience=issuer.audience)
    assert claims["tenant"] == "acme"


def test_claims_are_stringified_like_api_gateway() -> None:
    out = stringify_claims({"exp": 12, "tenant": "a", "groups": ["x", "y"], "flag": True})
    assert out == {"exp": "12", "tenant": "a", "groups": "[x y]", "flag": "true"}
    assert scopes_of({}) is None
    assert scopes_of({"scp": ["a", "b"]}) == ["a", "b"]
