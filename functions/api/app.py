"""HTTP API handler: every /v1 route. Thin: parse, check the caller, call one use case, respond.

One short function per route (the route table is the module); the contract and the use cases hold
the rules.
"""

from __future__ import annotations

# ruff: noqa: E402 - acx.coldstart runs before the imports below (it changes how they load)
from acx import coldstart

coldstart.begin()

import base64
import binascii
import hashlib
import json
import os
from functools import lru_cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.metrics import MetricUnit

from acx import contract as c
from acx import deadline
from acx.observability import logger, metrics
from acx.usecases.access import Principal, check_package_id, principal_from_event
from acx.usecases.errors import ServiceError

# Use cases are imported inside the routes, not here: at init only what is imported above loads
# (bench coldstart times the init).

app = APIGatewayHttpResolver(enable_validation=True)

PkgPath = Annotated[str, Path(min_length=1, max_length=64, pattern=f"^{c.PACKAGE_ID_PATTERN}$")]
Limit = Annotated[int, Query(ge=1, le=c.LIST_MAX_LIMIT)]
Cursor = Annotated[str | None, Query(max_length=c.MAX_CURSOR)]
_PUBLIC: dict[str, Any] = {"security": []}


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

    from acx.contract.openapi import complete

    document = json.loads(
        app.get_openapi_json_schema(
            title="acx memory cartridge service",
            version="1.0.0",
            security_schemes={"bearer": HTTPBearer(bearerFormat="JWT")},
            security=[{"bearer": []}],
        )
    )
    return json.dumps(complete(document), separators=(",", ":"))


@app.get("/v1/trust-registry", openapi_extensions=_PUBLIC)
def trust_registry() -> dict[str, Any]:
    from acx.usecases.registry import trust_registry as build

    return build(_deps())


# The web console: static files beside this module, public (the page holds no data; every call it
# makes carries the person's bearer token). See acx.console for the headers and the CSRF defence.
@app.get("/console", openapi_extensions=_PUBLIC)
def console_page():
    return _console_file(None)


@app.get("/console/<asset>", openapi_extensions=_PUBLIC)
def console_asset(asset: Annotated[str, Path(examples=["console.js", "console.css"])]):
    return _console_file(asset)


_CONSOLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "console")


def _console_file(name: str | None) -> Response:
    from acx.console import read_asset

    found = read_asset(_CONSOLE_DIR, name)
    if found is None:
        return _json(404, {"error": {"code": c.ERR_NO_ROUTE, "message": "no such console file"}})
    content_type, body, headers = found
    return Response(200, content_type, body, headers)


@app.get("/v1/packages")
def get_packages(limit: Limit = c.LIST_DEFAULT_LIMIT, cursor: Cursor = None) -> dict[str, Any]:
    from acx.usecases.listing import list_packages

    principal = _caller(c.SCOPE_READ)
    return list_packages(_deps(), principal.tenant, limit, cursor)


@app.post("/v1/packages/<pkg>/bundles")
def post_bundle(pkg: PkgPath, onForgotten: Annotated[str, Query(pattern=r"^(refuse|skip)$")] = "refuse"):
    from acx.usecases.ingest import ingest_bundle

    principal = _caller(c.SCOPE_WRITE, pkg)
    body = _body_bytes(c.MAX_INLINE_BYTES, "inline bundles", "; use POST /v1/packages/{pkg}/uploads")
    key = app.current_event.headers.get("idempotency-key")
    if key is not None and not 1 <= len(key) <= c.MAX_IDEMPOTENCY_KEY:
        raise ServiceError(
            400,
            c.ERR_INVALID_HEADER,
            f"Idempotency-Key must be 1-{c.MAX_IDEMPOTENCY_KEY} characters",
            "$.headers.Idempotency-Key",
        )
    if key:
        summary = _idempotent_ingest(
            request={
                "tenant": principal.tenant,
                "package": pkg,
                "idempotencyKey": key,
                "bodySha256": hashlib.sha256(body).hexdigest() + ("" if onForgotten == "refuse" else "+skip"),
                "actor": principal.actor,
                "onForgotten": onForgotten,
                "agent": principal.agent,
            },
            body=body,
        )
    else:
        summary = ingest_bundle(
            _deps(),
            principal.tenant,
            pkg,
            principal.actor,
            body,
            on_forgotten=onForgotten,
            agent=principal.agent,
        ).to_dict()
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
    run = _IDEMPOTENT.get("run")
    if run is None:
        run = _IDEMPOTENT["run"] = (
            _deps()
            .idempotency()
            .once(
                _ingest_request,
                name="app._idempotent_ingest.<locals>.run",  # the stored keys' prefix since the first release
                key="[tenant, package, idempotencyKey]",
                payload="bodySha256",
                expires_after_seconds=24 * 3600,
            )
        )
    return run(request, body, app.lambda_context)  # type: ignore[no-any-return]


