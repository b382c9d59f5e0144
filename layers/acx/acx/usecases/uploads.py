"""Large bundles: a presigned PUT to uploads/, then S3 -> SQS -> the ingest function.

The URL is bound to one key and one content type and expires in at most 15 minutes; S3 cannot cap
the size of a presigned PUT, so the size limit, and the size the client declared when it asked for
the URL, are enforced at ingest (and the object deleted). A client that declares the size it then
sends passes; one that sends more or less than it declared is refused (``size_mismatch``).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from acx.contract import ERR_BODY_TOO_LARGE, ERR_SIZE_MISMATCH, MAX_UPLOAD_BYTES
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.locks import require_unlocked

CONTENT_TYPE = "application/json"


def upload_key(tenant: str, package: str, upload_id: str) -> str:
    return f"uploads/{tenant}/{package}/{upload_id}.json"


def parse_upload_key(key: str) -> tuple[str, str, str] | None:
    parts = key.split("/")
    if len(parts) != 4 or parts[0] != "uploads" or not parts[3].endswith(".json"):
        return None
    return parts[1], parts[2], parts[3][: -len(".json")]


def create_upload(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    size: int | None,
    on_forgotten: str = "refuse",
    agent: str | None = None,
) -> dict[str, Any]:
    """Issue a presigned PUT; ``on_forgotten`` (refuse | skip) is kept with the job and applied at
    ingest, as ``?onForgotten=`` is for an inline bundle (skipped records are listed in the status)."""
    from acx.usecases.ingest import check_on_forgotten

    check_on_forgotten(on_forgotten)
    if size is not None and not 0 < size <= MAX_UPLOAD_BYTES:
        raise ServiceError(
            413, ERR_BODY_TOO_LARGE, f"bundle uploads are limited to {MAX_UPLOAD_BYTES} bytes", "$.size"
        )

    require_unlocked(deps, tenant, package)  # before any URL is issued
    upload_id = uuid.uuid4().hex
    ttl = deps.settings.upload_url_ttl
    deps.jobs.create(
        tenant,
        package,
        "upload",
        upload_id,
        actor=actor,
        declaredSize=size,
        onForgotten=on_forgotten,
        agent=agent,  # the ingest writes as this agent (None: the token carried none)
    )
    url = deps.uploads.presign_put(upload_key(tenant, package, upload_id), CONTENT_TYPE, ttl)
    return {
        "uploadId": upload_id,
        "url": url.url,
        "method": "PUT",
        "headers": url.headers,
        "expiresIn": ttl,
        "expiresAt": int(time.time()) + ttl,
        "maxBytes": MAX_UPLOAD_BYTES,
        "declaredSize": size,
        "onForgotten": on_forgotten,
    }


def describe_upload(job: dict[str, Any]) -> dict[str, Any]:
    """The API view of an upload job (no actor, no storage key)."""
    out: dict[str, Any] = {
        "uploadId": job["jobId"],
        "status": job["status"],
        "createdAt": job.get("createdAt"),
        "declaredSize": job.get("declaredSize"),
        "onForgotten": job.get("onForgotten", "refuse"),
    }
    for field in ("summary", "report", "error", "forgotten", "forgottenFiles"):
        if job.get(field) is not None:
            out[field] = job[field]
    return out


def upload_status(deps: Deps, tenant: str, package: str, upload_id: str) -> dict[str, Any]:
    job = deps.jobs.get(tenant, package, "upload", upload_id)
    if job is None:
        raise not_found("upload")
    return describe_upload(job)


def ingest_upload(deps: Deps, key: str) -> str:
    """Process one uploaded object; returns the job's final status. The raw upload is always deleted.

    A redelivered message for a finished job does nothing (the job status is the idempotency key).
    """
    # lazy: the api's create/get upload routes import this module without the ingest pipeline (~60 ms CPU)
    from acx.usecases.ingest import ingest_bundle

    parsed = parse_upload_key(key)
    if parsed is None:
        deps.uploads.delete(key)
        return "ignored"
    tenant, package, upload_id = parsed
    job = deps.jobs.get(tenant, package, "upload", upload_id)
    if job is None or job["status"] != "pending":
        deps.uploads.delete(key)
        return "ignored" if job is None else job["status"]
    try:
        size = deps.uploads.size(key)
        if size is None:
            return "pending"  # already processed and deleted by an earlier delivery
        if size > MAX_UPLOAD_BYTES:
            raise ServiceError(
                413, ERR_BODY_TOO_LARGE, f"bundle uploads are limited to {MAX_UPLOAD_BYTES} bytes"
            )
        declared = job.get("declaredSize")
        if isinstance(declared, int) and size != declared:
            raise ServiceError(
                422,
                ERR_SIZE_MISMATCH,
                f"the upload is {size} bytes but {declared} were declared in POST .../uploads",
                "$.size",
            )
        summary = ingest_bundle(
            deps,
            tenant,
            package,
            job.get("actor", "unknown"),
            deps.uploads.chunks(key),
            max_bytes=MAX_UPLOAD_BYTES,
            on_forgotten=job.get("onForgotten", "refuse"),
            agent=job.get("agent"),
        )
    except ServiceError as exc:
        if exc.status >= 500:
            raise  # retryable: SQS redelivers, then the DLQ
        deps.jobs.finish(
            tenant,
            package,
            "upload",
            upload_id,
            "rejected",
            error=exc.body()["error"],
            report=exc.extra.get("report"),
            forgotten=exc.extra.get("forgotten"),  # 409: each refused record by index, id and rule
            forgottenFiles=exc.extra.get("forgottenFiles"),
        )
        deps.uploads.delete(key)
        return "rejected"
    deps.jobs.finish(tenant, package, "upload", upload_id, "ingested", summary=summary.to_dict())
    deps.uploads.delete(key)
    return "ingested"
