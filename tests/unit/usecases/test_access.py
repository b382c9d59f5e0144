"""usecases.access: where the handler reads scopes and the tenant from (the configured claims, in
every shape), which claims make a 401, and the 403/400 a principal and a package id answer."""

from __future__ import annotations

from typing import Any

import pytest

from acx.usecases.access import ClaimNames, Principal, check_package_id, principal_from_event, token_scopes
from acx.usecases.errors import ServiceError


def _event(claims: dict[str, Any], scopes: list[str] | None = None) -> dict[str, Any]:
    return {"requestContext": {"authorizer": {"jwt": {"claims": claims, "scopes": scopes}}}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("memory:read memory:write", {"memory:read", "memory:write"}),  # RFC 8693 / Cognito string
        (["memory:read", "log:read"], {"memory:read", "log:read"}),  # Okta scp / Auth0 permissions
        ("[memory:read log:read]", {"memory:read", "log:read"}),  # API Gateway's rendering of an array
        ('["memory:read","admin"]', {"memory:read", "admin"}),  # a JSON array as a string
        ("openid email unknown:scope", set()),  # other scopes are not service scopes
        (42, set()),
    ],
)
def test_every_claim_shape_is_read(raw: Any, expected: set[str]) -> None:
    jwt = {"claims": {"permissions": raw}}
    assert token_scopes(jwt, ClaimNames(scopes_claim="permissions")) == expected


def test_the_prefix_is_required_and_stripped() -> None:
    names = ClaimNames(scope_prefix="acx/")
    jwt = {"claims": {"scope": "acx/memory:read memory:write other/log:read"}}
    assert token_scopes(jwt, names) == {"memory:read"}


def test_permissions_never_fall_back_to_the_authorizers_scope_list() -> None:
    names = ClaimNames(scopes_claim="permissions")
    jwt = {"claims": {"scope": "memory:write"}, "scopes": ["memory:write"]}
    assert token_scopes(jwt, names) == frozenset()


def test_the_tenant_comes_from_the_configured_claim_only() -> None:
    names = ClaimNames(tenant_claim="custom:tenant")
    principal = principal_from_event(
        _event({"sub": "u", "custom:tenant": "acme", "scope": "memory:read"}), names
    )
    assert principal.tenant == "acme" and principal.scopes == {"memory:read"}
    with pytest.raises(ServiceError) as err:
        principal_from_event(_event({"sub": "u", "tenant": "acme"}), names)
    assert err.value.status == 401


def test_settings_carry_the_claim_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from acx.config import settings
    from acx.usecases.access import claim_names

    monkeypatch.setenv("SCOPE_PREFIX", "acx/")
    monkeypatch.setenv("SCOPES_CLAIM", "scp")
    monkeypatch.setenv("TENANT_CLAIM", "custom:tenant")
    settings.cache_clear()
    try:
        assert claim_names() == ClaimNames("acx/", "scp", "custom:tenant")
    finally:
        monkeypatch.undo()
        settings.cache_clear()


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "u"},  # no tenant
        {"sub": "u", "tenant": "acme\n"},  # a trailing newline would pass a $-anchored pattern
        {"sub": "u", "tenant": ".."},  # an S3 key segment
        {"sub": "u", "tenant": "-acme"},
        {"sub": "u", "tenant": "a" * 65},
        {"sub": "u", "tenant": 7},
        {"tenant": "acme"},  # no subject
        {"sub": "  ", "tenant": "acme"},
        {"sub": 5, "tenant": "acme"},
    ],
)
def test_claims_the_service_cannot_rely_on_are_401(claims: dict[str, Any]) -> None:
    with pytest.raises(ServiceError) as err:
        principal_from_event(_event(claims), ClaimNames())
    assert (err.value.status, err.value.code) == (401, "unauthorized")
    assert "acme" not in err.value.message  # the claim's value is never echoed


def test_a_principal_is_tenant_scoped_and_refuses_a_missing_scope_with_403() -> None:
    p = principal_from_event(_event({"sub": "x" * 300, "tenant": "acme"}, ["memory:read"]), ClaimNames())
    assert p.actor == "acme/" + "x" * 128
    p.require("memory:read")
    with pytest.raises(ServiceError) as err:
        p.require("memory:write")
    assert (err.value.status, err.value.extra) == (403, {"scope": "memory:write"})
    assert Principal("acme", "u", frozenset()).scopes == frozenset()


@pytest.mark.parametrize("package", ["", "UPPER", "-lead", "a/b", "a" * 65, "notes\n"])
def test_a_package_id_outside_the_pattern_is_400_naming_pkg(package: str) -> None:
    with pytest.raises(ServiceError) as err:
        check_package_id(package)
    assert (err.value.status, err.value.path) == (400, "$.pkg")
    assert check_package_id("notes-2") == "notes-2"


def test_the_agent_comes_from_the_configured_claim_and_a_malformed_one_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from acx.config import settings
    from acx.usecases.access import claim_names

    base = {"sub": "u1", "tenant": "acme"}
    assert principal_from_event(_event({**base, "agent_id": "bot-1"}), ClaimNames()).agent == "bot-1"
    assert principal_from_event(_event(base), ClaimNames()).agent is None  # no claim: no agent
    for bad in ("", "   ", "x" * 129, 7):
        assert principal_from_event(_event({**base, "agent_id": bad}), ClaimNames()).agent is None
    names = ClaimNames(agent_claim="custom:agent_id")
    assert principal_from_event(_event({**base, "agent_id": "bot-1"}), names).agent is None
    assert principal_from_event(_event({**base, "custom:agent_id": "bot-2"}), names).agent == "bot-2"
    monkeypatch.setenv("AGENT_CLAIM", "azp")
    settings.cache_clear()
    try:
        assert claim_names().agent_claim == "azp"
    finally:
        settings.cache_clear()


def test_a_dev_token_carries_the_agent_it_was_issued_for() -> None:
    from acx.local.jwt_issuer import DevIssuer

    issuer = DevIssuer()
    assert issuer.verify(issuer.issue("acme", agent="bot-1"))["agent_id"] == "bot-1"
    assert "agent_id" not in issuer.verify(issuer.issue("acme"))
