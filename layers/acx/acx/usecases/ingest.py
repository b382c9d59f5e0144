"""Ingest one bundle: parse -> validate -> scrub gate -> merge -> receipted append, in which the
tombstone check runs under the writer's lease (so a forget in flight cannot slip between them).

The same pipeline serves the inline route and the presigned-upload ingest function. A bundle with any
invalid record or any secret is refused whole and writes nothing. A bundle holding forgotten
knowledge is refused whole (409 naming each record by index and id, and the rule), or, with
``on_forgotten="skip"``, lands without those records and reports them.
"""

from __future__ import annotations

import dataclasses
import random
import tempfile
import time
from collections.abc import Iterable, Set
from dataclasses import asdict, dataclass, field
from typing import Any

from acx.core import forgetting
from acx.core.bundle import BundleError, Limits, parse_bundle, parse_bundle_stream
from acx.core.merge import MergeConflict, collector_paused, merge_into, slot_keys
from acx.core.package import PackageRef
from acx.core.review import DEFAULT_POLICY, entry_state
from acx.core.rows import Conflict, FileWrite, Forgotten, LogRow, Lookup, RecordWrite
from acx.core.scrub import ScrubReport, scan_bundle
from acx.observability import logger
from acx.usecases.deps import Deps
from acx.usecases.errors import ServiceError
from acx.usecases.locks import require_unlocked

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
    skipped: list[forgetting.Hit] = field(default_factory=list)
    # per same-id record whose text the merge did not take: which field it kept and how to correct it
    kept: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["log"] = {"fromSeq": out.pop("from_seq"), "toSeq": out.pop("to_seq")}
        out["skipped"] = [h.to_dict() for h in self.skipped]
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
    report = ScrubReport()
    records = bundle.records
    parts = [
        scan_bundle(records[i : i + GATE_BATCH], forbidden=forbidden, first_index=i)
        for i in range(0, len(records), GATE_BATCH)
    ]
    # file paths and contents, and the other members (vector ids): scanned before anything is stored
    other = {"vectors": bundle.vectors} if bundle.vectors is not None else None
    parts.append(scan_bundle([], bundle.knowledge, bundle.skills, forbidden, other=other))
    for part in parts:
        report.extend([*part.findings, *part.warnings])
    if report.blocked:
        raise ServiceError(
            422,
            "blocked",
            f"the scrub gate blocked the bundle: {len(report.findings)} finding(s)",
            extra={"report": report.to_dict()},
        )


ON_FORGOTTEN = ("refuse", "skip")


def check_on_forgotten(on_forgotten: str) -> None:
    """400 unless the policy for forgotten records is ``refuse`` (the default) or ``skip``."""
    if on_forgotten not in ON_FORGOTTEN:
        raise ServiceError(400, "invalid_query", "onForgotten must be refuse or skip", "onForgotten")


@collector_paused
def ingest_bundle(
    deps: Deps,
    tenant: str,
    package: str,
    actor: str,
    data: BundleInput,
    *,
    max_bytes: int | None = None,
    on_forgotten: str = "refuse",
    agent: str | None = None,
) -> IngestSummary:
    """Run the whole pipeline and append the changes to the package log; returns the response summary.

    With Python's cyclic collector paused (as :func:`merge_into` already ran): an ingest holds its
    parsed records from parse to the last row write, and every full collection walked all of them
    again, finding nearly nothing (gc callbacks, 20,000-record presigned ingest with moto in another
    process: 5 full collections, 7 s of 40 s CPU, 88 objects freed; about 26,000 freed by all
    collections, what the pause leaves until the collector runs again after it).
    """
    check_on_forgotten(on_forgotten)
    ref = PackageRef(tenant, package)
    # The request's one read of the head before the writer's lease: its operator lock and its forget
    # flag. Both are advisory here; the commit re-reads the head under the lease and decides there.
    head = deps.log.head(ref)
    require_unlocked(deps, tenant, package, head=head)  # 423 while an operator holds the package lock
    bundle = parse(data, max_bytes=max_bytes)
    gate(bundle)
    return _merge_and_append(deps, ref, actor, bundle, on_forgotten, head.may_have_tombstones, agent)


def forgotten_error(hits: list[forgetting.Hit], files: list[str]) -> ServiceError:
    """409 naming each refused record by index and id and the rule that matched (never its text)."""
    rules = sorted({h.rule for h in hits} | ({"file"} if files else set()))
    return ServiceError(
        409,
        "forgotten",
        f"this bundle holds {len(hits)} forgotten memory(ies) and {len(files)} forgotten file(s): a "
        f"tombstone refuses them (rule: {', '.join(rules)}); nothing was written. Retry with "
        "?onForgotten=skip to land the rest",
        extra={"forgotten": [h.to_dict() for h in hits[:1000]], "forgottenFiles": files[:1000]},
    )


