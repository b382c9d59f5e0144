"""The API contract (acx.contract) against everything that must agree with it: the handler's routes,
template.yaml, the OpenAPI document, the CLI's printed keys, the dev issuer and the shipped schemas."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acx import contract as c
from acx.contract.models import ROUTES, LogVerifyResult, keys_of
from acx.usecases.access import check_package_id, principal_from_event
from acx.usecases.errors import ServiceError

ROOT = Path(__file__).resolve().parents[3]


def _app() -> Any:
    sys.path.insert(0, str(ROOT / "functions" / "api"))
    try:
        import app  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return app


def test_routes_of_the_contract_are_the_templates_and_the_handlers() -> None:
    from acx.local.gateway import routes_from_template

    template = {(r.method, r.template): r.scope for r in routes_from_template()}
    assert template == {(r.method, r.path): r.scope for r in ROUTES}
    document = json.loads(_app()._openapi_document())
    served = {(m.upper(), p) for p, item in document["paths"].items() for m in item}
    assert served == {(r.method, r.path) for r in ROUTES}


def test_openapi_declares_every_status_with_the_error_shape() -> None:
    document = json.loads(_app()._openapi_document())
    for route in ROUTES:
        operation = document["paths"][route.path][route.method.lower()]
        declared = {int(s) for s in operation["responses"]}
        assert declared == {s for s, _ in route.ok} | set(route.errors), route.key
        for status in route.errors:
            schema = operation["responses"][str(status)]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, route.key
        if route.scope is not None:
            assert {401, 403} <= declared and operation["x-acx-scope"] == route.scope
    bundles = document["paths"]["/v1/packages/{pkg}/bundles"]["post"]
    header = [p for p in bundles["parameters"] if p["name"] == "Idempotency-Key"]
    assert header and header[0]["schema"]["maxLength"] == c.MAX_IDEMPOTENCY_KEY
    assert {201, 409, 422, 423} <= {int(s) for s in bundles["responses"]}


def test_cli_prints_only_keys_the_server_sends() -> None:
    from acx.cli.client_log import VERIFY_DETAIL_KEYS

    assert set(VERIFY_DETAIL_KEYS) <= set(keys_of(LogVerifyResult))
    # and the server's verification result has exactly the model's keys
    from acx.usecases.verify import VerifyResult

    sample = VerifyResult(tenant="t", package="p").to_dict()
    assert LogVerifyResult.model_validate(sample) and set(sample) == set(keys_of(LogVerifyResult))


def test_dev_token_with_all_scopes_includes_admin() -> None:
    from acx.local.jwt_issuer import ALL_SCOPES, DevIssuer, scopes_of

    assert "admin" in ALL_SCOPES and set(ALL_SCOPES) == set(c.SCOPES)
    issuer = DevIssuer()
    assert scopes_of(issuer.verify(issuer.issue("t"))) == list(c.SCOPES)


def _event(tenant: Any, sub: Any = "u") -> dict[str, Any]:
    return {"requestContext": {"authorizer": {"jwt": {"claims": {"tenant": tenant, "sub": sub}}}}}


@pytest.mark.parametrize(
    "tenant", ["tka\n", ".", "..", "", " ", "a/b", "-x", "_x", "a" * 65, True, 7, None, ["a"], "[a b]"]
)
def test_tenant_claim_is_refused_unless_a_full_match(tenant: Any) -> None:
    with pytest.raises(ServiceError) as info:
        principal_from_event(_event(tenant))
    assert info.value.status == 401 and info.value.code == "unauthorized"


@pytest.mark.parametrize("tenant", ["tka", "a", "A.b_c-9", "x" * 64, "a..b"])
def test_tenant_claim_accepted(tenant: str) -> None:
    assert principal_from_event(_event(tenant)).tenant == tenant


@pytest.mark.parametrize("package", ["-", "--", "-a", "a\n", "A", "a_b", "", "a" * 65])
def test_package_ids_refused(package: str) -> None:
    with pytest.raises(ServiceError) as info:
        check_package_id(package)
    assert info.value.status == 400 and info.value.path == "$.pkg"


def test_missing_scope_names_it() -> None:
    principal = principal_from_event(_event("t"))
    with pytest.raises(ServiceError) as info:
        principal.require("memory:write")
    assert info.value.status == 403 and info.value.body()["scope"] == "memory:write"
    assert "memory:write" in info.value.message


def test_shipped_schemas_are_the_models() -> None:
    from acx.core.records import record_json_schema

    committed = json.loads((ROOT / "layers/acx/acx/schemas/record.schema.json").read_text())
    generated = record_json_schema()
    assert {k: v for k, v in committed.items() if k not in ("$schema", "$id")} == generated


def test_shipped_example_records_pass_records_check(capsys: pytest.CaptureFixture[str]) -> None:
    from acx.cli.main import main

    assert main(["records", "check", str(ROOT / "examples/agent-package/memory-records.json")]) == 0
    verdicts = json.loads(capsys.readouterr().out)
    assert verdicts and all(v["ok"] for v in verdicts)


def test_request_models_refuse_with_path_and_code() -> None:
    from acx.contract.models import LockRequest, RequestError, UploadRequest, parse_request

    for model, doc, code, path in [
        (UploadRequest, {"size": 0}, "invalid_request", "$.size"),
        (UploadRequest, {"size": "1"}, "invalid_type", "$.size"),
        (UploadRequest, {"size": 1, "x": 1}, "unknown_field", "$.x"),
        (LockRequest, {"reason": "x" * 257}, "too_long", "$.reason"),
    ]:
        with pytest.raises(RequestError) as info:
            parse_request(model, doc)
        assert (info.value.code, info.value.path) == (code, path), (model, doc)
    assert parse_request(UploadRequest, None).size is None