def _ingest_request(request: dict[str, Any], body: bytes) -> dict[str, Any]:
    from acx.usecases.ingest import ingest_bundle

    return ingest_bundle(
        _deps(),
        request["tenant"],
        request["package"],
        request["actor"],
        body,
        on_forgotten=request.get("onForgotten", "refuse"),
        agent=request.get("agent"),
    ).to_dict()


def _body_bytes(limit: int, what: str, hint: str = "") -> bytes:
    """The request body as sent (bytes), refused with 413 over ``limit``.

    Not powertools' decoded_body, which assumes UTF-8 and fails on anything else (invalid UTF-8 is
    the JSON parser's to refuse, with a 400 naming the offset).
    """
    event = app.current_event
    if event.is_base64_encoded:
        try:
            body = base64.b64decode(event.body or "", validate=True)
        except binascii.Error:
            raise ServiceError(400, c.ERR_INVALID_REQUEST, "body is not valid base64", "$") from None
    else:
        body = (event.body or "").encode("utf-8", "surrogatepass")
    if len(body) > limit:
        raise ServiceError(413, c.ERR_BODY_TOO_LARGE, f"{what} are limited to {limit} bytes{hint}", "$")
    return body


def _request(model: Any, limit: int) -> Any:
    """A small JSON request body validated by its contract model (an empty body is the model's defaults)."""
    from acx.contract.models import RequestError, parse_request
    from acx.core.bundle import safe_path
    from acx.core.canonical import CanonicalError, loads

    raw = _body_bytes(limit, "request bodies")
    doc: Any = None
    if raw.strip():
        try:
            doc = loads(raw)
        except CanonicalError as exc:
            raise ServiceError(400, c.ERR_INVALID_JSON, exc.message, safe_path(exc.path)) from None
        if not isinstance(doc, dict):
            raise ServiceError(422, c.ERR_INVALID_BODY, "request body must be a JSON object", "$")
    try:
        return parse_request(model, doc)
    except RequestError as exc:
        raise ServiceError(exc.status, exc.code, exc.message, safe_path(exc.path)) from None


@app.post("/v1/packages/<pkg>/uploads")
def post_upload(pkg: PkgPath, onForgotten: Annotated[str, Query(pattern=r"^(refuse|skip)$")] = "refuse"):
    from acx.contract.models import UploadRequest
    from acx.usecases.uploads import create_upload

    principal = _caller(c.SCOPE_WRITE, pkg)
    req = _request(UploadRequest, c.MAX_SMALL_BODY_BYTES)
    return _json(
        201,
        create_upload(
            _deps(), principal.tenant, pkg, principal.actor, req.size, onForgotten, principal.agent
        ),
    )


@app.get("/v1/packages/<pkg>/uploads")
def get_uploads(pkg: PkgPath, limit: Limit = c.LIST_DEFAULT_LIMIT, cursor: Cursor = None) -> dict[str, Any]:
    from acx.usecases.listing import list_uploads

    principal = _caller(c.SCOPE_WRITE, pkg)
    return list_uploads(_deps(), principal.tenant, pkg, limit, cursor)


@app.get("/v1/packages/<pkg>/uploads/<uploadId>")
def get_upload(
    pkg: PkgPath,
    uploadId: Annotated[str, Path(pattern=f"^{c.UPLOAD_ID_PATTERN}$")],
) -> dict[str, Any]:
    from acx.usecases.uploads import upload_status

    principal = _caller(c.SCOPE_WRITE, pkg)
    return upload_status(_deps(), principal.tenant, pkg, uploadId)


Trust = Annotated[str | None, Query(pattern=r"^(belief|candidate|any)$")]
AgentId = Annotated[str | None, Query(min_length=1, max_length=128)]
AsOf = Annotated[str | None, Query(max_length=64)]