class _Reader:
    """The merge's view of the store: every lookup it made, kept so the claim can re-check them."""

    def __init__(self, deps: Deps, ref: PackageRef) -> None:
        self.deps, self.ref = deps, ref
        self.lookups: list[tuple[set[str], Lookup]] = []

    def __call__(self, ids: set[str], slots: set[str]) -> tuple[dict[str, dict], dict[str, dict]]:
        found = self.deps.log.lookup(self.ref, ids, slots)
        self.lookups.append((ids, found))
        active = {
            rid: row.record for rid, row in found.by_id.items() if row.active and row.record is not None
        }
        return active, {slot: row.record for slot, row in found.by_slot.items() if row.record is not None}

    def rows(self) -> dict[str, LogRow]:
        out: dict[str, LogRow] = {}
        for _, found in self.lookups:
            out.update((rid, row) for rid, row in found.by_id.items() if row.active)
            out.update((row.id, row) for row in found.by_slot.values())
        return out

    def expected(self) -> tuple[dict[str, int | None], dict[str, str | None]]:
        seqs: dict[str, int | None] = {}
        slots: dict[str, str | None] = {}
        for ids, found in self.lookups:
            for rid, seq in found.seen_seqs(ids).items():
                seqs.setdefault(rid, seq)
            for slot, pointer in found.pointers.items():
                slots.setdefault(slot, pointer)
        return seqs, slots


def _merge_and_append(
    deps: Deps,
    ref: PackageRef,
    actor: str,
    bundle: Any,
    on_forgotten: str,
    may_have_tombstones: bool,
    agent: str | None = None,
) -> IngestSummary:
    keyer, near = deps.forget_keys, deps.near
    computed: list[list[forgetting.Probe]] = []

    def all_probes() -> list[forgetting.Probe]:
        """The probes of every record, computed once, only for a package that may hold tombstones
        (none for one whose head shows no forget: a sketch and 20 band keys per record saved)."""
        if not computed:
            computed.append(forgetting.probes(keyer, bundle.records, near))
        return computed[0]

    if may_have_tombstones:
        all_probes()  # before the lease: sketching a large upload is seconds of CPU, not of reads

    incoming_files = [
        FileWrite(p, c, forgetting.file_key(keyer, c)) for p, c in [*bundle.knowledge, *bundle.skills]
    ]
    skipped: dict[int, forgetting.Hit] = {}
    skipped_files: set[str] = set()
    for attempt in range(MAX_CONFLICT_RETRIES):
        # read before the lease, and again on a retry: the commit refuses a belief that a policy
        # change racing this upload no longer admits (Conflict), so the retry writes candidates
        policy = deps.log.policy(ref) or DEFAULT_POLICY
        keep = [i for i in range(len(bundle.records)) if i not in skipped]
        records = [bundle.records[i] for i in keep]
        files = [f for f in incoming_files if f.path not in skipped_files]
        slots = slot_keys(records)
        reader = _Reader(deps, ref)
        try:
            plan = merge_into(reader, records, slots)
        except MergeConflict as exc:
            raise ServiceError(422, "merge_conflict", str(exc)) from None
        changed = _changed_files(deps, ref, files)
        rows = reader.rows()  # the stored rows the merge read (active): history of the survivors
        kept, differing = _kept(ref, records, plan, rows)
        summary = IngestSummary(
            plan.accepted,
            plan.merged,
            plan.unchanged,
            len(skipped),
            None,
            None,
            None,
            None,
            [skipped[i] for i in sorted(skipped)],
            kept,
        )
        # a same-id upload whose text differs never reads as unchanged: the merge folded it in
        summary.unchanged -= differing
        summary.merged += differing
        if not plan.writes and not plan.retired and not changed:
            if skipped and not records and not files:
                summary.checkpoint = deps.log.latest_checkpoint(ref)
                return summary  # everything was forgotten: nothing to store, not even the bundle
            summary.checkpoint = deps.log.latest_checkpoint(ref)
            summary.bundle = _store_canonical(deps, ref, bundle, set(skipped), skipped_files)
            return summary

        def guard(keep: list[int] = keep, files: list[FileWrite] = files) -> None:
            """Under the writer's lease: nothing forgotten may be written (the race closes here)."""
            probes = [all_probes()[i] for i in keep]
            hits = deps.log.tombstone_hits(ref, probes, near)
            stones = deps.log.file_forgotten(ref, [f.file_key for f in files if f.file_key])
            refused = [f.path for f in files if f.file_key in stones]
            if hits or refused:
                raise Forgotten(hits, refused)

        writes = [
            _write(
                r, slot, forgetting.knowledge_key(keyer, r.get("title"), r.get("summary")), plan, rows, policy
            )
            for r, slot in zip(plan.writes, plan.write_slots, strict=True)
        ]
        expected, expected_slots = reader.expected()
        try:
            result = deps.log.append(
                ref,
                actor,
                writes,
                retired=list(plan.retired),
                files=changed,
                expected=expected,
                expected_slots=expected_slots,
                guard=guard,
                agent=agent,
            )
        except Conflict:
            time.sleep(random.uniform(0, 0.02 * 2**attempt))
            continue
        except Forgotten as hit:
            if on_forgotten == "refuse":
                raise forgotten_error(hit.hits, hit.files) from None
            skipped.update((h.index, h) for h in hit.hits)
            skipped_files.update(hit.files)
            continue  # merge again without them (the skipped set only grows: this ends)
        _index(deps, ref, plan, new_package=result.from_seq == 0)
        summary.from_seq, summary.to_seq, summary.checkpoint = (
            result.from_seq,
            result.to_seq,
            result.checkpoint,
        )
        summary.bundle = _store_canonical(deps, ref, bundle, set(skipped), skipped_files)
        return summary
    raise ServiceError(
        503, "contention", "too many concurrent writers on this package; retry", headers={"Retry-After": "1"}
    )


