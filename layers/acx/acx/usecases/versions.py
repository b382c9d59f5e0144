"""Memories that change: update (supersede), invalidate, history, and as-of reads (invariant 11).

An update writes a new version that supersedes the current one through the log's one commit, like
any write: receipt first, its entry covering the superseded entry, checkpointed, verified. The old
version stays in the log and in the store (``v#<id>#<seq>``) for history and as-of reads, and leaves
default reads, search and new cartridges as soon as the update answers. Supersession is not forget:
no tombstone is filed, so the correction is never refused by the version it replaces; a memory that
was forgotten stays forgotten, and an update of it is refused (409) in words an agent can act on.

Valid time and as-of: see :mod:`acx.core.versions` (as of T = valid time as the log holds it now).
History and as-of reads derive versions from the package's log entries (the receipts: O(log), read
~1,500 entries per item), and bodies from the current rows and the ended versions.
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from acx.contract import ADVISORY, ERR_INVALID_CURSOR, ERR_INVALID_REQUEST, RECALL_MAX_LIMIT
from acx.core import forgetting
from acx.core import versions as core
from acx.core.bundle import BundleError, Limits, _check_record
from acx.core.canonical import dumps_record, sha256_hex
from acx.core.fingerprint import artifact_fingerprint
from acx.core.merge import slot_keys
from acx.core.package import PackageRef
from acx.core.records import ID_MAX_LENGTH, zone_for, zone_of
from acx.core.review import DEFAULT_POLICY, entry_state
from acx.core.rows import Conflict, Forgotten, ListedRecord, LogRow, RecordWrite
from acx.core.scrub import scan_bundle
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.locks import require_unlocked

MAX_CONFLICT_RETRIES = 8
ERR_FORGOTTEN = "forgotten"
ERR_DUPLICATE = "duplicate"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _ref(deps: Deps, tenant: str, package: str, record_id: str) -> PackageRef:
    if not record_id or len(record_id) > ID_MAX_LENGTH:
        raise ServiceError(400, ERR_INVALID_REQUEST, f"id must be 1-{ID_MAX_LENGTH} characters", "$.id")
    ref = PackageRef(tenant, package)
    if not deps.log.package_exists(ref):
        raise not_found()
    return ref


def _invalid(problems: list[dict[str, str]]) -> ServiceError:
    first = problems[0]
    return ServiceError(
        422,
        first.get("code", "invalid_record"),
        "; ".join(f"{p['path']}: {p['message']}" for p in problems),
        first["path"],
        extra={"report": {"problems": problems}},
    )


def _forgotten_memory(record_id: str) -> ServiceError:
    return ServiceError(
        409,
        ERR_FORGOTTEN,
        f"memory {record_id} was forgotten and cannot be updated: a forgotten memory stays forgotten. "
        "Remember it anew (POST .../bundles, a new id) only if it is different knowledge",
    )


def _row(deps: Deps, ref: PackageRef, record_id: str) -> LogRow:
    """The memory's row while it is current: 404 when there is none (or its validity ended), 409 when
    it was forgotten."""
    row = deps.log.record(ref, record_id)
    if row is not None and row.forgotten:
        raise _forgotten_memory(record_id)
    if row is None or not row.active or row.record is None:
        raise ServiceError(404, "not_found", f"no current memory with id {record_id}")
    return row


def _current_version(deps: Deps, ref: PackageRef, row: LogRow) -> core.Version:
    """The open version of a memory, from its entries (read only when a caller gives a valid time)."""
    history = core.versions(e for e in deps.log.entries(ref) if core.memory_id(e) == row.id)
    current = next((v for v in reversed(history) if v.current), None)
    if current is None or current.seq != row.seq:
        raise Conflict("the memory changed since it was read")
    return current


def _created_at(deps: Deps, ref: PackageRef, seq: int) -> str:
    entry = next(iter(deps.log.entries(ref, seq, seq + 1)), None)
    return str(entry.payload["createdAt"]) if entry is not None else _now()


def _retry(attempt: int) -> None:
    time.sleep(random.uniform(0, 0.02 * 2**attempt))


def _contention() -> ServiceError:
    return ServiceError(
        503, "contention", "too many concurrent writers on this memory; retry", headers={"Retry-After": "1"}
    )


def _gate(records: list[dict[str, Any]], files: Sequence[tuple[str, str]] = ()) -> None:
    """The scrub gate over what a request would write (or hash into the chain): 422 naming where."""
    report = scan_bundle(records, files)
    if report.blocked:
        raise ServiceError(
            422,
            "blocked",
            f"the scrub gate blocked the request: {len(report.findings)} finding(s)",
            extra={"report": report.to_dict()},
        )


# ---- update -----------------------------------------------------------------------------------


def _record_problems(record: Any) -> list[dict[str, str]]:
    """Every problem the declarative record model finds (``validate_record`` stops at the first), so a
    caller fixes its record in one round; paths are cut before any key that may be a secret."""
    from pydantic import ValidationError

    from acx.core import records
    from acx.core.bundle import safe_path

    try:
        records.__getattr__("MemoryRecord").model_validate(record)
    except ValidationError as exc:
        out = []
        for err in exc.errors(include_input=False, include_url=False):
            path = "$.record" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
            out.append({"path": safe_path(path), "message": str(err["msg"])})
        return out
    return []


def check_correction(record: Any, record_id: str, valid_from: str | None = None) -> dict[str, Any]:
    """A corrected record as any write is checked: every problem of the record (and of ``valid_from``)
    named in one 422, then the scrub gate (422 ``blocked``); the record with its artifactFingerprint."""
    problems: list[dict[str, str]] = []
    try:
        _check_record(record, "$.record", Limits())
    except BundleError as exc:
        problems.append({"path": exc.path, "message": exc.message, "code": exc.code})
        problems += [p for p in _record_problems(record) if p["path"] != exc.path]
    if isinstance(record, dict) and record.get("id") != record_id:
        problems.append({"path": "$.record.id", "message": "must equal the id in the path"})
    if valid_from is not None:
        try:
            core.check_time(valid_from, "$.validFrom")
        except core.VersionError as exc:
            problems.append({"path": exc.path, "message": exc.message})
    if problems:
        raise _invalid(problems)
    _gate([record])
    return {**record, "artifactFingerprint": artifact_fingerprint(record)}


@dataclass(frozen=True)
class Correction:
    """What a supersede of ``row`` by a checked record writes (:func:`correction`), with the checks
    its commit repeats under the lease: the slot pointers read and the tombstone guard."""

    write: RecordWrite
    expected_slots: dict[str, str | None]
    guard: Callable[[], None]


def correction(deps: Deps, ref: PackageRef, row: LogRow, record: dict[str, Any], trust: str) -> Correction:
    """The new version of ``row``'s memory: same id, tier and codebase (422 otherwise), content that
    is no other memory (409 ``duplicate``), carrying the history a later forget tombstones."""
    assert row.record is not None
    try:
        core.check_update(row.record, record)
    except core.VersionError as exc:
        raise _invalid([{"path": exc.path, "message": exc.message}]) from None
    (slot,) = slot_keys([record])
    keyer, near = deps.forget_keys, deps.near
    found = deps.log.lookup(ref, set(), {slot})
    other = found.by_slot.get(slot)
    if other is not None and other.id != row.id:
        raise ServiceError(
            409,
            ERR_DUPLICATE,
            f"the corrected text is already memory {other.id} (same content, tier and codebase): "
            f"update or forget that memory instead",
            "$.record",
        )

    def guard() -> None:
        """Under the writer's lease: the correction must not be forgotten knowledge."""
        hits = deps.log.tombstone_hits(ref, forgetting.probes(keyer, [record], near), near)
        if hits:
            raise Forgotten(hits)

    write = RecordWrite(
        record,
        slot,
        forgetting.knowledge_key(keyer, record.get("title"), record.get("summary")),
        tuple(dict.fromkeys([*row.past_slots, *([row.slot] if row.slot else [])])),
        tuple(row.past_ids),
        tuple(dict.fromkeys([*row.past_keys, *([row.knowledge] if row.knowledge else [])])),
        trust,
    )
    return Correction(write, found.pointers, guard)