@app.get("/v1/packages/<pkg>/memories")
def get_memories(
    pkg: PkgPath,
    tier: Annotated[str | None, Query(pattern=r"^(rom|save)$")] = None,
    tag: Annotated[str | None, Query(max_length=c.MAX_TAG)] = None,
    limit: Annotated[int, Query(ge=1, le=c.RECALL_MAX_LIMIT)] = c.RECALL_DEFAULT_LIMIT,
    cursor: Cursor = None,
    trust: Trust = None,
    agent: AgentId = None,
    asOf: AsOf = None,
):
    """A page as its stored canonical JSON (``Page.to_json``: records are not serialised again);
    with ``asOf``, the versions valid then (``usecases.versions``)."""
    from acx.usecases.recall import recall_page

    principal = _caller(c.SCOPE_READ, pkg)
    if asOf is not None:
        from acx.usecases.versions import list_as_of

        page = list_as_of(
            _deps(), principal.tenant, pkg, asOf, tier=tier, tag=tag, limit=limit, cursor=cursor
        )
    else:
        page = recall_page(
            _deps(),
            principal.tenant,
            pkg,
            tier=tier,
            tag=tag,
            limit=limit,
            cursor=cursor,
            trust=trust,
            agent=agent,
        )
    return Response(200, "application/json", page.to_json())


@app.get("/v1/packages/<pkg>/memories/search")
def search_memories(
    pkg: PkgPath,
    q: Annotated[str | None, Query()] = None,
    k: Annotated[str | None, Query()] = None,
    tier: Annotated[str | None, Query()] = None,
    tag: Annotated[str | None, Query()] = None,
    trust: Annotated[str | None, Query()] = None,
    agent: Annotated[str | None, Query()] = None,
    asOf: AsOf = None,
) -> dict[str, Any]:
    """Ranked hybrid search; the use case validates (limits named in the 400) and never logs ``q``."""
    from acx.usecases.search import parse_query, search

    principal = _caller(c.SCOPE_READ, pkg)
    query = parse_query(q, k, tier, tag, trust, agent)
    if asOf is not None:
        from acx.usecases.versions import search_as_of

        return search_as_of(_deps(), principal.tenant, pkg, query, asOf).model_dump(mode="json")
    return search(_deps(), principal.tenant, pkg, query).model_dump(mode="json")


RecordId = Annotated[str, Path(min_length=1, max_length=c.RECORD_ID_MAX)]


@app.get("/v1/packages/<pkg>/memories/<id>")
def get_memory(
    pkg: PkgPath, id: RecordId, asOf: AsOf = None, trust: Trust = None, agent: AgentId = None
) -> dict[str, Any]:
    from acx.usecases.recall import get_memory as one

    principal = _caller(c.SCOPE_READ, pkg)
    if asOf is not None:
        from acx.usecases.versions import get_as_of

        return get_as_of(_deps(), principal.tenant, pkg, id, asOf)
    return one(_deps(), principal.tenant, pkg, id, trust, agent)


@app.put("/v1/packages/<pkg>/memories/<id>")
def put_memory(pkg: PkgPath, id: RecordId) -> dict[str, Any]:
    """Update: a new version that supersedes the current one (``usecases.versions.update``)."""
    from acx.contract.models import UpdateRequest
    from acx.usecases.versions import update

    principal = _caller(c.SCOPE_WRITE, pkg)
    req = _request(UpdateRequest, c.MAX_UPDATE_BODY_BYTES)
    result = update(_deps(), principal.tenant, pkg, principal.actor, id, req.record, req.validFrom)
    logger.info("memory updated", extra={"package": pkg, "seq": result["seq"]})
    return result


@app.get("/v1/packages/<pkg>/memories/<id>/history")
def get_memory_history(pkg: PkgPath, id: RecordId) -> dict[str, Any]:
    from acx.usecases.versions import history

    principal = _caller(c.SCOPE_READ, pkg)
    return history(_deps(), principal.tenant, pkg, id)


@app.post("/v1/packages/<pkg>/memories/<id>/invalidate")
def post_invalidate(pkg: PkgPath, id: RecordId) -> dict[str, Any]:
    """End a memory's validity without erasing it (``usecases.versions.invalidate``)."""
    from acx.contract.models import InvalidateRequest
    from acx.usecases.versions import invalidate

    principal = _caller(c.SCOPE_WRITE, pkg)
    req = _request(InvalidateRequest, c.MAX_SMALL_BODY_BYTES)
    result = invalidate(_deps(), principal.tenant, pkg, principal.actor, id, req.reason, req.validUntil)
    logger.info("memory invalidated", extra={"package": pkg, "seq": result["seq"]})
    return result


@app.delete("/v1/packages/<pkg>/memories/<id>")
def delete_memory(pkg: PkgPath, id: RecordId) -> dict[str, Any]:
    from acx.usecases.forget import forget

    principal = _caller(c.SCOPE_FORGET, pkg)
    result = forget(_deps(), principal.tenant, pkg, principal.actor, record_id=id, agent=principal.agent)
    metrics.add_metric(name="RecordsForgotten", unit=MetricUnit.Count, value=1)
    return result


