"""HTTP API handler: every /v1 route. Thin: parse, check the caller, call one use case, respond."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from functools import lru_cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.metrics import MetricUnit

from acx.observability import logger, metrics
from acx.usecases.access import Principal, check_package_id, principal_from_event
from acx.usecases.errors import ServiceError

app = APIGatewayHttpResolver(enable_validation=True)

MAX_INLINE_BYTES = 5 * 1024 * 1024
PkgPath = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[a-z0-9-]+$")]

# OpenAPI descriptions of what the handlers read themselves (raw bodies, strictly parsed): merged
# into the operations so that clients and the schema fuzzer (tests/e2e/test_fuzz_api.py) see them.
_PUBLIC: dict[str, Any] = {"security": []}


def _json_request(schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": schema}}}}


_BUNDLE_BODY = _json_request({"$ref": "#/components/schemas/AcxMemoryBundle"})
_UPLOAD_BODY = _json_request(
    {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 100 * 1024 * 1024},
            "contentType": {"type": "string", "enum": ["application/json"]},
        },
    },
    required=False,
)
_EXPORT_BODY = _json_request(
    {
        "type": "object",
        "additionalProperties": False,
        "properties": {"includeFieldLearned": {"type": "boolean"}, "async": {"type": "boolean"}},
    },
    required=False,
)


def _deps() -> Any:
    from acx.usecases.deps import deps

    return deps()


def _caller(scope: str, package: str | None = None) -> Principal:
    principal = principal_from_event(app.current_event.raw_event)
    principal.require(scope)
    if package is not None:
        check_package_id(package)
    return principal


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status, "application/json", json.dumps(body, separators=(",", ":")), headers or {})


@app.get("/v1/health", openapi_extensions=_PUBLIC)
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/v1/openapi.json", openapi_extensions=_PUBLIC)
def openapi():
    return Response(200, "application/json", _openapi_document())


@lru_cache(maxsize=1)
def _openapi_document() -> str:
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    from acx.core.bundle import _build_model

    document = json.loads(
        app.get_openapi_json_schema(
            title="acx memory cartridge service",
            version="1.0.0",
            security_schemes={"bearer": HTTPBearer(bearerFormat="JWT")},
            security=[{"bearer": []}],
        )
    )
    bundle = _build_model().model_json_schema(ref_template="#/components/schemas/{model}")
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(bundle.pop("$defs", {}))
    schemas["AcxMemoryBundle"] = bundle
    for model in schemas.values():  # pydantic's "absent" default (null) is not a valid example value
        for prop in model.get("properties", {}).values():
            if "default" in prop and prop["default"] is None:
                del prop["default"]
    return json.dumps(document, separators=(",", ":"))


@app.get("/v1/trust-registry", openapi_extensions=_PUBLIC)
def trust_registry() -> dict[str, Any]:
    from acx.usecases.registry import trust_registry as build

    return build(_deps())


@app.post("/v1/packages/<pkg>/bundles", openapi_extensions=_BUNDLE_BODY)
def post_bundle(pkg: PkgPath):
    from acx.usecases.ingest import ingest_bundle

    principal = _caller("memory:write", pkg)
    body = _raw_body()
    key = app.current_event.headers.get("idempotency-key")
    if key:
        summary = _idempotent_ingest(
            request={
                "tenant": principal.tenant,
                "package": pkg,
                "idempotencyKey": key[:128],
                "bodySha256": hashlib.sha256(body).hexdigest(),
                "actor": principal.actor,
            },
            body=body,
        )
    else:
        summary = ingest_bundle(_deps(), principal.tenant, pkg, principal.actor, body).to_dict()
    metrics.add_metric(name="RecordsIngested", unit=MetricUnit.Count, value=summary["accepted"])
    metrics.add_metric(name="RecordsMerged", unit=MetricUnit.Count, value=summary["merged"])
    logger.info(
        "bundle ingested",
        extra={
            "package": pkg,
            "accepted": summary["accepted"],
            "merged": summary["merged"],
            "log": summary["log"],
        },
    )
    return _json(201, summary)


_IDEMPOTENT: dict[str, Any] = {}


def _idempotent_ingest(request: dict[str, Any], body: bytes) -> dict[str, Any]:
    """A retried request with the same Idempotency-Key returns the first response and writes nothing."""
    fn = _IDEMPOTENT.get("fn")
    if fn is None:
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent_function,
        )

        from acx.adapters.aws import client

        store = DynamoDBPersistenceLayer(
            table_name=_deps().settings.idempotency_table, boto3_client=client("dynamodb")
        )
        config = IdempotencyConfig(
            event_key_jmespath="[tenant, package, idempotencyKey]",
            payload_validation_jmespath="bodySha256",
            expires_after_seconds=24 * 3600,
            raise_on_no_idempotency_key=True,
        )

        @idempotent_function(data_keyword_argument="request", persistence_store=store, config=config)
        def run(request: dict[str, Any], body: bytes) -> dict[str, Any]:
            from acx.usecases.ingest import ingest_bundle

            return ingest_bundle(
                _deps(), request["tenant"], request["package"], request["actor"], body
            ).to_dict()

        fn = _IDEMPOTENT["fn"] = run
        _IDEMPOTENT["config"] = config
    _IDEMPOTENT["config"].register_lambda_context(app.lambda_context)
    return fn(request=request, body=body)  # type: ignore[no-any-return]


def _raw_body() -> bytes:
    event = app.current_event
    if event.is_base64_encoded:
        # Bytes as sent: not powertools' decoded_body, which assumes UTF-8 and fails on anything else
        # (invalid UTF-8 is the JSON parser's to refuse, with a 400 naming the offset).
        try:
            body = base64.b64decode(event.body or "", validate=True)
        except binascii.Error:
            raise ServiceError(400, "invalid_body", "body is not valid base64", "$") from None
    else:
        body = (event.body or "").encode("utf-8", "surrogatepass")
    if len(body) > MAX_INLINE_BYTES:
        raise ServiceError(
            413,
            "too_large",
            f"inline bundles are limited to {MAX_INLINE_BYTES} bytes; use POST /v1/packages/{{pkg}}/uploads",
            "$",
        )
    return body


def _json_body(limit: int = 64 * 1024) -> dict[str, Any]:
    from acx.core.bundle import safe_path
    from acx.core.canonical import CanonicalError, loads

    raw = _raw_body()
    if not raw.strip():
        return {}
    if len(raw) > limit:
        raise ServiceError(413, "too_large", f"request body is limited to {limit} bytes", "$")
    try:
        doc = loads(raw)
    except CanonicalError as exc:
        raise ServiceError(400, "invalid_json", exc.message, safe_path(exc.path)) from None
    if not isinstance(doc, dict):
        raise ServiceError(422, "invalid_body", "request body must be a JSON object", "$")
    return doc


def _only(doc: dict[str, Any], allowed: dict[str, type | tuple[type, ...]]) -> None:
    from acx.core.bundle import safe_path

    for key, value in doc.items():
        if key not in allowed:
            where = f"$.{key}" if key.isidentifier() and len(key) <= 64 else "$"
            raise ServiceError(422, "unknown_field", "unknown field", safe_path(where))
        if not isinstance(value, allowed[key]) or isinstance(value, bool) != (allowed[key] is bool):
            raise ServiceError(422, "invalid_type", f"wrong type for {key}", f"$.{key}")


@app.post("/v1/packages/<pkg>/uploads", openapi_extensions=_UPLOAD_BODY)
def post_upload(pkg: PkgPath):
    from acx.usecases.uploads import create_upload

    principal = _caller("memory:write", pkg)
    doc = _json_body()
    _only(doc, {"size": int, "contentType": str})
    if doc.get("contentType", "application/json") != "application/json":
        raise ServiceError(
            422, "invalid_content_type", "bundles are uploaded as application/json", "$.contentType"
        )
    return _json(201, create_upload(_deps(), principal.tenant, pkg, principal.actor, doc.get("size")))


@app.get("/v1/packages/<pkg>/uploads/<upload_id>")
def get_upload(pkg: PkgPath, upload_id: Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]) -> dict[str, Any]:
    from acx.usecases.uploads import upload_status

    principal = _caller("memory:write", pkg)
    return upload_status(_deps(), principal.tenant, pkg, upload_id)


@app.get("/v1/packages/<pkg>/memories")
def get_memories(
    pkg: PkgPath,
    tier: Annotated[str | None, Query(pattern=r"^(rom|save)$")] = None,
    tag: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> dict[str, Any]:
    from acx.usecases.recall import recall

    principal = _caller("memory:read", pkg)
    return recall(_deps(), principal.tenant, pkg, tier=tier, tag=tag, limit=limit, cursor=cursor)


@app.get("/v1/packages/<pkg>/memories/search")
def search_memories(
    pkg: PkgPath,
    q: Annotated[str | None, Query()] = None,
    k: Annotated[str | None, Query()] = None,
    tier: Annotated[str | None, Query()] = None,
    tag: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    """Ranked hybrid search; the use case validates (limits named in the 400) and never logs ``q``."""
    from acx.usecases.search import parse_query, search

    principal = _caller("memory:read", pkg)
    query = parse_query(q, k, tier, tag)
    return search(_deps(), principal.tenant, pkg, query).model_dump(mode="json")


@app.delete("/v1/packages/<pkg>/memories/<record_id>")
def delete_memory(pkg: PkgPath, record_id: Annotated[str, Path(max_length=128)]) -> dict[str, Any]:
    from acx.usecases.forget import forget

    principal = _caller("memory:forget", pkg)
    result = forget(_deps(), principal.tenant, pkg, principal.actor, record_id=record_id)
    metrics.add_metric(name="RecordsForgotten", unit=MetricUnit.Count, value=1)
    return result


@app.delete("/v1/packages/<pkg>/memories")
def delete_memory_by_hash(
    pkg: PkgPath, contentHash: Annotated[str, Query(pattern=r"^[0-9a-f]{64}$")]
) -> dict[str, Any]:
    from acx.usecases.forget import forget

    principal = _caller("memory:forget", pkg)
    return forget(_deps(), principal.tenant, pkg, principal.actor, content_hash=contentHash)


@app.post("/v1/packages/<pkg>/cartridges", openapi_extensions=_EXPORT_BODY)
def post_cartridge(pkg: PkgPath):
    from acx.usecases.cartridges import request_export

    principal = _caller("cartridge:export", pkg)
    doc = _json_body()
    _only(doc, {"includeFieldLearned": bool, "async": bool})
    status, body = request_export(
        _deps(),
        principal.tenant,
        pkg,
        principal.actor,
        include_field_learned=bool(doc.get("includeFieldLearned", False)),
        force_async=bool(doc.get("async", False)),
    )
    return _json(status, body)


@app.get("/v1/packages/<pkg>/cartridges/<cartridge_id>")
def get_cartridge(
    pkg: PkgPath, cartridge_id: Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]
) -> dict[str, Any]:
    from acx.usecases.cartridges import download

    principal = _caller("cartridge:export", pkg)
    return download(_deps(), principal.tenant, pkg, cartridge_id)


@app.get("/v1/packages/<pkg>/log")
def get_log(pkg: PkgPath) -> dict[str, Any]:
    from acx.usecases.logview import log_head

    principal = _caller("log:read", pkg)
    return log_head(_deps(), principal.tenant, pkg)


@app.get("/v1/packages/<pkg>/log/verify")
def get_log_verify(pkg: PkgPath) -> dict[str, Any]:
    from acx.usecases.logview import verify

    principal = _caller("log:read", pkg)
    result = verify(_deps(), principal.tenant, pkg)
    metrics.add_metric(
        name="VerificationFailed", unit=MetricUnit.Count, value=0 if result.get("status") == "ok" else 1
    )
    return result


@app.get("/v1/packages/<pkg>/log/proof/inclusion")
def get_inclusion(
    pkg: PkgPath, index: Annotated[int, Query(ge=0)], size: Annotated[int, Query(ge=1)]
) -> dict[str, Any]:
    from acx.usecases.logview import inclusion

    principal = _caller("log:read", pkg)
    return inclusion(_deps(), principal.tenant, pkg, index, size)


@app.get("/v1/packages/<pkg>/log/proof/consistency")
def get_consistency(
    pkg: PkgPath,
    first: Annotated[int, Query(alias="from", ge=1)],
    second: Annotated[int, Query(alias="to", ge=1)],
) -> dict[str, Any]:
    from acx.usecases.logview import consistency

    principal = _caller("log:read", pkg)
    return consistency(_deps(), principal.tenant, pkg, first, second)


@app.post("/v1/packages/<pkg>/lock")
def post_lock(pkg: PkgPath) -> dict[str, Any]:
    return _set_lock(pkg, locked=True)


@app.post("/v1/packages/<pkg>/unlock")
def post_unlock(pkg: PkgPath) -> dict[str, Any]:
    return _set_lock(pkg, locked=False)


def _set_lock(pkg: str, *, locked: bool) -> dict[str, Any]:
    from acx.usecases.locks import set_lock

    principal = _caller("admin", pkg)
    doc = _json_body(limit=4 * 1024)
    _only(doc, {"reason": str})
    result = set_lock(_deps(), principal.tenant, pkg, principal.actor, locked, doc.get("reason"))
    logger.info(
        "package lock",
        extra={"package": pkg, "locked": locked, "changed": result["changed"], "log": result["log"]},
    )
    return result


@app.exception_handler(ServiceError)
def on_service_error(exc: ServiceError) -> Response:
    if exc.status >= 500:
        logger.warning("request failed", extra={"code": exc.code, "status": exc.status})
    else:
        metrics.add_metric(name="RequestsRejected", unit=MetricUnit.Count, value=1)
        if exc.code == "blocked":
            metrics.add_metric(name="BundlesBlockedByScrub", unit=MetricUnit.Count, value=1)
    return _json(exc.status, exc.body(), exc.headers)


@app.exception_handler(RequestValidationError)
def on_validation_error(exc: RequestValidationError) -> Response:
    errors = exc.errors()
    first = errors[0] if errors else {}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("path", "query", "body")]
    where = "$." + ".".join(loc) if loc else "$"
    message = str(first.get("msg", "invalid request"))
    return _json(
        422 if first.get("loc", ("",))[0] == "body" else 400,
        {"error": {"code": "invalid_request", "message": message, "path": where}},
    )


@app.not_found
def on_not_found(_: NotFoundError) -> Response:
    return _json(404, {"error": {"code": "not_found", "message": "no such route"}})


@app.exception_handler(Exception)
def on_unexpected(exc: Exception) -> Response:
    from acx.usecases.faults import classify

    status, code, message, retry_after = classify(exc)
    logger.exception("unhandled error", extra={"error_type": type(exc).__name__})
    headers = {"Retry-After": str(retry_after)} if retry_after else {}
    return _json(status, {"error": {"code": code, "message": message}}, headers)


@metrics.log_metrics
@logger.inject_lambda_context(correlation_id_path="requestContext.requestId", log_event=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