def forgotten_correction(exc: Forgotten) -> ServiceError:
    """409 ``forgotten`` for a correction a tombstone refuses (nothing was written)."""
    rules = ", ".join(sorted({h.rule for h in exc.hits}))
    return ServiceError(
        409,
        ERR_FORGOTTEN,
        f"the corrected text is forgotten knowledge (rule: {rules}): a forgotten memory stays "
        "forgotten, and nothing was written. Correct it with text that is different knowledge",
        extra={"forgotten": [h.to_dict() for h in exc.hits]},
    )


def update(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    record_id: str,
    record: Any,
    valid_from: str | None = None,
) -> dict[str, Any]:
    """Supersede memory ``record_id`` with ``record`` (the full record, same id), valid from
    ``valid_from`` (None: the entry's record time). Every problem of the request is named in one 422."""
    ref = _ref(deps, tenant, package, record_id)
    require_unlocked(deps, tenant, package)
    record = check_correction(record, record_id, valid_from)
    for attempt in range(MAX_CONFLICT_RETRIES):
        row = _row(deps, ref, record_id)
        # read again on a retry: the commit refuses a belief the policy no longer admits (Conflict)
        trust = entry_state(deps.log.policy(ref) or DEFAULT_POLICY, record)  # acx.core.review
        try:
            if valid_from is not None:
                core.check_end(_current_version(deps, ref, row), valid_from, _now(), "$.validFrom")
        except core.VersionError as exc:
            raise _invalid([{"path": exc.path, "message": exc.message}]) from None
        except Conflict:
            _retry(attempt)
            continue
        fix = correction(deps, ref, row, record, trust)
        extra: tuple[tuple[str, str], ...] = (("validFrom", valid_from),) if valid_from is not None else ()
        if trust == "candidate":  # a correction enters as any write does: review first, by policy
            extra += (("trust", "candidate"),)
        try:
            result = deps.log.supersede(
                ref, actor, fix.write, row.seq, extra, expected_slots=fix.expected_slots, guard=fix.guard
            )
        except Conflict:
            _retry(attempt)
            continue
        except Forgotten as exc:
            raise forgotten_correction(exc) from None
        index_after(deps, ref, lambda: deps.index().indexed(tenant, package, [record], {}, new_package=False))
        return {
            "id": record_id,
            "seq": result.from_seq,
            "supersedes": {"seq": row.seq, "hash": row.entry_hash},
            "validFrom": valid_from or _created_at(deps, ref, result.from_seq),
        }
    raise _contention()


