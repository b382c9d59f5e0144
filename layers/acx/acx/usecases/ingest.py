"""Ingest one bundle: parse -> validate -> scrub gate -> tombstone check -> merge -> receipted append.

The same pipeline serves the inline route and the presigned-upload ingest function. A bundle with any
invalid record or any secret is refused whole and writes nothing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError

MAX_CONFLICT_RETRIES = 8


@dataclass
class IngestSummary:
    accepted: int
    merged: int
    unchanged: int
    refused: int
    from_seq: int | None
    to_seq: int | None
    checkpoint: str | None
    bundle: str | None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["log"] = {"fromSeq": out.pop("from_seq"), "toSeq": out.pop("to_seq")}
        return out


UPLOAD_MAX_RECORDS = 200_000
GATE_BATCH = 2000  # records scanned per pass: the scan joins their strings into one buffer
SPOOL_IN_MEMORY = 8 * 1024 * 1024  # canonical bundles above this are spooled to /tmp, not held

BundleInput = bytes | dict[str, Any] | Iterable[bytes]


def parse(data: BundleInput, *, max_bytes: int | None = None) -> Any:
    """Parse and validate a bundle; every refusal is a 413/422 naming the JSON path and the limit.

    ``max_bytes`` raises the inline limits for presigned uploads (up to 100 MiB, 200,000 records).
    An iterable of chunks (an S3 body) is read as a stream: one record's raw JSON at a time.
    """
    from acx.core.bundle import BundleError, Limits, parse_bundle, parse_bundle_stream

    limits = (
        Limits() if max_bytes is None else Limits(max_body_bytes=max_bytes, max_records=UPLOAD_MAX_RECORDS)
    )
    try:
        if isinstance(data, bytes | bytearray | memoryview):
            return parse_bundle(bytes(data), limits)
        if isinstance(data, dict):
            return parse_bundle(data, limits)
        return parse_bundle_stream(data, limits)
    except BundleError as exc:
        raise ServiceError(exc.status, exc.code, exc.message, exc.path) from None


def gate(bundle: Any, forbidden: tuple[str, ...] = ()) -> None:
    """The scrub gate: fail closed; the 422 report names where, never what.

    Records are scanned in batches so the joined scan buffer stays small on a 100 MiB upload; the
    findings are the same, in the same order, as one scan of the whole bundle.
    """
    from acx.core.scrub import ScrubReport, scan_bundle

    report = ScrubReport()
    records = bundle.records
    parts = [
        scan_bundle(records[i : i + GATE_BATCH], forbidden=forbidden)
        for i in range(0, len(records), GATE_BATCH)
    ]
    parts.append(scan_bundle([], bundle.knowledge, bundle.skills, forbidden))
    for part in parts:
        report.extend([*part.findings, *part.warnings])
    if report.blocked:
        raise ServiceError(
            422,
            "blocked",
            f"the scrub gate blocked the bundle: {len(report.findings)} finding(s)",
            extra={"report": report.to_dict()},
        )


def ingest_bundle(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    data: BundleInput,
    *,
    max_bytes: int | None = None,
) -> IngestSummary:
    """Run the whole pipeline and append the changes to the package log; returns the response summary."""
    from acx.usecases.locks import require_unlocked

    require_unlocked(deps, tenant, package)  # 423 while an operator holds the package lock
    bundle = parse(data, max_bytes=max_bytes)
    gate(bundle)
    from acx.core.merge import slot_keys

    slots = slot_keys(bundle.records)  # hashed once: the tombstone check and the merge share them
    refuse_forgotten(deps, tenant, package, bundle.records, slots)
    summary = _merge_and_append(deps, tenant, package, actor, bundle, slots)
    return summary


def refuse_forgotten(
    deps: Deps, tenant: str, package: str, records: list[dict[str, Any]], slots: list[str]
) -> None:
    """409 when any record matches a tombstone (same id, same content, or same content slot);
    ``slots`` are the records' slot keys."""
    from acx.core.canonical import sha256_hex

    ids = {r["id"] for r in records}
    hashes = {sha256_hex(r) for r in records}
    hits = deps.log.forgotten(tenant, package, sorted(ids), sorted(hashes), sorted(set(slots)))
    if hits:
        stones = sorted({(h["contentHash"], int(h["seq"])) for h in hits})
        content, seq = stones[0]
        raise ServiceError(
            409,
            "forgotten",
            f"this bundle holds {len(stones)} forgotten memory(ies): tombstone sha256:{content} "
            f"(forget entry seq {seq}) refuses the same id, content and content slot",
            extra={"tombstones": [{"contentHash": c, "seq": q} for c, q in stones[:20]]},
        )


