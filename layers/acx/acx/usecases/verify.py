"""The one log verifier (scheduled function, API route and ``acx log verify``).

It recomputes every link and the Merkle root from the receipts, checks each live row's plaintext
against its content hash and against its receipt entry, requires the latest signed checkpoint to match
the recomputed head, and requires every new checkpoint to extend the last one it witnessed.

What it does not stop: the witness state lives in the heads table, so an attacker who can also rewrite
that item (and holds no signing key) is caught only by the signature and by an external copy of the
witness; an attacker holding the signing key can sign any consistent rewrite above the witnessed size.
Replacing a row by an *older* receipted version of itself looks like a crashed write and is reported
as an orphan, not as tampering.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from acx.core import log as logcore
from acx.core import merkle
from acx.core.checkpoint import CheckpointError, origin_for, verify_checkpoint

MAX_ORPHANS_REPORTED = 100


class Store(Protocol):
    """What the verifier needs from :class:`acx.adapters.log_store.LogStore`."""

    def head(self, tenant: str, package: str) -> dict[str, Any]: ...
    def entries(
        self, tenant: str, package: str, start: int = 0, end: int | None = None
    ) -> Iterator[dict[str, Any]]: ...
    def iter_rows(self, tenant: str, package: str, prefix: str = "r#") -> Iterator[dict[str, Any]]: ...
    def get_rows(self, tenant: str, package: str, keys: Any) -> dict[str, dict[str, Any]]: ...
    def latest_checkpoint(self, tenant: str, package: str) -> str | None: ...
    def verifier_key(self) -> str: ...
    def get_witness(self, tenant: str, package: str) -> dict[str, Any] | None: ...
    def put_witness(self, tenant: str, package: str, state: dict[str, Any]) -> bool: ...
    def packages(self) -> Iterator[tuple[str, str]]: ...


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


def _hex(value: Any) -> str:
    return bytes(value).hex() if isinstance(value, bytes | bytearray) else str(value)


def verify_package(
    store: Store, tenant: str, package: str, incremental: bool = False, update_witness: bool = True
) -> VerifyResult:
    """Verify one package's log; on ``ok`` advance the witness to the verified checkpoint."""
    from acx.adapters.log_store import CorruptStore  # the error type only; no boto3 use here

    started = time.perf_counter()
    result = VerifyResult(tenant, package, incremental=incremental)
    try:
        _verify(store, tenant, package, incremental, update_witness, result)
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
    store: Store, tenant: str, package: str, incremental: bool, update_witness: bool, result: VerifyResult
) -> None:
    chain = logcore.chain_key(tenant, package)
    witness = store.get_witness(tenant, package)
    w_size = int(witness["size"]) if witness else 0
    result.witness_size = w_size if witness else None
    start = w_size if incremental and witness else 0
    if start:
        assert witness is not None
        rng = merkle.CompactRange.from_hex(w_size, witness["range"])
        prev = witness["chainHead"]
        anchor = list(store.entries(tenant, package, start - 1, start))
        if not anchor:
            raise _Broken(start - 1, "truncated", f"witnessed entry {start - 1} is gone from the receipts")
        if anchor[0]["hash"] != prev:
            raise _Broken(start - 1, "witness-mismatch", "witnessed entry was rewritten")
    else:
        rng, prev = merkle.CompactRange(), logcore.GENESIS
    base = rng.copy()
    witnessed_range: merkle.CompactRange | None = base if start else None
    new_leaves: list[bytes] = []
    by_seq: dict[int, dict[str, Any]] = {}
    latest: dict[str, int] = {}
    expected_seq = start
    for entry in store.entries(tenant, package, start):
        seq = entry["seq"]
        if seq != expected_seq:
            raise _Broken(
                expected_seq, "sequence-gap", f"expected entry {expected_seq}, receipts jump to {seq}"
            )
        payload = entry["payload"]
        logcore.validate_payload(payload)
        if payload["chainKey"] != chain:
            raise _Broken(seq, "chain-key", "entry belongs to another chain")
        if entry["prevHash"] != prev:
            raise _Broken(seq, "link", "prevHash does not match the previous entry's hash")
        if logcore.entry_hash(prev, payload) != entry["hash"]:
            raise _Broken(seq, "entry-hash", "entry hash does not match its payload")
        if payload["operation"] == "forget":
            covered = by_seq.get(payload["covers"]["seq"])
            if covered is not None and covered["hash"] != payload["covers"]["hash"]:
                raise _Broken(seq, "covers", "forget entry covers a different entry")
        prev = entry["hash"]
        leaf = merkle.leaf_hash(bytes.fromhex(prev))
        rng.append_leaf_hash(leaf)
        new_leaves.append(leaf)
        by_seq[seq] = entry
        if entry.get("key"):
            latest[entry["key"]] = seq
        expected_seq += 1
        if witness and not start and rng.size == w_size:
            witnessed_range = rng.copy()
    size = expected_seq
    result.size, result.checked = size, size - start

    if size == 0:
        if any(True for _ in store.iter_rows(tenant, package, "r#")) or any(
            True for _ in store.iter_rows(tenant, package, "f#")
        ):
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

    head = store.head(tenant, package)
    if head["size"] != size or (size and (head["chainHead"] != prev or head["root"] != root.hex())):
        raise _Broken(
            min(head["size"], size), "head-mismatch", f"head says size {head['size']}, receipts give {size}"
        )

    text = store.latest_checkpoint(tenant, package)
    if size and text is None:
        raise _Broken(size - 1, "checkpoint-missing", "no signed checkpoint for a non-empty log")
    if text is not None:
        try:
            cp = verify_checkpoint(text, store.verifier_key())
        except CheckpointError as exc:
            raise _Broken(None, "checkpoint-signature", str(exc)) from None
        result.checkpoint_size = cp.size
        if cp.origin != origin_for(_publisher(store), tenant, package):
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

    _check_rows(store, tenant, package, start, by_seq, latest, result)

    if update_witness and size and text is not None and (not witness or size >= w_size):
        store.put_witness(
            tenant,
            package,
            {
                "size": size,
                "root": root.hex(),
                "chainHead": prev,
                "range": rng.to_hex(),
                "checkpoint": text,
                "verifiedAt": int(time.time()),
            },
        )