def index_after(deps: Deps, ref: PackageRef, hook: Any) -> None:
    """Run a search index hook after the commit; a failure drops the index (the next search rebuilds
    it from the log) and never fails the acknowledged write."""
    try:
        hook()
    except Exception:
        try:
            deps.index().drop_index(ref.tenant, ref.package)
        except Exception:  # noqa: S110 - the next search rebuilds; the write stands
            pass


# ---- invalidate -------------------------------------------------------------------------------


def invalidate(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    record_id: str,
    reason: str,
    valid_until: str | None = None,
) -> dict[str, Any]:
    """End the validity of memory ``record_id`` at ``valid_until`` (None: the entry's record time)
    without erasing it. The reason is scrubbed and never stored: the entry's content hash is the hash
    of ``{id, reason}``."""
    ref = _ref(deps, tenant, package, record_id)
    require_unlocked(deps, tenant, package)
    problems = []
    if not isinstance(reason, str) or not 0 < len(reason) <= core.MAX_REASON:
        problems.append({"path": "$.reason", "message": f"must be 1-{core.MAX_REASON} characters"})
    if valid_until is not None:
        try:
            core.check_time(valid_until, "$.validUntil")
        except core.VersionError as exc:
            problems.append({"path": exc.path, "message": exc.message})
    if problems:
        raise _invalid(problems)
    _gate([], [("reason", reason)])
    content_hash = sha256_hex({"id": record_id, "reason": reason})
    for attempt in range(MAX_CONFLICT_RETRIES):
        row = _row(deps, ref, record_id)
        try:
            if valid_until is not None:
                core.check_end(_current_version(deps, ref, row), valid_until, _now(), "$.validUntil")
            extra = (("validUntil", valid_until),) if valid_until is not None else ()
            result = deps.log.invalidate(ref, actor, record_id, row.seq, content_hash, extra)
        except core.VersionError as exc:
            raise _invalid([{"path": exc.path, "message": exc.message}]) from None
        except Conflict:
            _retry(attempt)
            continue
        index_after(deps, ref, lambda: deps.index().forgotten(tenant, package, record_id))
        return {
            "id": record_id,
            "seq": result.from_seq,
            "validUntil": valid_until or _created_at(deps, ref, result.from_seq),
        }
    raise _contention()


# ---- history and as-of reads ------------------------------------------------------------------


def _bodies(deps: Deps, ref: PackageRef, record_id: str) -> dict[int, dict[str, Any]]:
    """seq -> record of every version of one memory still held (current row and ended versions)."""
    out = {v.seq: v.record for v in deps.log.memory_versions(ref, record_id)}
    row = deps.log.record(ref, record_id)
    if row is not None and row.active and row.record is not None:
        out[row.seq] = row.record
    return out


def history(deps: Deps, tenant: str, package: str, record_id: str) -> dict[str, Any]:
    """Every version of one memory, oldest first, with valid time and record time; a forgotten
    version's record is null (its text is erased)."""
    ref = _ref(deps, tenant, package, record_id)
    entries = [e for e in deps.log.entries(ref) if core.memory_id(e) == record_id]
    if not entries:
        raise not_found("memory")
    bodies = _bodies(deps, ref, record_id)
    return {
        "id": record_id,
        "versions": [
            {
                "seq": v.seq,
                "operation": v.operation,
                "record": None if v.forgotten else bodies.get(v.seq),
                "validFrom": v.valid_from,
                "validUntil": v.valid_until,
                "recordedAt": v.recorded_at,
                "actor": v.actor,
            }
            for v in core.versions(entries)
        ],
    }