MAX_KEPT_REPORTED = 1000


def _kept(
    ref: PackageRef, records: list[dict[str, Any]], plan: Any, stored: dict[str, LogRow]
) -> tuple[list[dict[str, str]], int]:
    """What the merge kept instead of each incoming record's text (a same-id upload, or a record
    folded into another), and how many of those records the plan counted as unchanged."""
    from acx.core.versions import kept as kept_fields

    final = {w["id"]: w for w in plan.writes}
    into = {rid: sid for sid, ids in plan.absorbed.items() for rid in ids}
    out: list[dict[str, str]] = []
    differing = 0
    for r in records:
        rid = r["id"]
        survivor = final.get(rid) or final.get(into.get(rid, ""))
        if survivor is None:
            row = stored.get(rid)
            survivor = row.record if row is not None else None
        if survivor is None:
            continue
        fields = kept_fields(r, survivor, f"/v1/packages/{ref.package}/memories/{survivor['id']}")
        if fields:
            differing += rid not in final and rid in stored
            out += fields
    return out[:MAX_KEPT_REPORTED], differing


def _index(deps: Deps, ref: PackageRef, plan: Any, *, new_package: bool) -> None:
    """Search index hook, after the rows are committed. A failure never fails the acknowledged write:
    the package's index is dropped instead, and the next search rebuilds it from the log."""
    try:
        deps.index().indexed(
            ref.tenant, ref.package, list(plan.writes), dict(plan.absorbed), new_package=new_package
        )
    except Exception as exc:
        logger.warning(
            "search index update failed", extra={"package": ref.package, "error": type(exc).__name__}
        )
        try:
            deps.index().drop_index(ref.tenant, ref.package)
        except Exception:
            logger.warning("search index drop failed", extra={"package": ref.package})


def _write(
    record: dict[str, Any],
    slot: str,
    knowledge: str,
    plan: Any,
    rows: dict[str, LogRow],
    policy: str = DEFAULT_POLICY,
) -> RecordWrite:
    """A survivor with the history a later forget tombstones: the slots, ids and knowledge keys its
    memory held before (its own older versions, the stored records folded into it), and the trust
    state it enters with (:func:`acx.core.review.entry_state`)."""
    slots: list[str] = []
    ids: list[str] = []
    keys: list[str] = []
    for rid in [record["id"], *plan.absorbed.get(record["id"], [])]:
        row = rows.get(rid)
        if row is None:
            continue
        slots += [*row.past_slots, *([row.slot] if row.slot else [])]
        ids += [*row.past_ids, rid]
        keys += [*row.past_keys, *([row.knowledge] if row.knowledge else [])]
    return RecordWrite(
        record,
        slot,
        knowledge,
        tuple(dict.fromkeys(slots)),
        tuple(dict.fromkeys(ids)),
        tuple(dict.fromkeys(keys)),
        entry_state(policy, record),
    )


def _changed_files(deps: Deps, ref: PackageRef, incoming: list[FileWrite]) -> list[FileWrite]:
    """Knowledge and skill files whose content differs from the stored latest version of that path."""
    if not incoming:
        return []
    stored = dict(deps.log.read_files(ref))
    return [f for f in incoming if stored.get(f.path) != f.content]


def _store_canonical(
    deps: Deps,
    ref: PackageRef,
    bundle: Any,
    skip: Set[int] = frozenset(),
    skip_files: Set[str] = frozenset(),
) -> str:
    """Write the bundle's canonical JSON to the data bucket, content-addressed (same bytes, same key).

    The bytes go through a spool file (in memory up to ``SPOOL_IN_MEMORY``, then /tmp), so a large
    upload is never held twice; the key is the sha256 computed while writing. Skipped (forgotten)
    records and files are left out: their text is never stored.
    """
    if skip or skip_files:  # vectors are derived from the text: dropped with the skipped records
        bundle = dataclasses.replace(
            bundle,
            records=[r for i, r in enumerate(bundle.records) if i not in skip],
            knowledge=[(p, c) for p, c in bundle.knowledge if p not in skip_files],
            skills=[(p, c) for p, c in bundle.skills if p not in skip_files],
            vectors=None,
        )
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as spool:
        digest = bundle.write_canonical(spool)
        spool.seek(0)
        key = f"{ref.prefix('bundles')}{digest}.json"
        deps.data.put_file(key, spool)
    return key
