"""Request and response models of the API, declared once with pydantic.

The handler validates request bodies with the request models, the OpenAPI document's bodies and
responses are generated from all of them (and from :data:`ROUTES`), and the CLI reads the keys it
prints from the response models, so neither side can name a key the other never sends.
Response models allow extra keys only where an open map is documented (``extra="forbid"`` elsewhere,
so a test validating real answers against them fails on an undeclared key).

One module: declarations only (one model per body, the route table), read as a list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from acx import contract as c


# defer_build on every model: a model's validator and serializer are built at its first use, not at
# import. Importing this module built all of them (~0.06 s CPU) for a route that uses two or three
# (a search: its response models); the schemas, and so the OpenAPI document, are the same.
class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


# --- requests --------------------------------------------------------------------------------------


class UploadRequest(_Closed):
    """``POST .../uploads``: the size the client will PUT (enforced at ingest) and the content type."""

    size: Annotated[StrictInt, Field(ge=1, le=c.MAX_UPLOAD_BYTES)] | None = None
    contentType: Literal["application/json"] = "application/json"


class ExportRequest(_Closed):
    """``POST .../cartridges``."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    includeFieldLearned: StrictBool = False
    async_: StrictBool = Field(default=False, alias="async")


class LockRequest(_Closed):
    """``POST .../lock`` and ``.../unlock``: the reason is hashed into the log entry, never stored."""

    reason: Annotated[StrictStr, Field(max_length=c.MAX_LOCK_REASON)] | None = None


class UpdateRequest(_Closed):
    """``PUT .../memories/{id}``: the full corrected record (same id) and when it became true
    (default: the entry's record time). The record itself is checked by the use case, which names
    every problem."""

    record: dict[str, Any]
    validFrom: StrictStr | None = None


class InvalidateRequest(_Closed):
    """``POST .../memories/{id}/invalidate``: why (scrubbed; the entry holds only its hash) and when
    the memory stopped being true (default: the entry's record time)."""

    reason: Annotated[StrictStr, Field(min_length=1, max_length=c.MAX_REASON)]
    validUntil: StrictStr | None = None


class TokenRequest(_Closed):
    """``POST /local/token`` (local stack only)."""

    tenant: Annotated[StrictStr, Field(pattern=f"^{c.TENANT_ID_PATTERN}$")]
    scopes: list[Literal[c.SCOPES]] = Field(default_factory=lambda: list(c.SCOPES))  # type: ignore[valid-type]
    ttl: Annotated[StrictInt, Field(ge=1, le=86400)] = 3600
    sub: Annotated[StrictStr, Field(min_length=1, max_length=128)] = "dev"
    agent: Annotated[StrictStr, Field(min_length=1, max_length=128)] | None = None  # claim agent_id


class PolicyRequest(_Closed):
    """``PUT .../policy``: how memories enter (``none``: as beliefs; ``required``: as candidates)."""

    review: Literal["none", "required"]


class ReviewDecision(_Closed):
    """``POST .../review/{id}``: ``edit`` carries the corrected record (a supersession, then approved);
    ``seq`` (optional): the candidate's seq the reviewer saw (its queue item's), refused with 409 when
    the candidate has moved on since."""

    decision: Literal["approve", "reject", "edit"]
    record: dict[str, Any] | None = None
    seq: StrictInt | None = None


def parse_request(model: type[BaseModel], doc: Any) -> Any:
    """Validate ``doc`` against ``model``; :class:`RequestError` names the JSON path, never the value."""
    try:
        return model.model_validate(doc if doc is not None else {})
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        loc = [str(p) for p in first.get("loc", ())]
        where = "$" + "".join(f".{p}" if p.isidentifier() and len(p) <= 64 else "" for p in loc)
        kind = str(first.get("type", ""))
        fields = ", ".join(sorted(model.model_json_schema(by_alias=True).get("properties", {})))
        if kind == "extra_forbidden":
            raise RequestError(422, c.ERR_UNKNOWN_FIELD, f"unknown field (known: {fields})", where) from None
        code = (
            c.ERR_TOO_LONG
            if kind.endswith("too_long")
            else c.ERR_INVALID_TYPE
            if kind.endswith("_type") or kind.endswith("_parsing")
            else c.ERR_INVALID_REQUEST
        )
        raise RequestError(422, code, f"{where}: {first.get('msg', 'invalid value')}", where) from None