def _publisher(store: Store) -> str:
    settings = getattr(store, "settings", None)
    return str(getattr(settings, "publisher_id", "dev.acx.local"))


def _check_rows(
    store: Store,
    tenant: str,
    package: str,
    start: int,
    by_seq: dict[int, dict[str, Any]],
    latest: dict[str, int],
    result: VerifyResult,
) -> None:
    if start:  # incremental: only the rows the new entries point at
        items: list[dict[str, Any]] = list(store.get_rows(tenant, package, sorted(latest)).values())
    else:
        items = [*store.iter_rows(tenant, package, "r#"), *store.iter_rows(tenant, package, "f#")]
    seen: dict[str, int] = {}
    for item in items:
        sk = item["sk"]
        try:
            seq = int(item["seq"])
            row_ch = _hex(item["contentHash"])
            row_h = _hex(item["entryHash"])
        except (KeyError, TypeError, ValueError):
            from acx.adapters.log_store import CorruptStore

            raise CorruptStore(f"row {sk} lacks seq/contentHash/entryHash") from None
        seen[sk] = seq
        if start and seq < start:
            continue  # an older version: the new entry for it is an orphan (reported below)
        entry = by_seq.get(seq)
        if entry is None:
            raise _Broken(seq, "row-without-receipt", f"row {sk} names entry {seq}, which no receipt holds")
        if entry["hash"] != row_h or entry["payload"]["contentHash"] != row_ch or entry.get("key") != sk:
            raise _Broken(seq, "row-receipt-mismatch", f"row {sk} does not match its receipt entry")
        if sk.startswith("f#"):
            content = item.get("content")
            if not isinstance(content, str) or logcore.file_content_hash(sk[2:], content) != row_ch:
                raise _Broken(seq, "content-hash", f"file {sk} does not hash to its content hash")
        elif item.get("state") == "active":
            from acx.adapters.log_store import decompress

            record = decompress(item.get("body", b""))
            if logcore.content_hash(record) != row_ch:
                raise _Broken(seq, "content-hash", f"row {sk} plaintext does not hash to its content hash")
            if entry["payload"]["operation"] != "remember":
                raise _Broken(seq, "row-receipt-mismatch", f"active row {sk} points at a forget entry")
        elif item.get("state") == "tombstoned":
            if "body" in item or "tags" in item:
                raise _Broken(seq, "plaintext-after-forget", f"tombstoned row {sk} still holds plaintext")
            if entry["payload"]["operation"] != "forget":
                raise _Broken(seq, "row-receipt-mismatch", f"tombstoned row {sk} has no forget entry")
        else:
            from acx.adapters.log_store import CorruptStore

            raise CorruptStore(f"row {sk} has unknown state")
    result.rows = len(items)
    orphans = [seq for key, seq in latest.items() if seen.get(key, -1) < seq]
    result.orphans = sorted(orphans)


def verify_all(store: Store, incremental: bool = True, update_witness: bool = True) -> list[VerifyResult]:
    """Verify every package that has a head item."""
    return [verify_package(store, t, p, incremental, update_witness) for t, p in store.packages()]