@app.delete("/v1/packages/<pkg>/memories")
def delete_memory_by_hash(
    pkg: PkgPath, contentHash: Annotated[str, Query(pattern=r"^[0-9a-f]{64}$")]
) -> dict[str, Any]:
    from acx.usecases.forget import forget

    principal = _caller("memory:forget", pkg)
    return forget(
        _deps(), principal.tenant, pkg, principal.actor, content_hash=contentHash, agent=principal.agent
    )


FileSegment = Annotated[str, Path(min_length=1, max_length=1024)]


def _forget_file(pkg: str, path: str | None, content_hash: str | None) -> dict[str, Any]:
    from urllib.parse import unquote

    from acx.usecases.forget import forget_file

    principal = _caller("memory:forget", pkg)
    result = forget_file(
        _deps(),
        principal.tenant,
        pkg,
        principal.actor,
        path=unquote(path) if path is not None else None,
        content_hash=content_hash,
    )
    metrics.add_metric(name="FilesForgotten", unit=MetricUnit.Count, value=0 if result["repeated"] else 1)
    return result


# A file path has at most three segments (knowledge/<name>.md, <name>.md, skills/<name>/SKILL.md);
# an URL-encoded path (knowledge%2Fa.md) arrives as one segment.
@app.delete("/v1/packages/<pkg>/files/<a>")
def delete_file(pkg: PkgPath, a: FileSegment) -> dict[str, Any]:
    return _forget_file(pkg, a, None)


@app.delete("/v1/packages/<pkg>/files/<a>/<b>")
def delete_file2(pkg: PkgPath, a: FileSegment, b: FileSegment) -> dict[str, Any]:
    return _forget_file(pkg, f"{a}/{b}", None)


@app.delete("/v1/packages/<pkg>/files/<a>/<b>/<c>")
def delete_file3(pkg: PkgPath, a: FileSegment, b: FileSegment, c: FileSegment) -> dict[str, Any]:
    return _forget_file(pkg, f"{a}/{b}/{c}", None)


@app.delete("/v1/packages/<pkg>/files")
def delete_file_by_hash(
    pkg: PkgPath, contentHash: Annotated[str, Query(pattern=r"^[0-9a-f]{64}$")]
) -> dict[str, Any]:
    return _forget_file(pkg, None, contentHash)


@app.post("/v1/packages/<pkg>/cartridges")
def post_cartridge(pkg: PkgPath):
    from acx.contract.models import ExportRequest
    from acx.usecases.cartridges import request_export

    principal = _caller(c.SCOPE_EXPORT, pkg)
    req = _request(ExportRequest, c.MAX_SMALL_BODY_BYTES)
    status, body = request_export(
        _deps(),
        principal.tenant,
        pkg,
        principal.actor,
        include_field_learned=req.includeFieldLearned,
        force_async=req.async_,
    )
    return _json(status, body)


@app.get("/v1/packages/<pkg>/cartridges")
def get_cartridges(
    pkg: PkgPath, limit: Limit = c.LIST_DEFAULT_LIMIT, cursor: Cursor = None
) -> dict[str, Any]:
    from acx.usecases.listing import list_cartridges

    principal = _caller(c.SCOPE_EXPORT, pkg)
    return list_cartridges(_deps(), principal.tenant, pkg, limit, cursor)


@app.get("/v1/packages/<pkg>/cartridges/<cartridgeId>")
def get_cartridge(
    pkg: PkgPath,
    cartridgeId: Annotated[str, Path(pattern=f"^{c.CARTRIDGE_ID_PATTERN}$")],
) -> dict[str, Any]:
    from acx.usecases.cartridges import download

    principal = _caller(c.SCOPE_EXPORT, pkg)
    return download(_deps(), principal.tenant, pkg, cartridgeId)


@app.get("/v1/packages/<pkg>/log")
def get_log(pkg: PkgPath) -> dict[str, Any]:
    from acx.usecases.logview import log_head

    principal = _caller(c.SCOPE_LOG, pkg)
    return log_head(_deps(), principal.tenant, pkg)