class RequestError(ValueError):
    """A refused request body: status, code, message and JSON path (the handler maps it 1:1)."""

    def __init__(self, status: int, code: str, message: str, path: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.path = status, code, message, path


# --- responses -------------------------------------------------------------------------------------


class ErrorDetail(_Closed):
    code: StrictStr
    message: StrictStr
    path: StrictStr | None = None


class ErrorResponse(BaseModel):
    """The one error shape. Refusals may add context: ``report`` (scrub/validation findings),
    ``tombstones``, ``cartridgeId``, ``scope`` (the missing one, on 403)."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    error: ErrorDetail


class LogRange(_Closed):
    fromSeq: StrictInt | None
    toSeq: StrictInt | None


class Health(_Closed):
    status: Literal["ok"]


# --- search (GET .../memories/search; usecases/search.py fills them) ---------------------------------


# Declared in acx.contract.search (a search imports only those); the same classes, re-exported.
from acx.contract.search import LexicalSignal, SearchResponse, SearchResult, Signal, Signals  # noqa: E402, F401


class ForgottenHit(_Closed):
    """A record a tombstone refused (or skipped): its index and id, never its text."""

    index: StrictInt
    id: StrictStr
    rule: Literal["exact", "near", "id"]
    forgetSeq: StrictInt | None


class KeptField(_Closed):
    """A field of a same-id upload that the merge did not take (it kept the stored value), and why:
    the reason names ``PUT .../memories/{id}``, the route that corrects a memory."""

    id: StrictStr
    field: StrictStr
    reason: StrictStr


class IngestSummary(_Closed):
    accepted: StrictInt
    merged: StrictInt
    unchanged: StrictInt
    refused: StrictInt
    log: LogRange
    checkpoint: StrictStr | None
    bundle: StrictStr | None
    skipped: list[ForgottenHit] = []
    kept: list[KeptField] = []


class UploadCreated(_Closed):
    uploadId: StrictStr
    url: StrictStr
    method: Literal["PUT"]
    headers: dict[str, str]
    expiresIn: StrictInt
    expiresAt: StrictInt
    maxBytes: StrictInt
    declaredSize: StrictInt | None = None
    onForgotten: Literal["refuse", "skip"] = "refuse"


class UploadStatus(_Closed):
    uploadId: StrictStr
    status: Literal["pending", "ingested", "rejected"]
    createdAt: StrictInt | None = None
    declaredSize: StrictInt | None = None
    onForgotten: Literal["refuse", "skip"] = "refuse"
    summary: IngestSummary | None = None
    report: dict[str, Any] | None = None
    error: ErrorDetail | None = None
    forgotten: list[ForgottenHit] | None = None  # rejected with 409 forgotten: the refused records
    forgottenFiles: list[StrictStr] | None = None


class UploadList(_Closed):
    uploads: list[UploadStatus]
    nextCursor: StrictStr | None


class Author(_Closed):
    actor: StrictStr
    agent: StrictStr | None = None


class RecordMeta(_Closed):
    id: StrictStr
    trust: Literal["candidate", "belief"]
    author: Author


class RecallPage(_Closed):
    advisory: StrictStr
    corrupt: StrictBool
    records: list[dict[str, Any]]
    meta: list[RecordMeta] = Field(default=[], description="per record, same order: id, trust, author")
    nextCursor: StrictStr | None


class Memory(_Closed):
    advisory: StrictStr
    record: dict[str, Any]
    zone: Literal["rom", "save"]
    contentHash: StrictStr
    seq: StrictInt | None
    trust: Literal["candidate", "belief"] = "belief"
    author: Author | None = None
    reviewer: StrictStr | None = None


class CoveredEntry(_Closed):
    seq: StrictInt
    hash: StrictStr


class UpdateResult(_Closed):
    id: StrictStr
    seq: StrictInt
    supersedes: CoveredEntry
    validFrom: StrictStr


class InvalidateResult(_Closed):
    id: StrictStr
    seq: StrictInt
    validUntil: StrictStr


class MemoryVersion(_Closed):
    """One version of a memory: ``seq`` the entry whose content it holds, ``operation`` what began it
    (remember | supersede), ``record`` null once forgotten, valid time (``validUntil`` null: still
    valid) and record time (``recordedAt``: when the log learned it), and who wrote it."""

    seq: StrictInt
    operation: Literal["remember", "supersede"]
    record: dict[str, Any] | None
    validFrom: StrictStr
    validUntil: StrictStr | None
    recordedAt: StrictStr
    actor: StrictStr


class MemoryHistory(_Closed):
    id: StrictStr
    versions: list[MemoryVersion]


class ForgetResult(_Closed):
    forgotten: StrictStr | None
    alsoForgotten: list[StrictStr] = []
    contentHash: StrictStr | None
    log: LogRange
    checkpoint: StrictStr | None
    repeated: StrictBool = False
    bundlesRewritten: StrictInt
    revokedCartridges: list[StrictStr]


class FileForgetResult(_Closed):
    forgottenFile: StrictStr
    contentHash: StrictStr | None
    log: LogRange
    checkpoint: StrictStr | None
    repeated: StrictBool
    bundlesRewritten: StrictInt
    revokedCartridges: list[StrictStr]


class CartridgeStatus(BaseModel):
    """An export job; ``url`` and its expiry only while ready."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    cartridgeId: StrictStr
    status: Literal["pending", "ready", "failed", "revoked", "rejected"]
    createdAt: StrictInt | None = None
    manifestHash: StrictStr | None = None
    keyid: StrictStr | None = None
    counts: dict[str, Any] | None = None
    quarantined: StrictInt | None = None
    fieldLearned: StrictStr | None = None
    bytes: StrictInt | None = None
    report: Any = None
    revokedReason: StrictStr | None = None
    error: ErrorDetail | None = None
    url: StrictStr | None = None
    expiresIn: StrictInt | None = None
    expiresAt: StrictInt | None = None


class CartridgeList(_Closed):
    cartridges: list[CartridgeStatus]
    nextCursor: StrictStr | None


class PackageSummary(_Closed):
    package: StrictStr
    records: StrictInt
    logSize: StrictInt
    lastCheckpoint: StrictStr | None
    locked: StrictBool


class PackageList(_Closed):
    packages: list[PackageSummary]
    nextCursor: StrictStr | None


class LogHead(_Closed):
    size: StrictInt
    checkpoint: StrictStr | None
    verifierKey: StrictStr


class LogEntry(_Closed):
    seq: StrictInt
    operation: StrictStr
    tier: StrictStr | None
    recordId: StrictStr | None
    contentHash: StrictStr | None
    hash: StrictStr
    prevHash: StrictStr
    time: StrictStr | None
    actor: StrictStr | None = None
    agent: StrictStr | None = None
    trust: StrictStr | None = None
    decision: StrictStr | None = None
    covers: dict[str, Any] | None = None


class LogEntryList(_Closed):
    entries: list[LogEntry]
    nextCursor: StrictStr | None


class LogVerifyResult(_Closed):
    tenant: StrictStr
    package: StrictStr
    status: Literal["ok", "broken", "unverifiable", "corrupt"]
    size: StrictInt
    checked: StrictInt
    rows: StrictInt
    firstBadSeq: StrictInt | None
    reason: StrictStr | None
    detail: StrictStr | None
    orphans: list[Any]
    orphanCount: StrictInt
    checkpointSize: StrictInt | None
    witnessSize: StrictInt | None
    incremental: StrictBool
    seconds: float


class InclusionProof(_Closed):
    index: StrictInt
    size: StrictInt
    leafHash: StrictStr
    proof: list[StrictStr]


class ConsistencyProof(_Closed):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    from_: StrictInt = Field(alias="from")
    to: StrictInt
    proof: list[StrictStr]


class LockResult(_Closed):
    locked: StrictBool
    changed: StrictBool
    contentHash: StrictStr | None = None
    log: LogRange
    checkpoint: StrictStr | None


class Policy(_Closed):
    review: Literal["none", "required"]
    changed: StrictBool | None = None
    log: LogRange | None = None
    checkpoint: StrictStr | None = None


class NearBelief(_Closed):
    id: StrictStr
    title: StrictStr


class ReviewItem(_Closed):
    id: StrictStr
    record: dict[str, Any]
    author: Author
    recordedAt: StrictStr | None
    seq: StrictInt
    source: dict[str, Any]
    nearBelief: NearBelief | None


class ReviewQueue(_Closed):
    policy: Literal["none", "required"]
    items: list[ReviewItem]
    cursor: StrictStr | None


class ReviewResult(_Closed):
    id: StrictStr
    decision: Literal["approve", "reject", "edit"]
    seq: StrictInt
    reviewer: Author
    checkpoint: StrictStr | None
    forget: ForgetResult | None = None
    supersedes: CoveredEntry | None = None  # edit: the candidate's entry the corrected version supersedes
    approvedSeq: StrictInt | None = None  # edit: the review entry (``seq`` is the supersede's)


class TrustRegistry(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    schemaVersion: Literal["acx.trust-registry/1"]
    keys: list[dict[str, Any]]


class ConsoleFile(RootModel[str]):
    """A web console file (``GET /console``, ``/console/{asset}``): HTML, JavaScript or CSS text."""

    model_config = ConfigDict(defer_build=True)


class OpenAPIDocument(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    openapi: StrictStr


class Token(_Closed):
    token: StrictStr
    expiresAt: StrictStr
    tenant: StrictStr
    scopes: list[StrictStr]


def keys_of(model: type[BaseModel]) -> tuple[str, ...]:
    """The JSON keys a response model declares (aliases, as sent)."""
    return tuple(f.alias or name for name, f in model.model_fields.items())


# --- routes ----------------------------------------------------------------------------------------

#: Error statuses every authorized route can answer (gateway 401/403, handler 400 on ids, 404,
#: 413 from the gateway's payload limit, 503 when a backing service is busy).
_AUTH_ERRORS = (400, 401, 403, 404, 413, 503)


@dataclass(frozen=True)
class RouteSpec:
    """One route: method, path (API Gateway template), scope (None = public), success status and body
    model, the request body model, and every error status it can answer."""

    method: str
    path: str
    scope: str | None
    ok: tuple[tuple[int, type[BaseModel]], ...]
    errors: tuple[int, ...] = _AUTH_ERRORS
    body: type[BaseModel] | None = None
    body_ref: str | None = None  # a schema in components (the bundle)
    media: tuple[str, ...] = ("application/json",)  # the success body's content types

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"


_P = "/v1/packages/{pkg}"
_FORGET_ERRORS = (*_AUTH_ERRORS, 409, 423)
ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", "/v1/health", None, ((200, Health),), ()),
    RouteSpec("GET", "/v1/openapi.json", None, ((200, OpenAPIDocument),), ()),
    RouteSpec("GET", "/v1/trust-registry", None, ((200, TrustRegistry),), (503,)),
    RouteSpec("GET", "/console", None, ((200, ConsoleFile),), (), media=("text/html",)),
    RouteSpec(
        "GET", "/console/{asset}", None, ((200, ConsoleFile),), (404,), media=("text/javascript", "text/css")
    ),
    RouteSpec("GET", "/v1/packages", c.SCOPE_READ, ((200, PackageList),), (400, 401, 403, 413, 503)),
    RouteSpec(
        "POST",
        f"{_P}/bundles",
        c.SCOPE_WRITE,
        ((201, IngestSummary),),
        (*_AUTH_ERRORS, 409, 422, 423),
        body_ref="AcxMemoryBundle",
    ),
    RouteSpec(
        "POST",
        f"{_P}/uploads",
        c.SCOPE_WRITE,
        ((201, UploadCreated),),
        (*_AUTH_ERRORS, 422, 423),
        UploadRequest,
    ),
    RouteSpec("GET", f"{_P}/uploads", c.SCOPE_WRITE, ((200, UploadList),)),
    RouteSpec("GET", f"{_P}/uploads/{{uploadId}}", c.SCOPE_WRITE, ((200, UploadStatus),)),
    RouteSpec("GET", f"{_P}/memories", c.SCOPE_READ, ((200, RecallPage),)),
    RouteSpec("GET", f"{_P}/memories/search", c.SCOPE_READ, ((200, SearchResponse),)),
    RouteSpec("GET", f"{_P}/memories/{{id}}", c.SCOPE_READ, ((200, Memory),)),
    RouteSpec(
        "PUT",
        f"{_P}/memories/{{id}}",
        c.SCOPE_WRITE,
        ((200, UpdateResult),),
        (*_AUTH_ERRORS, 409, 422, 423),
        UpdateRequest,
    ),
    RouteSpec("GET", f"{_P}/memories/{{id}}/history", c.SCOPE_READ, ((200, MemoryHistory),)),
    RouteSpec(
        "POST",
        f"{_P}/memories/{{id}}/invalidate",
        c.SCOPE_WRITE,
        ((200, InvalidateResult),),
        (*_AUTH_ERRORS, 409, 422, 423),
        InvalidateRequest,
    ),
    RouteSpec(
        "DELETE", f"{_P}/memories/{{id}}", c.SCOPE_FORGET, ((200, ForgetResult),), (*_AUTH_ERRORS, 409, 423)
    ),
    RouteSpec("DELETE", f"{_P}/memories", c.SCOPE_FORGET, ((200, ForgetResult),), (*_AUTH_ERRORS, 409, 423)),
    RouteSpec(
        "DELETE",
        f"{_P}/files/{{path+}}",
        c.SCOPE_FORGET,
        ((200, FileForgetResult),),
        (*_AUTH_ERRORS, 409, 423),
    ),
    RouteSpec("DELETE", f"{_P}/files", c.SCOPE_FORGET, ((200, FileForgetResult),), (*_AUTH_ERRORS, 409, 423)),
    RouteSpec(
        "POST",
        f"{_P}/cartridges",
        c.SCOPE_EXPORT,
        ((201, CartridgeStatus), (202, CartridgeStatus)),
        (*_AUTH_ERRORS, 422, 423),
        ExportRequest,
    ),
    RouteSpec("GET", f"{_P}/cartridges", c.SCOPE_EXPORT, ((200, CartridgeList),)),
    RouteSpec(
        "GET",
        f"{_P}/cartridges/{{cartridgeId}}",
        c.SCOPE_EXPORT,
        ((200, CartridgeStatus),),
        (*_AUTH_ERRORS, 410),
    ),
    RouteSpec("GET", f"{_P}/log", c.SCOPE_LOG, ((200, LogHead),)),
    RouteSpec("GET", f"{_P}/log/entries", c.SCOPE_LOG, ((200, LogEntryList),)),
    RouteSpec("GET", f"{_P}/log/verify", c.SCOPE_LOG, ((200, LogVerifyResult),)),
    RouteSpec("GET", f"{_P}/log/proof/inclusion", c.SCOPE_LOG, ((200, InclusionProof),)),
    RouteSpec("GET", f"{_P}/log/proof/consistency", c.SCOPE_LOG, ((200, ConsistencyProof),)),
    RouteSpec("POST", f"{_P}/lock", c.SCOPE_ADMIN, ((200, LockResult),), (*_AUTH_ERRORS, 422), LockRequest),
    RouteSpec("POST", f"{_P}/unlock", c.SCOPE_ADMIN, ((200, LockResult),), (*_AUTH_ERRORS, 422), LockRequest),
    RouteSpec("GET", f"{_P}/policy", c.SCOPE_READ, ((200, Policy),)),
    RouteSpec(
        "PUT", f"{_P}/policy", c.SCOPE_ADMIN, ((200, Policy),), (*_AUTH_ERRORS, 422, 423), PolicyRequest
    ),
    RouteSpec("GET", f"{_P}/review", c.SCOPE_REVIEW, ((200, ReviewQueue),)),
    RouteSpec(
        "POST",
        f"{_P}/review/{{id}}",
        c.SCOPE_REVIEW,
        ((200, ReviewResult),),
        (*_AUTH_ERRORS, 409, 422, 423),
        ReviewDecision,
    ),
)

#: Every status an answer can have, for the OpenAPI document's descriptions.
STATUS_TEXT: dict[int, str] = {
    200: "OK",
    201: "Created",
    202: "Accepted: the job runs asynchronously",
    400: "Invalid parameter, header or cursor",
    401: "Missing, malformed, foreign or expired token",
    403: "The token lacks the route's scope (named in the message)",
    404: "No such package, record or job in the caller's tenant (or no such route)",
    409: "Conflict: forgotten content (or a forgotten memory to update), content that is already another "
    "memory, or a request with this Idempotency-Key is in progress",
    410: "Revoked",
    413: "Body over the limit",
    422: "Invalid body (path and limit named), or blocked by the scrub gate (with report)",
    423: "Package locked by an operator",
    503: "A backing service is busy; retry after Retry-After",
}