def _as_of(value: str) -> str:
    try:
        return core.check_time(value, "$.asOf")
    except core.VersionError as exc:
        raise ServiceError(400, ERR_INVALID_REQUEST, exc.message, exc.path) from None


def get_as_of(deps: Deps, tenant: str, package: str, record_id: str, as_of: str) -> dict[str, Any]:
    """The version of one memory valid at ``as_of`` (the shape of ``GET .../memories/{id}``); 404 when
    none was (or it was forgotten)."""
    at = _as_of(as_of)
    ref = _ref(deps, tenant, package, record_id)
    version = core.valid_at(
        core.versions(e for e in deps.log.entries(ref) if core.memory_id(e) == record_id), at
    )
    record = _bodies(deps, ref, record_id).get(version.seq) if version else None
    if version is None or record is None:
        raise not_found("memory")
    return {
        "advisory": ADVISORY,
        "record": record,
        "zone": zone_for(record.get("portable")),
        "contentHash": version.content_hash,
        "seq": version.seq,
    }


def records_as_of(deps: Deps, ref: PackageRef, at: str) -> list[dict[str, Any]]:
    """Every memory's version valid at ``at``, in id order (O(log + package))."""
    histories = {rid: core.versions(es) for rid, es in core.by_memory(deps.log.entries(ref)).items()}
    wanted = {rid: v.seq for rid, h in histories.items() if (v := core.valid_at(h, at)) is not None}
    bodies: dict[tuple[str, int], dict[str, Any]] = {}
    for row in deps.log.active_rows(ref):
        if row.active and row.record is not None and wanted.get(row.id) == row.seq:
            bodies[(row.id, row.seq)] = row.record
    for ended in deps.log.all_versions(ref):
        if wanted.get(ended.id) == ended.seq:
            bodies[(ended.id, ended.seq)] = ended.record
    return [bodies[(rid, seq)] for rid, seq in sorted(wanted.items()) if (rid, seq) in bodies]


def list_as_of(
    deps: Deps,
    tenant: str,
    package: str,
    as_of: str,
    *,
    tier: str | None = None,
    tag: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> Any:
    """A page of the memories valid at ``as_of`` (``recall.Page``: the listing's shape and cursor)."""
    from acx.usecases.recall import Page

    at = _as_of(as_of)
    if tier not in (None, "rom", "save"):
        raise ServiceError(400, ERR_INVALID_REQUEST, "tier must be rom or save", "$.tier")
    if not 1 <= limit <= RECALL_MAX_LIMIT:
        raise ServiceError(
            400, ERR_INVALID_REQUEST, f"limit must be between 1 and {RECALL_MAX_LIMIT}", "$.limit"
        )
    after = None
    if cursor:
        try:
            after = base64.urlsafe_b64decode(cursor.encode()).decode()
        except (ValueError, UnicodeDecodeError):
            after = None
        if after is None or not after.startswith("r#"):
            raise ServiceError(400, ERR_INVALID_CURSOR, "cursor is not one this service issued", "$.cursor")
    ref = PackageRef(tenant, package)
    if not deps.log.package_exists(ref):
        raise not_found()
    page: list[ListedRecord] = []
    for record in records_as_of(deps, ref, at):
        rid = str(record["id"])
        if after is not None and f"r#{rid}" <= after:
            continue
        if (tier is not None and zone_of(record) != tier) or (
            tag is not None and tag not in record.get("tags", [])
        ):
            continue
        page.append(ListedRecord(rid, dumps_record(record)))
        if len(page) > limit:
            break
    more = len(page) > limit
    page = page[:limit]
    return Page(page, base64.urlsafe_b64encode(page[-1].key.encode()).decode() if more else None)


def search_as_of(deps: Deps, tenant: str, package: str, query: Any, as_of: str) -> Any:
    """Ranked search over the memories valid at ``as_of``: an index of that set built for the query
    (O(package); the stored index holds current versions only)."""
    from acx.contract.search import SearchResponse
    from acx.core.search import search as rank
    from acx.core.search import to_docs
    from acx.core.search.ranking import IndexView
    from acx.core.search.segment import Packed, Segment
    from acx.usecases.search import _result, engine_for

    at = _as_of(as_of)
    ref = PackageRef(tenant, package)
    if not deps.log.package_exists(ref):
        raise not_found()
    engine = engine_for(deps)
    records = records_as_of(deps, ref, at)
    by_id = {str(r["id"]): r for r in records}
    segment = Packed.parse(Segment.build(engine.id, engine.dim, to_docs(records, engine)).to_bytes())
    view = IndexView(engine.id, engine.dim, [segment])
    hits = rank(view, engine, query.q, k=query.k, zone=query.tier, tag=query.tag)
    results = [_result(h, by_id[h.id]) for h in hits if h.id in by_id][: query.k]
    return SearchResponse(engine=engine.id, k=query.k, results=results)