@app.get("/v1/packages/<pkg>/log/entries")
def get_log_entries(
    pkg: PkgPath,
    limit: Annotated[int, Query(ge=1, le=c.LOG_ENTRIES_MAX_LIMIT)] = c.LIST_DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> dict[str, Any]:
    from acx.usecases.listing import list_entries

    principal = _caller(c.SCOPE_LOG, pkg)
    return list_entries(_deps(), principal.tenant, pkg, limit, cursor)


@app.get("/v1/packages/<pkg>/log/verify")
def get_log_verify(pkg: PkgPath) -> dict[str, Any]:
    from acx.usecases.logview import verify

    principal = _caller(c.SCOPE_LOG, pkg)
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

    principal = _caller(c.SCOPE_LOG, pkg)
    return inclusion(_deps(), principal.tenant, pkg, index, size)


@app.get("/v1/packages/<pkg>/log/proof/consistency")
def get_consistency(
    pkg: PkgPath,
    first: Annotated[int, Query(alias="from", ge=1)],
    second: Annotated[int, Query(alias="to", ge=1)],
) -> dict[str, Any]:
    from acx.usecases.logview import consistency

    principal = _caller(c.SCOPE_LOG, pkg)
    return consistency(_deps(), principal.tenant, pkg, first, second)


@app.post("/v1/packages/<pkg>/lock")
def post_lock(pkg: PkgPath) -> dict[str, Any]:
    return _set_lock(pkg, locked=True)


@app.post("/v1/packages/<pkg>/unlock")
def post_unlock(pkg: PkgPath) -> dict[str, Any]:
    return _set_lock(pkg, locked=False)


def _set_lock(pkg: str, *, locked: bool) -> dict[str, Any]:
    from acx.contract.models import LockRequest
    from acx.usecases.locks import set_lock

    principal = _caller(c.SCOPE_ADMIN, pkg)
    req = _request(LockRequest, c.MAX_LOCK_BODY_BYTES)
    result = set_lock(_deps(), principal.tenant, pkg, principal.actor, locked, req.reason)
    logger.info(
        "package lock",
        extra={"package": pkg, "locked": locked, "changed": result["changed"], "log": result["log"]},
    )
    return result


@app.get("/v1/packages/<pkg>/policy")
def get_policy(pkg: PkgPath) -> dict[str, Any]:
    from acx.usecases.review import get_policy as policy

    principal = _caller(c.SCOPE_READ, pkg)
    return policy(_deps(), principal.tenant, pkg)


@app.put("/v1/packages/<pkg>/policy")
def put_policy(pkg: PkgPath) -> dict[str, Any]:
    from acx.contract.models import PolicyRequest
    from acx.usecases.review import set_policy

    principal = _caller(c.SCOPE_ADMIN, pkg)
    req = _request(PolicyRequest, c.MAX_LOCK_BODY_BYTES)
    result = set_policy(_deps(), principal.tenant, pkg, principal, req.review)
    logger.info("review policy", extra={"package": pkg, "review": req.review, "changed": result["changed"]})
    return result


@app.get("/v1/packages/<pkg>/review")
def get_review(pkg: PkgPath, limit: Limit = c.LIST_DEFAULT_LIMIT, cursor: Cursor = None) -> dict[str, Any]:
    from acx.usecases.review import review_queue

    principal = _caller(c.SCOPE_REVIEW, pkg)
    return review_queue(_deps(), principal.tenant, pkg, limit, cursor)


@app.post("/v1/packages/<pkg>/review/<id>")
def post_review(pkg: PkgPath, id: RecordId) -> dict[str, Any]:
    from acx.contract.models import ReviewDecision
    from acx.usecases.review import decide

    principal = _caller(c.SCOPE_REVIEW, pkg)
    req = _request(ReviewDecision, c.MAX_INLINE_BYTES)
    result = decide(_deps(), principal.tenant, pkg, principal, id, req.decision, req.record, req.seq)
    metrics.add_metric(name="ReviewDecisions", unit=MetricUnit.Count, value=1)
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
    if loc:
        message = f"{loc[-1]}: {message}"
    return _json(
        422 if first.get("loc", ("",))[0] == "body" else 400,
        {"error": {"code": c.ERR_INVALID_REQUEST, "message": message, "path": where}},
    )


@app.not_found
def on_not_found(_: NotFoundError) -> Response:
    return _json(
        404, {"error": {"code": c.ERR_NO_ROUTE, "message": "no such route; GET /v1/openapi.json lists them"}}
    )


@app.exception_handler(Exception)
def on_unexpected(exc: Exception) -> Response:
    from acx.adapters.faults import translate
    from acx.usecases.faults import classify

    status, code, message, retry_after = classify(translate(exc))
    logger.exception("unhandled error", extra={"error_type": type(exc).__name__})
    headers = {"Retry-After": str(retry_after)} if retry_after else {}
    return _json(status, {"error": {"code": code, "message": message}}, headers)


coldstart.init_done()


@metrics.log_metrics
@logger.inject_lambda_context(correlation_id_path="requestContext.requestId", log_event=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        with deadline.from_lambda_context(context):  # row writes retry throttling until time runs out
            return app.resolve(event, context)
    finally:
        coldstart.first_invocation_done()
