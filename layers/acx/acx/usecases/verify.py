"""The one log verifier (scheduled function, API route and ``acx log verify``).

It recomputes every link and the Merkle root from the receipts, checks each live row's plaintext
against its content hash and against its receipt entry, requires the latest signed checkpoint to match
the recomputed head, and requires every new checkpoint to extend the last one it witnessed. It also
accounts for every belief (:func:`acx.core.review.vouched`): the entry that wrote it entered it as a
belief under a policy that admitted beliefs (the ``policy`` entries before it), or a ``review`` approve
covers that entry; a belief with neither (a candidate row turned into a belief in the table) is
``unvouched-belief``. An incremental run takes the policy in force at the witnessed size from the
witness state, so it trusts that item for the policy as it does for the chain head.

What it does not stop: the witness state lives in the heads table, so an attacker who can also rewrite
that item (and holds no signing key) is caught only by the signature and by an external copy of the
witness; an attacker holding the signing key can sign any consistent rewrite above the witnessed size.
Replacing a row by an *older* receipted version of itself looks like a crashed write and is reported
as an orphan, not as tampering.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from acx.core import log as logcore
from acx.core import merkle
from acx.core import review as review_rules
from acx.core.checkpoint import CheckpointError, verify_checkpoint
from acx.core.log import Entry
from acx.core.package import PackageRef
from acx.core.rows import CorruptStore, FileRow, VersionRow
from acx.usecases.ports import VerifiableLog

MAX_ORPHANS_REPORTED = 100
#: The operation a row's entry must have, by the row's state: a current version was remembered or
#: superseded into place, an ended row was invalidated, a tombstoned row forgotten.
_WANT = {"active": ("remember", "supersede"), "ended": ("invalidate",), "tombstoned": ("forget",)}


Store = VerifiableLog  # what the verifier reads (acx.usecases.ports)


@dataclass
class VerifyResult:
    tenant: str
    package: str
    status: str = "ok"  # ok | broken | unverifiable | corrupt
    size: int = 0
    checked: int = 0
    rows: int = 0
    first_bad_seq: int | None = None
    reason: str | None = None
    detail: str | None = None
    orphans: list[int] = field(default_factory=list)
    checkpoint_size: int | None = None
    witness_size: int | None = None
    incremental: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """JSON shape of the API route and the CLI (camelCase)."""
        d = asdict(self)
        return {
            "tenant": d["tenant"],
            "package": d["package"],
            "status": d["status"],
            "size": d["size"],
            "checked": d["checked"],
            "rows": d["rows"],
            "firstBadSeq": d["first_bad_seq"],
            "reason": d["reason"],
            "detail": d["detail"],
            "orphans": d["orphans"][:MAX_ORPHANS_REPORTED],
            "orphanCount": len(d["orphans"]),
            "checkpointSize": d["checkpoint_size"],
            "witnessSize": d["witness_size"],
            "incremental": d["incremental"],
            "seconds": d["seconds"],
        }


class _Broken(Exception):
    def __init__(self, seq: int | None, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.seq, self.reason, self.detail = seq, reason, detail


def verify_package(
    store: Store, ref: PackageRef, publisher_id: str, incremental: bool = False, update_witness: bool = True
) -> VerifyResult:
    """Verify one package's log; on ``ok`` advance the witness to the verified checkpoint.
    ``publisher_id`` names whose checkpoints these are (the origin line must match it)."""
    started = time.perf_counter()
    result = VerifyResult(ref.tenant, ref.package, incremental=incremental)
    try:
        _verify(store, ref, publisher_id, incremental, update_witness, result)
    except _Broken as exc:
        result.status, result.first_bad_seq, result.reason, result.detail = (
            "broken",
            exc.seq,
            exc.reason,
            exc.detail,
        )
    except CorruptStore as exc:
        result.status, result.reason, result.detail = "corrupt", "corrupt", str(exc)
    except (logcore.EntryError, ValueError) as exc:
        result.status, result.reason, result.detail = "corrupt", "corrupt", f"undecodable entry: {exc}"
    result.seconds = round(time.perf_counter() - started, 4)
    return result


def _verify(
    store: Store,
    ref: PackageRef,
    publisher_id: str,
    incremental: bool,
    update_witness: bool,
    result: VerifyResult,
) -> None:
    chain = ref.chain_key
    witness = store.witness(ref)
    w_size = int(witness["size"]) if witness else 0
    result.witness_size = w_size if witness else None
    start = w_size if incremental and witness else 0
    if start:
        assert witness is not None
        rng = merkle.CompactRange.from_hex(w_size, witness["range"])
        prev = witness["chainHead"]
        anchor = list(store.entries(ref, start - 1, start))
        if not anchor:
            raise _Broken(start - 1, "truncated", f"witnessed entry {start - 1} is gone from the receipts")
        if anchor[0].hash != prev:
            raise _Broken(start - 1, "witness-mismatch", "witnessed entry was rewritten")
    else:
        rng, prev = merkle.CompactRange(), logcore.GENESIS
    base = rng.copy()
    witnessed_range: merkle.CompactRange | None = base if start else None
    new_leaves: list[bytes] = []
    vouch = _Vouching(_policy_at_start(store, ref, witness, start))
    by_seq: dict[int, Entry] = {}
    latest: dict[str, int] = {}
    expected_seq = start
    for entry in store.entries(ref, start):
        seq = entry.seq
        if seq != expected_seq:
            raise _Broken(
                expected_seq, "sequence-gap", f"expected entry {expected_seq}, receipts jump to {seq}"
            )
        payload = entry.payload
        logcore.validate_payload(payload)
        if payload["chainKey"] != chain:
            raise _Broken(seq, "chain-key", "entry belongs to another chain")
        if entry.prev_hash != prev:
            raise _Broken(seq, "link", "prevHash does not match the previous entry's hash")
        if logcore.entry_hash(prev, payload) != entry.hash:
            raise _Broken(seq, "entry-hash", "entry hash does not match its payload")
        if payload["operation"] in logcore.COVERING:
            covered = by_seq.get(payload["covers"]["seq"])
            if covered is not None and covered.hash != payload["covers"]["hash"]:
                raise _Broken(seq, "covers", f"{payload['operation']} entry covers a different entry")
        vouch.see(entry)
        prev = entry.hash
        leaf = merkle.leaf_hash(bytes.fromhex(prev))
        rng.append_leaf_hash(leaf)
        new_leaves.append(leaf)
        by_seq[seq] = entry
        if entry.key:
            latest[entry.key] = seq
        expected_seq += 1
        if witness and not start and rng.size == w_size:
            witnessed_range = rng.copy()
    size = expected_seq
    result.size, result.checked = size, size - start

    if size == 0:
        if any(True for _ in store.all_rows(ref)):
            result.status, result.reason = "unverifiable", "no-receipts"
            result.detail = "rows exist but there are no receipts to verify them against"
            return
    root = rng.root()

    # witness: the log must extend what was verified before (truncation, rollback, rewrite)
    if witness:
        if size < w_size:
            raise _Broken(size, "truncated", f"log has {size} entries, {w_size} were witnessed")
        if witnessed_range is None or witnessed_range.root().hex() != witness["root"]:
            raise _Broken(None, "witness-mismatch", "log no longer contains the witnessed tree")

        def node(lo: int, hi: int) -> bytes:
            if hi <= w_size and witnessed_range is not None:
                got = witnessed_range.node(lo, hi)
                if got is not None:
                    return got
            if lo >= start:
                return merkle.root_of_leaf_hashes(new_leaves[lo - start : hi - start])
            raise _Broken(None, "witness-mismatch", "cannot build consistency proof")

        proof = merkle.consistency_proof(w_size, size, node)
        if not merkle.verify_consistency(w_size, size, bytes.fromhex(witness["root"]), root, proof):
            raise _Broken(None, "witness-inconsistent", "log is not an extension of the witnessed log")

    head = store.log_head(ref)
    if head.size != size or (size and (head.chain_head != prev or head.root != root)):
        raise _Broken(
            min(head.size, size), "head-mismatch", f"head says size {head.size}, receipts give {size}"
        )

    text = store.latest_checkpoint(ref)
    if size and text is None:
        raise _Broken(size - 1, "checkpoint-missing", "no signed checkpoint for a non-empty log")
    if text is not None:
        try:
            cp = verify_checkpoint(text, store.verifier_key())
        except CheckpointError as exc:
            raise _Broken(None, "checkpoint-signature", str(exc)) from None
        result.checkpoint_size = cp.size
        if cp.origin != ref.origin(publisher_id):
            raise _Broken(None, "checkpoint-origin", f"checkpoint is for {cp.origin}")
        if witness and cp.size < w_size:
            raise _Broken(
                cp.size, "checkpoint-rollback", f"checkpoint {cp.size} is older than witnessed {w_size}"
            )
        if cp.size != size or cp.root != root or cp.chain_head != prev:
            raise _Broken(
                min(cp.size, size),
                "checkpoint-mismatch",
                f"signed checkpoint (size {cp.size}) does not match the log (size {size})",
            )

    _check_rows(store, ref, start, by_seq, latest, result, vouch)

    if update_witness and size and text is not None and (not witness or size >= w_size):
        store.put_witness(
            ref,
            {
                "size": size,
                "root": root.hex(),
                "chainHead": prev,
                "range": rng.to_hex(),
                "checkpoint": text,
                "verifiedAt": int(time.time()),
                "review": vouch.policy_now,  # the policy in force at this size (next incremental run)
            },
        )


def _check_rows(
    store: Store,
    ref: PackageRef,
    start: int,
    by_seq: dict[int, Entry],
    latest: dict[str, int],
    result: VerifyResult,
    vouch: _Vouching | None = None,
) -> None:
    rows = store.rows_by_key(ref, sorted(latest)) if start else list(store.all_rows(ref))
    seen: dict[str, int] = {}
    for row in rows:
        sk, seq = row.key, row.seq
        seen[sk] = seq
        if start and seq < start:
            continue  # an older version: the new entry for it is an orphan (reported below)
        entry = by_seq.get(seq)
        if entry is None:
            raise _Broken(seq, "row-without-receipt", f"row {sk} names entry {seq}, which no receipt holds")
        if entry.hash != row.entry_hash or entry.content_hash != row.content_hash or entry.key != sk:
            raise _Broken(seq, "row-receipt-mismatch", f"row {sk} does not match its receipt entry")
        want = _WANT.get(row.state, ("remember",))
        if isinstance(row, FileRow):
            if row.active and (
                row.content is None or logcore.file_content_hash(row.path, row.content) != row.content_hash
            ):
                raise _Broken(seq, "content-hash", f"file {sk} does not hash to its content hash")
            if not row.active and row.content is not None:
                raise _Broken(seq, "plaintext-after-forget", f"forgotten file {sk} still holds its content")
        elif row.active:
            if row.record is None or logcore.content_hash(row.record) != row.content_hash:
                raise _Broken(seq, "content-hash", f"row {sk} plaintext does not hash to its content hash")
        elif row.holds_plaintext:
            raise _Broken(seq, "plaintext-after-forget", f"tombstoned row {sk} still holds plaintext")
        if entry.operation not in want:
            raise _Broken(
                seq, "row-receipt-mismatch", f"{row.state} row {sk} points at a {entry.operation} entry"
            )
        if vouch is not None and not isinstance(row, FileRow) and row.active and row.trust != "candidate":
            if not vouch.vouched(entry):
                raise _Broken(
                    seq,
                    "unvouched-belief",
                    f"belief {sk} was entered as a {entry.payload.get('trust') or 'belief'} under policy "
                    f"{vouch.policy_at(seq)} and no review approve covers its entry",
                )
    result.rows = len(rows)
    orphans = [seq for key, seq in latest.items() if seen.get(key, -1) < seq]
    result.orphans = sorted(orphans)
    versions = getattr(store, "all_versions", None)  # a store without ended versions has none
    if versions is not None:
        for version in versions(ref):
            _check_version(version, by_seq, start)


class _Vouching:
    """What accounts for beliefs, gathered while the entries are read: the ``policy`` entries (seq ->
    the policy from then on) and the entries a ``review`` approve covers."""

    def __init__(self, policy: str | None) -> None:
        self.changes: list[tuple[int, str | None]] = [(-1, policy)]
        self.approved: set[int] = set()

    def see(self, entry: Entry) -> None:
        if entry.operation == "policy":
            self.changes.append((entry.seq, review_rules.policy_of_hash(entry.content_hash) or "unknown"))
        elif entry.operation == "review" and entry.payload.get("decision") == "approve" and entry.covers:
            self.approved.add(entry.covers.seq)

    @property
    def policy_now(self) -> str | None:
        return self.changes[-1][1]

    def policy_at(self, seq: int) -> str | None:
        """The policy in force when the entry at ``seq`` was written (set by an earlier entry)."""
        return self.changes[bisect.bisect_left(self.changes, seq, key=lambda c: c[0]) - 1][1]

    def vouched(self, entry: Entry) -> bool:
        approved = entry.seq in self.approved
        return review_rules.vouched(entry.payload.get("trust"), self.policy_at(entry.seq), approved)


def _policy_at_start(store: Store, ref: PackageRef, witness: dict[str, Any] | None, start: int) -> str | None:
    """The policy in force at entry ``start``: none set at 0; the witness's (``review``) for an
    incremental run; else (a witness from before it carried one) the last ``policy`` entry before it."""
    if not start:
        return None
    if witness is not None and "review" in witness:
        return str(witness["review"]) if witness["review"] is not None else None
    policy: str | None = None
    for entry in store.entries(ref, 0, start):
        if entry.operation == "policy":
            policy = review_rules.policy_of_hash(entry.content_hash) or "unknown"
    return policy


def _check_version(v: VersionRow, by_seq: dict[int, Entry], start: int) -> None:
    """An ended version must hash to a remember/supersede entry of its memory, and the entry that
    ended it must be a supersede or invalidate covering that entry."""
    entry, end = by_seq.get(v.seq), by_seq.get(v.end_seq)
    if entry is None and not start:
        raise _Broken(
            v.seq, "row-without-receipt", f"version {v.key} names entry {v.seq}, not in the receipts"
        )
    if entry is not None and (
        entry.key != f"r#{v.id}"
        or entry.hash != v.entry_hash
        or entry.content_hash != v.content_hash
        or entry.operation not in ("remember", "supersede")
    ):
        raise _Broken(v.seq, "row-receipt-mismatch", f"version {v.key} does not match its receipt entry")
    if logcore.content_hash(v.record) != v.content_hash:
        raise _Broken(v.seq, "content-hash", f"version {v.key} plaintext does not hash to its content hash")
    if end is None and not start:
        raise _Broken(v.end_seq, "row-without-receipt", f"version {v.key} names end entry {v.end_seq}")
    if end is not None and (
        end.operation not in ("supersede", "invalidate") or end.covers is None or end.covers.seq != v.seq
    ):
        raise _Broken(v.end_seq, "row-receipt-mismatch", f"version {v.key} was not ended by its entry")


def verify_all(
    store: Store, publisher_id: str, incremental: bool = True, update_witness: bool = True
) -> list[VerifyResult]:
    """Verify every package that has a head item."""
    return [verify_package(store, ref, publisher_id, incremental, update_witness) for ref in store.packages()]
