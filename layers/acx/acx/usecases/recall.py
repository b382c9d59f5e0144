"""Recall: a page of active records (or one by id), always with the advisory banner.

A page holds up to ``limit`` records (at most 1000) but stops early, after the record that takes its
JSON past :data:`PAGE_BYTES`, so an answer stays under Lambda's 6 MB response limit whatever the
records hold (3 MB plus one record); ``nextCursor`` continues right after the last record returned.
Rows are read in chunks of up to 1,000 (one or two DynamoDB Query pages of 1 MB): each read has a
fixed cost, and 100-row chunks made a full listing pay it ten times per page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from acx.contract import ADVISORY as ADVISORY_TEXT
from acx.contract import ERR_INVALID_CURSOR, ERR_INVALID_REQUEST, RECALL_MAX_LIMIT
from acx.core.package import PackageRef
from acx.core.records import ID_MAX_LENGTH, zone_for
from acx.core.rows import CorruptStore, ListedRecord
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found

ADVISORY = ADVISORY_TEXT  # one definition, in the contract
MAX_LIMIT = RECALL_MAX_LIMIT
#: JSON bytes after which a page stops (one record more stays well under 6 MB: a record's fields are
#: bounded by ``core.bundle.Limits``).
PAGE_BYTES = 3 * 1024 * 1024
READ_CHUNK = 1000


def _weight(canonical: bytes) -> int:
    """What a record counts against :data:`PAGE_BYTES`: its bytes in the answer (sent as stored), or
    three times that when they are not all ASCII. Lambda writes the handler's result as JSON with
    non-ASCII characters escaped, so a 2-byte UTF-8 character may take 6 bytes of the 6 MB response
    limit; the stored bytes are sent raw, where the old per-record ``json.dumps`` sent them escaped."""
    return len(canonical) if canonical.isascii() else 3 * len(canonical)


@dataclass(frozen=True)
class Page:
    """One page of a listing: the active records (each with its stored canonical JSON), the cursor
    that continues after the last of them, and whether the store reported corruption."""

    records: list[ListedRecord]
    next_cursor: str | None
    corrupt: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The answer as values (``contract.RecallPage``), for in-process callers."""
        try:
            records = [r.record for r in self.records]
        except CorruptStore:
            return {"advisory": ADVISORY, "corrupt": True, "records": [], "nextCursor": None}
        return {
            "advisory": ADVISORY,
            "corrupt": self.corrupt,
            "records": records,
            "nextCursor": self.next_cursor,
        }

    def to_json(self) -> str:
        """The answer's JSON, with each record's stored canonical bytes spliced in as they are: the
        same values as ``json.dumps(self.to_dict())`` (canonical JSON parses to the record it was made
        from), without parsing and serialising every record of the page again."""
        head = json.dumps({"advisory": ADVISORY, "corrupt": self.corrupt}, separators=(",", ":"))[:-1]
        records = b",".join(r.canonical for r in self.records).decode("utf-8")
        cursor = json.dumps(self.next_cursor)
        return f'{head},"records":[{records}],"nextCursor":{cursor}}}'


def recall(
    deps: Deps,
    tenant: str,
    package: str,
    *,
    tier: str | None = None,
    tag: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    """:func:`recall_page` as values (the MCP server and in-process callers)."""
    return recall_page(deps, tenant, package, tier=tier, tag=tag, limit=limit, cursor=cursor).to_dict()


def recall_page(
    deps: Deps,
    tenant: str,
    package: str,
    *,
    tier: str | None = None,
    tag: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Page:
    if tier not in (None, "rom", "save"):
        raise ServiceError(400, ERR_INVALID_REQUEST, "tier must be rom or save", "$.tier")
    if not 1 <= limit <= MAX_LIMIT:
        raise ServiceError(400, ERR_INVALID_REQUEST, f"limit must be between 1 and {MAX_LIMIT}", "$.limit")

    ref = PackageRef(tenant, package)
    if not deps.log.package_exists(ref):
        raise not_found()
    records: list[ListedRecord] = []
    used = 0
    try:
        while True:
            rows, cursor = deps.log.list_active(
                ref, zone=tier, tag=tag, limit=min(READ_CHUNK, limit - len(records)), cursor=cursor
            )
            for i, row in enumerate(rows):
                records.append(row)
                used += _weight(row.canonical)
                if used >= PAGE_BYTES and i < len(rows) - 1:  # full inside the chunk: stop after it
                    cursor = deps.log.cursor_after(row)
                    break
            if cursor is None or len(records) >= limit or used >= PAGE_BYTES:
                break
    except CorruptStore:
        return Page([], None, corrupt=True)
    except ValueError:
        raise ServiceError(
            400, ERR_INVALID_CURSOR, "cursor is not one this service issued", "$.cursor"
        ) from None
    return Page(records, cursor)


def get_memory(deps: Deps, tenant: str, package: str, record_id: str) -> dict[str, Any]:
    """One active memory by id, with its zone, content hash and log seq; 404 when absent or forgotten."""
    if not record_id or len(record_id) > ID_MAX_LENGTH:
        raise ServiceError(400, ERR_INVALID_REQUEST, f"id must be 1-{ID_MAX_LENGTH} characters", "$.id")

    ref = PackageRef(tenant, package)
    if not deps.log.package_exists(ref):
        raise not_found()
    row = deps.log.record(ref, record_id)
    if row is None or not row.active or row.record is None:
        raise not_found("memory")
    return {
        "advisory": ADVISORY,
        "record": row.record,
        "zone": row.zone or zone_for(row.record.get("portable")),
        "contentHash": row.content_hash,
        "seq": row.seq,
    }