def _merge_and_append(
    deps: Deps, tenant: str, package: str, actor: str, bundle: Any, slots: list[str]
) -> IngestSummary:
    from acx.adapters.log_store import Conflict
    from acx.core.merge import MergeConflict, merge_into

    for attempt in range(MAX_CONFLICT_RETRIES):
        seen: dict[str, int | None] = {}
        seen_slots: dict[str, str | None] = {}
        rows: dict[str, dict[str, Any]] = {}

        def lookup(
            ids: set[str],
            slots: set[str],
            seen: dict[str, int | None] = seen,
            seen_slots: dict[str, str | None] = seen_slots,
            rows: dict[str, dict[str, Any]] = rows,
        ) -> tuple[dict[str, dict], dict[str, dict]]:
            by_id, by_slot, pointers = deps.log.lookup(tenant, package, ids, slots)
            active = {rid: row for rid, row in by_id.items() if row["state"] == "active"}
            rows.update(active)
            rows.update((row["id"], row) for row in by_slot.values())
            for rid in ids:
                seen.setdefault(rid, active[rid]["seq"] if rid in active else None)
            for row in by_slot.values():
                seen.setdefault(row["id"], row["seq"])
            for slot, pointer in pointers.items():
                seen_slots.setdefault(slot, pointer)
            return (
                {rid: row["record"] for rid, row in active.items()},
                {slot: row["record"] for slot, row in by_slot.items()},
            )

        try:
            plan = merge_into(lookup, bundle.records, slots)
        except MergeConflict as exc:
            raise ServiceError(422, "merge_conflict", str(exc)) from None
        files = _changed_files(deps, tenant, package, bundle)
        if not plan.writes and not plan.retired and not files:
            _store_canonical(deps, tenant, package, bundle)
            return IngestSummary(
                plan.accepted,
                plan.merged,
                plan.unchanged,
                0,
                None,
                None,
                deps.log.latest_checkpoint(tenant, package),
                None,
            )
        try:
            writes = [
                {"record": r, "slot": slot, **_history(r["id"], plan, rows)}
                for r, slot in zip(plan.writes, plan.write_slots, strict=True)
            ]
            result = deps.log.append(
                tenant,
                package,
                actor,
                writes,
                retired=list(plan.retired),
                files=files,
                expected=seen,
                expected_slots=seen_slots,
            )
        except Conflict:
            time.sleep(random.uniform(0, 0.02 * 2**attempt))
            continue
        _index(deps, tenant, package, plan, new_package=result.from_seq == 0)
        key = _store_canonical(deps, tenant, package, bundle)
        return IngestSummary(
            plan.accepted,
            plan.merged,
            plan.unchanged,
            0,
            result.from_seq,
            result.to_seq,
            result.checkpoint,
            key,
        )
    raise ServiceError(
        503, "contention", "too many concurrent writers on this package; retry", headers={"Retry-After": "1"}
    )


def _index(deps: Deps, tenant: str, package: str, plan: Any, *, new_package: bool) -> None:
    """Search index hook, after the rows are committed. A failure never fails the acknowledged write:
    the package's index is dropped instead, and the next search rebuilds it from the log."""
    from acx.observability import logger

    try:
        deps.index().indexed(tenant, package, list(plan.writes), dict(plan.absorbed), new_package=new_package)
    except Exception as exc:
        logger.warning("search index update failed", extra={"package": package, "error": type(exc).__name__})
        try:
            deps.index().drop_index(tenant, package)
        except Exception:
            logger.warning("search index drop failed", extra={"package": package})


def _history(survivor: str, plan: Any, rows: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The slots and ids a survivor's memory held before (its own older versions, the stored records
    folded into it): a later forget tombstones them all, so no older version comes back."""
    slots: list[str] = []
    ids: list[str] = []
    for rid in [survivor, *plan.absorbed.get(survivor, [])]:
        row = rows.get(rid)
        if row is None:
            continue
        slots += [*row["pastSlots"], row["slot"]]
        ids += [*row["pastIds"], rid]
    if not slots:
        return {}  # a new memory: nothing to carry (the common case; no lists per record)
    return {"pastSlots": list(dict.fromkeys(slots)), "pastIds": list(dict.fromkeys(ids))}


def _changed_files(deps: Deps, tenant: str, package: str, bundle: Any) -> list[tuple[str, str]]:
    """Knowledge and skill files whose content differs from the stored latest version of that path."""
    incoming = [*bundle.knowledge, *bundle.skills]
    if not incoming:
        return []
    stored = dict(deps.log.read_files(tenant, package))
    return [(path, content) for path, content in incoming if stored.get(path) != content]


def _store_canonical(deps: Deps, tenant: str, package: str, bundle: Any) -> str:
    """Write the bundle's canonical JSON to the data bucket, content-addressed (same bytes, same key).

    The bytes go through a spool file (in memory up to ``SPOOL_IN_MEMORY``, then /tmp), so a large
    upload is never held twice; the key is the sha256 computed while writing.
    """
    import tempfile

    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        digest = bundle.write_canonical(spool)
        spool.seek(0)
        key = f"bundles/{tenant}/{package}/{digest}.json"
        deps.data.put_file(key, spool)
    return key
