"""DynamoDB receipts, rows, heads and checkpoints: the ONLY code that writes the memory log.

Write protocol of one operation (``append`` / ``forget``):

1. read the head (size n, chain head, compact range, lock);
2. ONE TransactWriteItems: the head goes n -> n+k on condition ``size = n`` and no live lock held by
   someone else (the seq claim + a per-package lease), the receipt item(s) are put on condition of not
   existing, the signed checkpoint for n+k is put on condition of not existing (append-only), plus
   ConditionChecks on the rows and slot index items the caller saw (``expected``,
   ``expected_slots``). The receipt is durable before any row;
3. rows, slot index items, retired-row deletes (BatchWriteItem, 25 per call, retried);
4. release the lease (UpdateItem on condition we still own it).

The lease exists because rows land *after* the claim: without it, a second writer could pass its
ConditionChecks while the first writer's rows are still in flight and then overwrite them. A writer
renews its lease past half-life (only while it still holds it, unexpired), so a large operation on a
slow store keeps going; a writer whose lease ran out stops before its next row batch. The lease does
NOT stop a writer that is paused (GC, frozen Lambda) between that check and the batch call for longer
than ``lease_margin``; such a row
is still receipted and verifies, but may shadow a newer version (reported as an orphan entry).
"""

from __future__ import annotations

import base64
import itertools
import random
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from acx.config import Settings
from acx.core import canonical, merkle
from acx.core import log as logcore
from acx.core.checkpoint import Checkpoint, origin_for, sign_checkpoint, verifier_key_for
from acx.core.signing import Signer

SEQ_WIDTH = 12
MAX_ITEM_BYTES = 350_000  # under DynamoDB's 400 KB, leaving room for attribute names and keys
MAX_ENTRIES_PER_RECEIPT = 1500  # ~120 B per entry -> ~180 KB per receipt item
MAX_HISTORY = 32  # past slots / absorbed ids kept per row (most recent), tombstoned on forget
MAX_ENTRIES_PER_OPERATION = 6000  # several receipt items, one transaction, far below 4 MB
MAX_TX_ITEMS = 100
BATCH_WRITE = 25
BATCH_GET = 100


class LogStoreError(Exception):
    """Base of the store's errors."""


class Conflict(LogStoreError):
    """Another writer changed a row the caller based its merge on: re-read, re-merge, retry."""


class Contention(LogStoreError):
    """The package stayed locked or contended past the wait budget."""


class PackageLocked(LogStoreError):
    """An operator locked the package: writes are refused until it is unlocked (checked at the claim)."""


class LeaseExpired(LogStoreError):
    """This writer's lease ran out before all rows landed; the receipt stands, rows are orphans."""


class NotFound(LogStoreError):
    """No active record with that id or content hash."""


class CorruptStore(LogStoreError):
    """An item that cannot be decoded: never read as empty."""


@dataclass(frozen=True)
class AppendResult:
    from_seq: int
    to_seq: int
    size: int
    checkpoint: str


@dataclass(frozen=True)
class ForgetResult:
    record_id: str
    content_hash: str
    seq: int
    checkpoint: str
    covers: dict[str, Any]
    slot: str | None = None


@dataclass(frozen=True)
class Head:
    size: int
    chain_head: str
    range: merkle.CompactRange
    lock_owner: str | None = None
    lock_until: float = 0.0
    admin_locked: bool = False


# ---------------------------------------------------------------- attribute values (no TypeSerializer:
# it turns numbers into Decimal and binaries into wrappers; we want int and bytes)


def to_av(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bytes | bytearray):
        return {"B": bytes(value)}
    if isinstance(value, dict):
        return {"M": {k: to_av(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [to_av(v) for v in value]}
    raise TypeError(f"cannot store {type(value).__name__}")


def from_av(av: dict[str, Any]) -> Any:
    ((kind, value),) = av.items()
    if kind == "S":
        return value
    if kind == "N":
        return int(value) if value.lstrip("-").isdigit() else float(value)
    if kind == "B":
        return bytes(value)
    if kind == "BOOL":
        return bool(value)
    if kind == "NULL":
        return None
    if kind == "M":
        return {k: from_av(v) for k, v in value.items()}
    if kind == "L":
        return [from_av(v) for v in value]
    if kind == "SS":
        return sorted(value)
    raise CorruptStore(f"unexpected attribute type {kind}")


def to_item(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: to_av(v) for k, v in obj.items() if v is not None}


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    try:
        return {k: from_av(v) for k, v in item.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise CorruptStore(f"undecodable item: {exc}") from None


def pad(seq: int) -> str:
    return f"{seq:0{SEQ_WIDTH}d}"


def compress(record: dict[str, Any], canonical_json: bytes | None = None) -> bytes:
    """Row body: zlib of the canonical JSON (a ~1 KB record stays in one 1 KB write unit);
    ``canonical_json``: the record's canonical bytes, when the caller has them already."""
    return zlib.compress(canonical.dumps_record(record) if canonical_json is None else canonical_json, 9)


def decompress(body: bytes) -> dict[str, Any]:
    try:
        value = canonical.loads(zlib.decompress(body))
    except (zlib.error, canonical.CanonicalError) as exc:
        raise CorruptStore(f"row body does not decode: {exc}") from None
    if not isinstance(value, dict):
        raise CorruptStore("row body is not a JSON object")
    return value


def decode_receipt(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Entries of one receipt item as ``{seq, hash, prevHash, payload, key}`` (hex hashes)."""
    try:
        chain = item["chain"]
        prev = bytes(item["prev"]).hex()
        out: list[dict[str, Any]] = []
        for e in item["e"]:
            payload: dict[str, Any] = {
                "v": int(item["v"]),
                "actor": item["actor"],
                "chainKey": chain,
                "seq": int(e["s"]),
                "operation": e["o"],
                "tier": e["t"],
                "contentHash": bytes(e["c"]).hex(),
                "createdAt": item["at"],
            }
            if "cv" in e:
                payload["covers"] = {"seq": int(e["cv"]["s"]), "hash": bytes(e["cv"]["h"]).hex()}
            h = bytes(e["h"]).hex()
            out.append(
                {"seq": payload["seq"], "hash": h, "prevHash": prev, "payload": payload, "key": e.get("k")}
            )
            prev = h
        return out
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptStore(f"receipt {item.get('sk')} does not decode: {exc}") from None


def _now_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LogStore:
    """Receipts, rows, heads and checkpoints of every package, over a boto3 DynamoDB client."""

    def __init__(
        self,
        dynamodb_client: Any,
        settings: Settings,
        signer: Signer,
        key_name: str,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        lease_seconds: float = 30.0,
        lease_margin: float = 5.0,
        wait_budget: float = 60.0,
        hook: Callable[[str], None] | None = None,
    ) -> None:
        self.db = dynamodb_client
        self.settings = settings
        self.signer = signer
        self.key_name = key_name
        self.clock = clock
        self.sleep = sleep
        self.lease_seconds = lease_seconds
        self.lease_margin = lease_margin
        self.wait_budget = wait_budget
        # Fault injection: called with a boundary name ("after-receipt", "row-batch", "before-release").
        self.hook = hook or (lambda _point: None)
        self._vkey: str | None = None

    # ------------------------------------------------------------------ small helpers

    @staticmethod
    def pk(tenant: str, package: str) -> str:
        return f"{tenant}#{package}"

    def _key(self, pk: str, sk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": sk}}

    def verifier_key(self) -> str:
        """Signed-note verifier key of the checkpoint signer."""
        if self._vkey is None:
            self._vkey = verifier_key_for(self.key_name, self.signer)
        return self._vkey

    def _backoff(self, attempt: int) -> None:
        self.sleep(random.uniform(0, min(1.0, 0.01 * 2**attempt)))

    def _batch_get(
        self, table: str, pk: str, sks: Sequence[str], projection: Sequence[str] = ()
    ) -> dict[str, dict[str, Any]]:
        """BatchGetItem in chunks of 100, retrying UnprocessedKeys; returns sk -> decoded item."""
        out: dict[str, dict[str, Any]] = {}
        unique = sorted(set(sks))
        for i in range(0, len(unique), BATCH_GET):
            request: dict[str, Any] = {
                "Keys": [self._key(pk, sk) for sk in unique[i : i + BATCH_GET]],
                "ConsistentRead": True,
            }
            if projection:
                names = {f"#a{j}": name for j, name in enumerate(["sk", *projection])}
                request["ProjectionExpression"] = ", ".join(names)
                request["ExpressionAttributeNames"] = names
            pending: dict[str, Any] = {table: request}
            for attempt in range(12):
                resp = self.db.batch_get_item(RequestItems=pending)
                for item in resp.get("Responses", {}).get(table, []):
                    decoded = from_item(item)
                    out[decoded["sk"]] = decoded
                pending = resp.get("UnprocessedKeys") or {}
                if not pending:
                    break
                self._backoff(attempt)
            else:
                raise Contention("BatchGetItem kept returning UnprocessedKeys")
        return out

    def _batch_write(
        self,
        requests: Iterable[tuple[str, dict[str, Any]]],
        lease: tuple[str, str, float] | None = None,
    ) -> None:
        """BatchWriteItem 25 at a time across tables, retrying UnprocessedItems.

        ``requests`` may be a generator: only one batch of items is built at a time. ``lease`` =
        (pk, owner, until): before each batch the lease must still have ``lease_margin`` left; past its
        half-life it is renewed (only while still held), so a large operation on a slow store keeps it.
        """
        it = iter(requests)
        until = lease[2] if lease else 0.0
        while batch := list(itertools.islice(it, BATCH_WRITE)):
            if lease is not None:
                now = self.clock()
                if now > until - self.lease_seconds / 2:
                    until = self._renew(lease[0], lease[1], now, until)
                if self.clock() > until - self.lease_margin:
                    raise LeaseExpired("lease ran out before all rows landed")
            self.hook("row-batch")
            pending: dict[str, list[dict[str, Any]]] = {}
            for table, req in batch:
                pending.setdefault(table, []).append(req)
            for attempt in range(12):
                resp = self.db.batch_write_item(RequestItems=pending)
                pending = resp.get("UnprocessedItems") or {}
                if not pending:
                    break
                self._backoff(attempt)
            else:
                raise Contention("BatchWriteItem kept returning UnprocessedItems")

    def _query(
        self,
        table: str,
        pk: str,
        prefix: str | None = None,
        start: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        page_size: int | None = None,
        **extra: Any,
    ) -> Iterator[dict[str, Any]]:
        """Paginated Query on one partition, optionally on an sk prefix or from an exclusive start sk.

        ``limit`` stops after one page of that many items; ``page_size`` only bounds each page (a
        caller that stops early then reads about what it needs, not 1 MB per page).
        """
        names = {"#pk": "pk"}
        values: dict[str, Any] = {":pk": {"S": pk}}
        cond = "#pk = :pk"
        if prefix is not None:
            names["#sk"] = "sk"
            values[":pre"] = {"S": prefix}
            cond += " AND begins_with(#sk, :pre)"
        kwargs: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": cond,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ConsistentRead": True,
            "ScanIndexForward": forward,
            **extra,
        }
        if limit is not None or page_size is not None:
            kwargs["Limit"] = limit if limit is not None else page_size
        if start is not None:
            kwargs["ExclusiveStartKey"] = self._key(pk, start)
        while True:
            resp = self.db.query(**kwargs)
            for item in resp.get("Items", []):
                yield from_item(item)
            last = resp.get("LastEvaluatedKey")
            if not last or limit is not None:
                return
            kwargs["ExclusiveStartKey"] = last

    # ------------------------------------------------------------------ reads

    def _read_head(self, pk: str) -> Head:
        resp = self.db.get_item(
            TableName=self.settings.heads_table, Key=self._key(pk, "head"), ConsistentRead=True
        )
        if "Item" not in resp:
            return Head(0, logcore.GENESIS, merkle.CompactRange())
        item = from_item(resp["Item"])
        try:
            lock = item.get("lock") or {}
            if "size" not in item:  # only a lease, taken before the first claim of a new package
                return Head(
                    0,
                    logcore.GENESIS,
                    merkle.CompactRange(),
                    lock.get("owner"),
                    float(lock.get("until", 0)) / 1000,
                )
            return Head(
                int(item["size"]),
                item["chainHead"],
                merkle.CompactRange.from_hex(int(item["size"]), item["range"]),
                lock.get("owner"),
                float(lock.get("until", 0)) / 1000,
                bool((item.get("adminLock") or {}).get("locked", False)),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptStore(f"head item does not decode: {exc}") from None

    def head(self, tenant: str, package: str) -> dict[str, Any]:
        """``{size, chainHead, root}`` of a package (size 0 and the genesis hash when empty)."""
        h = self._read_head(self.pk(tenant, package))
        return {
            "size": h.size,
            "chainHead": h.chain_head,
            "root": h.range.root().hex(),
            "range": h.range.to_hex(),
        }

    def package_exists(self, tenant: str, package: str) -> bool:
        resp = self.db.get_item(
            TableName=self.settings.heads_table,
            Key=self._key(self.pk(tenant, package), "head"),
            ProjectionExpression="#s",
            ExpressionAttributeNames={"#s": "size"},
        )
        return "size" in resp.get("Item", {})

    def latest_checkpoint(self, tenant: str, package: str) -> str | None:
        for item in self._query(
            self.settings.heads_table, self.pk(tenant, package), prefix="cp#", forward=False, limit=1
        ):
            text = item.get("text")
            if not isinstance(text, str):
                raise CorruptStore("checkpoint item has no text")
            return text
        return None

    def checkpoint_at(self, tenant: str, package: str, size: int) -> str | None:
        resp = self.db.get_item(
            TableName=self.settings.heads_table,
            Key=self._key(self.pk(tenant, package), f"cp#{pad(size)}"),
            ConsistentRead=True,
        )
        return from_item(resp["Item"]).get("text") if "Item" in resp else None

    def get_item(self, table: str, tenant: str, package: str, sk: str) -> dict[str, Any] | None:
        """One decoded item (used by the verifier for witness state)."""
        resp = self.db.get_item(
            TableName=table, Key=self._key(self.pk(tenant, package), sk), ConsistentRead=True
        )
        return from_item(resp["Item"]) if "Item" in resp else None

    def get_witness(self, tenant: str, package: str) -> dict[str, Any] | None:
        """The verifier's last witnessed state of a package, if any."""
        return self.get_item(self.settings.heads_table, tenant, package, "witness")

    def put_witness(self, tenant: str, package: str, state: dict[str, Any]) -> bool:
        """Store verifier state; only ever moves forward (conditional on a smaller stored size)."""
        item = to_item({"pk": self.pk(tenant, package), "sk": "witness", **state})
        try:
            self.db.put_item(
                TableName=self.settings.heads_table,
                Item=item,
                ConditionExpression="attribute_not_exists(sk) OR #s <= :s",
                ExpressionAttributeNames={"#s": "size"},
                ExpressionAttributeValues={":s": {"N": str(state["size"])}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _row_view(self, item: dict[str, Any]) -> dict[str, Any]:
        try:
            state = item["state"]
            body = item.get("body")
            if state == "active" and not isinstance(body, bytes):
                raise CorruptStore(f"active row {item['sk']} has no body")
            return {
                "id": item["sk"][2:],
                "record": decompress(body) if isinstance(body, bytes) else None,
                "seq": int(item["seq"]),
                "contentHash": bytes(item["contentHash"]).hex(),
                "entryHash": bytes(item["entryHash"]).hex(),
                "slot": item.get("slot"),
                "zone": item.get("zone"),
                "cbf": item.get("cbf"),
                "state": state,
                "tags": item.get("tags") or [],
                "pastSlots": list(item.get("pastSlots") or []),
                "pastIds": list(item.get("pastIds") or []),
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStore(f"row {item.get('sk')} does not decode: {exc}") from None

    def lookup(
        self, tenant: str, package: str, ids: set[str], slots: set[str]
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, str | None]]:
        """Rows (any state) by id, active rows by slot key, and the record id each queried slot's index
        item names (None: no item; what ``append(expected_slots=...)`` checks). Point reads only."""
        pk = self.pk(tenant, package)
        table = self.settings.records_table
        got = self._batch_get(table, pk, [f"r#{i}" for i in ids] + [f"s#{s}" for s in slots])
        by_id = {sk[2:]: self._row_view(it) for sk, it in got.items() if sk.startswith("r#")}
        slot_ids = {sk[2:]: it.get("recordId") for sk, it in got.items() if sk.startswith("s#")}
        missing = {rid for rid in slot_ids.values() if isinstance(rid, str) and rid not in by_id}
        extra = self._batch_get(table, pk, [f"r#{r}" for r in missing]) if missing else {}
        for sk, it in extra.items():
            by_id.setdefault(sk[2:], self._row_view(it))
        by_slot: dict[str, dict[str, Any]] = {}
        for slot, rid in slot_ids.items():
            row = by_id.get(rid) if isinstance(rid, str) else None
            if row is not None and row["state"] == "active" and row["slot"] == slot:
                by_slot[slot] = row
        pointers = {slot: slot_ids.get(slot) for slot in slots}
        return {i: r for i, r in by_id.items() if i in ids}, by_slot, pointers

    def forgotten(
        self,
        tenant: str,
        package: str,
        ids: Sequence[str] = (),
        content_hashes: Sequence[str] = (),
        slots: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """Tombstones matching any of the ids, content hashes or slots (for the 409 refusal)."""
        sks = [f"t#id#{i}" for i in ids] + [f"t#{h}" for h in content_hashes] + [f"t#slot#{s}" for s in slots]
        got = self._batch_get(self.settings.records_table, self.pk(tenant, package), sks)
        return [{k: v for k, v in it.items() if k != "pk"} for _, it in sorted(got.items())]

    def list_active(
        self,
        tenant: str,
        package: str,
        zone: str | None = None,
        tag: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A page of active records in id order; the cursor is opaque (base64 of the last row key)."""
        if limit < 1:
            raise ValueError("limit must be >= 1")
        start = None
        if cursor:
            try:
                start = base64.urlsafe_b64decode(cursor.encode()).decode()
            except (ValueError, UnicodeDecodeError):
                raise ValueError("invalid cursor") from None
            if not start.startswith("r#"):
                raise ValueError("invalid cursor")
        out: list[dict[str, Any]] = []
        last: str | None = None
        pk = self.pk(tenant, package)
        for item in self._query(
            self.settings.records_table, pk, prefix="r#", start=start, page_size=min(limit + 1, 1000)
        ):
            last = item["sk"]
            if item.get("state") != "active":
                continue
            row = self._row_view(item)
            if zone is not None and row["zone"] != zone:
                continue
            if tag is not None and tag not in row["tags"]:
                continue
            out.append(row)
            if len(out) >= limit:
                return out, base64.urlsafe_b64encode(last.encode()).decode()
        return out, None

    def iter_active(self, tenant: str, package: str) -> Iterator[dict[str, Any]]:
        """Every active record (paginated reads), for export."""
        for item in self._query(self.settings.records_table, self.pk(tenant, package), prefix="r#"):
            if item.get("state") == "active":
                yield self._row_view(item)

    def iter_rows(self, tenant: str, package: str, prefix: str = "r#") -> Iterator[dict[str, Any]]:
        """Raw decoded items under a prefix (rows of any state, or files); used by the verifier."""
        yield from self._query(self.settings.records_table, self.pk(tenant, package), prefix=prefix)

    def get_rows(self, tenant: str, package: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Raw decoded record-table items by sort key (``r#id`` / ``f#path``); used by the verifier."""
        return self._batch_get(self.settings.records_table, self.pk(tenant, package), keys)

    def read_files(self, tenant: str, package: str) -> list[tuple[str, str]]:
        out = []
        for item in self._query(self.settings.records_table, self.pk(tenant, package), prefix="f#"):
            if not isinstance(item.get("content"), str):
                raise CorruptStore(f"file {item['sk']} has no content")
            out.append((item["sk"][2:], item["content"]))
        return out

    def receipt_items(self, tenant: str, package: str, start: int = 0) -> Iterator[dict[str, Any]]:
        """Receipt items in seq order, beginning with the one that holds entry ``start``."""
        pk = self.pk(tenant, package)
        table = self.settings.receipts_table
        first: str | None = None
        if start > 0:
            for item in self._query(table, pk, start=pad(start + 1), forward=False, limit=1):
                first = item["sk"]
                yield item
        yield from self._query(table, pk, start=first if first is not None else None)

    def entries(
        self, tenant: str, package: str, start: int = 0, end: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Entries ``[start, end)`` from the receipts: ``{seq, hash, prevHash, payload, key}``."""
        for item in self.receipt_items(tenant, package, start):
            for entry in decode_receipt(item):
                if entry["seq"] < start:
                    continue
                if end is not None and entry["seq"] >= end:
                    return
                yield entry

    def _leaf_hashes(self, tenant: str, package: str, size: int) -> list[bytes]:
        leaves = [merkle.leaf_hash(bytes.fromhex(e["hash"])) for e in self.entries(tenant, package, 0, size)]
        if len(leaves) != size:
            raise NotFound(f"log has {len(leaves)} entries, not {size}")
        return leaves

    def inclusion_proof(self, tenant: str, package: str, index: int, size: int) -> dict[str, Any]:
        leaves = self._leaf_hashes(tenant, package, size)
        proof = merkle.inclusion_proof(index, size, merkle.from_leaves(leaves))
        return {
            "index": index,
            "size": size,
            "leafHash": leaves[index].hex(),
            "proof": [p.hex() for p in proof],
        }

    def consistency_proof(self, tenant: str, package: str, m: int, n: int) -> dict[str, Any]:
        leaves = self._leaf_hashes(tenant, package, n)
        proof = merkle.consistency_proof(m, n, merkle.from_leaves(leaves))
        return {"from": m, "to": n, "proof": [p.hex() for p in proof]}

    def packages(self) -> Iterator[tuple[str, str]]:
        """(tenant, package) of every head item. A Scan of the heads table: for the scheduled verifier."""
        kwargs: dict[str, Any] = {
            "TableName": self.settings.heads_table,
            "FilterExpression": "#sk = :h",
            "ExpressionAttributeNames": {"#sk": "sk", "#pk": "pk"},
            "ExpressionAttributeValues": {":h": {"S": "head"}},
            "ProjectionExpression": "#pk",
        }
        while True:
            resp = self.db.scan(**kwargs)
            for item in resp.get("Items", []):
                tenant, _, package = item["pk"]["S"].partition("#")
                yield tenant, package
            if not resp.get("LastEvaluatedKey"):
                return
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    # ------------------------------------------------------------------ write path

    def _checkpoint(self, tenant: str, package: str, size: int, root: bytes, chain_head: str) -> str:
        cp = Checkpoint(origin_for(self.settings.publisher_id, tenant, package), size, root, chain_head)
        return sign_checkpoint(cp, self.key_name, self.signer)

    def _lock_free(self, head: Head, owner: str, now: float) -> bool:
        return head.lock_owner in (None, owner) or head.lock_until <= now

    def _head_update(
        self,
        pk: str,
        old: Head,
        new_size: int,
        chain_head: str,
        rng: merkle.CompactRange,
        owner: str,
        until: float,
        now: float,
        admin: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The seq claim: n -> n+k only if still n, no live lease of someone else, and (for writes) no
        operator lock. A lock/unlock entry (``admin``) moves the lock state in the same claim, so no
        write can claim a seq after a lock's entry."""
        update = "SET #size = :new, #ch = :ch, #rng = :rng, #lock = :lock"
        guard = ""
        extra_names: dict[str, str] = {"#adm": "adminLock"}
        extra_values: dict[str, Any] = {}
        if admin is not None:
            update += ", #adm = :adm"
            extra_values[":adm"] = to_av(admin)
        else:
            guard = " AND (attribute_not_exists(#adm) OR #adm.#locked = :false)"
            extra_names["#locked"] = "locked"
            extra_values[":false"] = {"BOOL": False}
        return {
            "Update": {
                "TableName": self.settings.heads_table,
                "Key": self._key(pk, "head"),
                "UpdateExpression": update,
                "ConditionExpression": (
                    "(attribute_not_exists(#size) AND :old = :zero OR #size = :old) AND "
                    "(attribute_not_exists(#lock) OR #lock.#owner = :me OR #lock.#until <= :now)" + guard
                ),
                "ExpressionAttributeNames": {
                    "#size": "size",
                    "#ch": "chainHead",
                    "#rng": "range",
                    "#lock": "lock",
                    "#owner": "owner",
                    "#until": "until",
                    **extra_names,
                },
                "ExpressionAttributeValues": {
                    **extra_values,
                    ":new": {"N": str(new_size)},
                    ":old": {"N": str(old.size)},
                    ":zero": {"N": "0"},
                    ":ch": {"S": chain_head},
                    ":rng": to_av(rng.to_hex()),
                    ":lock": to_av({"owner": owner, "until": int(until * 1000)}),
                    ":me": {"S": owner},
                    ":now": {"N": str(int(now * 1000))},
                },
            }
        }

    def _acquire(self, pk: str, head: Head, owner: str, now: float) -> float:
        """Take the lease without claiming seqs (used when the row checks do not fit one transaction)."""
        until = now + self.lease_seconds
        try:
            self.db.update_item(
                TableName=self.settings.heads_table,
                Key=self._key(pk, "head"),
                UpdateExpression="SET #lock = :lock",
                ConditionExpression=(
                    "(attribute_not_exists(#size) AND :old = :zero OR #size = :old) AND "
                    "(attribute_not_exists(#lock) OR #lock.#until <= :now)"
                ),
                ExpressionAttributeNames={"#size": "size", "#lock": "lock", "#until": "until"},
                ExpressionAttributeValues={
                    ":lock": to_av({"owner": owner, "until": int(until * 1000)}),
                    ":old": {"N": str(head.size)},
                    ":zero": {"N": "0"},
                    ":now": {"N": str(int(now * 1000))},
                },
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return 0.0
            raise
        return until

    def _renew(self, pk: str, owner: str, now: float, until: float) -> float:
        """Extend our lease to ``now + lease_seconds`` if we still hold it unexpired; else keep ``until``
        (the caller then stops: someone else may own the package by now)."""
        new = now + self.lease_seconds
        try:
            self.db.update_item(
                TableName=self.settings.heads_table,
                Key=self._key(pk, "head"),
                UpdateExpression="SET #lock.#until = :new",
                ConditionExpression="#lock.#owner = :me AND #lock.#until > :now",
                ExpressionAttributeNames={"#lock": "lock", "#owner": "owner", "#until": "until"},
                ExpressionAttributeValues={
                    ":me": {"S": owner},
                    ":new": {"N": str(int(new * 1000))},
                    ":now": {"N": str(int(now * 1000))},
                },
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return until
            raise
        return new

    def _release(self, pk: str, owner: str) -> None:
        self.hook("before-release")
        try:
            self.db.update_item(
                TableName=self.settings.heads_table,
                Key=self._key(pk, "head"),
                UpdateExpression="REMOVE #lock",
                ConditionExpression="#lock.#owner = :me",
                ExpressionAttributeNames={"#lock": "lock", "#owner": "owner"},
                ExpressionAttributeValues={":me": {"S": owner}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def _row_check(self, pk: str, sk: str, seen: tuple[str, Any]) -> dict[str, Any]:
        """ConditionCheck: item ``sk`` still has ``attr = value`` as read (value None: still absent)."""
        attr, value = seen
        cond: dict[str, Any] = {"TableName": self.settings.records_table, "Key": self._key(pk, sk)}
        if value is None:
            cond["ConditionExpression"] = "attribute_not_exists(sk)"
        else:
            cond["ConditionExpression"] = "#a = :v"
            cond["ExpressionAttributeNames"] = {"#a": attr}
            cond["ExpressionAttributeValues"] = {":v": to_av(value)}
        return {"ConditionCheck": cond}

    def _check_rows(self, pk: str, expected: dict[str, tuple[str, Any]]) -> bool:
        """The same checks as :meth:`_row_check`, by reading (when they do not fit one transaction)."""
        attrs = sorted({attr for attr, _ in expected.values()})
        got = self._batch_get(self.settings.records_table, pk, list(expected), attrs)
        for sk, (attr, value) in expected.items():
            item = got.get(sk)
            if (item.get(attr) if item else None) != value:
                return False
        return True

    def _receipt_items(
        self, pk: str, chain: str, actor: str, at: str, prev: str, entries: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        items = []
        for i in range(0, len(entries), MAX_ENTRIES_PER_RECEIPT):
            part = entries[i : i + MAX_ENTRIES_PER_RECEIPT]
            item = {
                "pk": pk,
                "sk": pad(part[0]["s"]),
                "v": logcore.VERSION,
                "chain": chain,
                "actor": actor,
                "at": at,
                "prev": bytes.fromhex(prev),
                "n": len(part),
                "e": part,
            }
            items.append(
                {
                    "Put": {
                        "TableName": self.settings.receipts_table,
                        "Item": to_item(item),
                        "ConditionExpression": "attribute_not_exists(sk)",
                    }
                }
            )
            prev = part[-1]["h"].hex()
        return items

    def _commit(
        self,
        tenant: str,
        package: str,
        actor: str,
        specs: list[dict[str, Any]],
        checks: dict[str, tuple[str, Any]],
        row_requests: Callable[[list[dict[str, Any]]], Iterable[tuple[str, dict[str, Any]]]],
    ) -> tuple[int, int, str, list[dict[str, Any]]]:
        """Claim seqs, put receipt + checkpoint, land rows, release. Returns (from, size, cp, entries)."""
        pk = self.pk(tenant, package)
        chain = logcore.chain_key(tenant, package)
        owner = uuid.uuid4().hex
        started = self.clock()
        n_receipts = -(-len(specs) // MAX_ENTRIES_PER_RECEIPT)
        fold = len(checks) + 2 + n_receipts <= MAX_TX_ITEMS
        attempt = 0
        while True:
            now = self.clock()
            if now - started > self.wait_budget:
                raise Contention(f"package {tenant}/{package} stayed busy for {self.wait_budget:.0f}s")
            head = self._read_head(pk)
            admin_op = specs[0]["op"] in ("lock", "unlock")
            if head.admin_locked and not admin_op:
                if head.lock_owner == owner:
                    self._release(pk, owner)
                raise PackageLocked(f"package {tenant}/{package} is locked by an operator")
            if not self._lock_free(head, owner, now):
                attempt += 1
                self._backoff(attempt)
                continue
            if checks and not fold and head.lock_owner != owner:
                if not self._acquire(pk, head, owner, now):
                    attempt += 1
                    self._backoff(attempt)
                    continue
                if not self._check_rows(pk, checks):
                    self._release(pk, owner)
                    raise Conflict("a row changed since it was read")
                continue  # re-read the head, now holding the lease
            at = _now_iso(now)
            until = now + self.lease_seconds
            prev = head.chain_head
            rng = head.range.copy()
            entries: list[dict[str, Any]] = []
            for i, spec in enumerate(specs):
                seq = head.size + i
                payload = logcore.make_payload(
                    actor=actor,
                    chain=chain,
                    seq=seq,
                    operation=spec["op"],
                    tier=spec["tier"],
                    content_hash=spec["contentHash"],
                    created_at=at,
                    covers=spec.get("covers"),
                )
                h = logcore.entry_hash(prev, payload)
                rng.append(bytes.fromhex(h))
                entry = {
                    "s": seq,
                    "o": spec["op"],
                    "t": spec["tier"],
                    "c": bytes.fromhex(spec["contentHash"]),
                    "h": bytes.fromhex(h),
                    "k": spec["key"],
                }
                if spec.get("covers"):
                    entry["cv"] = {"s": spec["covers"]["seq"], "h": bytes.fromhex(spec["covers"]["hash"])}
                entries.append(entry)
                prev = h
            size = head.size + len(specs)
            cp_text = self._checkpoint(tenant, package, size, rng.root(), prev)
            admin = None
            if admin_op:
                admin = {
                    "locked": specs[0]["op"] == "lock",
                    "seq": head.size,
                    "contentHash": specs[0]["contentHash"],
                }
            items = [self._head_update(pk, head, size, prev, rng, owner, until, now, admin)]
            items += self._receipt_items(pk, chain, actor, at, head.chain_head, entries)
            items.append(
                {
                    "Put": {
                        "TableName": self.settings.heads_table,
                        "Item": to_item({"pk": pk, "sk": f"cp#{pad(size)}", "size": size, "text": cp_text}),
                        "ConditionExpression": "attribute_not_exists(sk)",
                    }
                }
            )
            n_fixed = len(items)
            if fold:
                items += [self._row_check(pk, sk, seen) for sk, seen in sorted(checks.items())]
            try:
                self.hook("before-claim")
                self.db.transact_write_items(TransactItems=items)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "TransactionCanceledException":
                    raise
                reasons = exc.response.get("CancellationReasons") or []
                failed = [i for i, r in enumerate(reasons) if r.get("Code") not in (None, "None")]
                if any(i >= n_fixed for i in failed) and not any(i < n_fixed for i in failed):
                    raise Conflict("a row changed since it was read") from None
                attempt += 1
                self._backoff(attempt)
                continue
            break
        self.hook("after-receipt")
        self._batch_write(row_requests(entries), (pk, owner, until))
        self._release(pk, owner)
        return head.size, size, cp_text, entries

    def append(
        self,
        tenant: str,
        package: str,
        actor: str,
        writes: list[dict[str, Any]],
        retired: Sequence[str] = (),
        files: Sequence[tuple[str, str]] = (),
        expected: dict[str, int | None] | None = None,
        expected_slots: dict[str, str | None] | None = None,
    ) -> AppendResult:
        """One write operation: receipt first, then rows. See the module docstring for the protocol.

        ``writes``: ``{"record": dict, "slot": str, "id"?, "zone"?, "cbf"?, "tags"?}``; ``retired``: ids
        whose rows are removed because a survivor absorbed them; ``files``: (path, content).
        ``expected``: id -> seq seen at lookup (None = absent); ``expected_slots``: slot -> record id of
        its index item seen at lookup (None = absent), so two writers cannot both fill one empty slot;
        any difference raises :class:`Conflict`
        before the receipt is written. Operations over ``MAX_ENTRIES_PER_OPERATION`` are split in several.
        """
        if not writes and not files:
            raise ValueError("an operation must write at least one record or file")
        rows = [self._prepare(w) for w in writes]
        specs = [
            {"op": "remember", "tier": r["zone"], "contentHash": r["contentHash"], "key": f"r#{r['id']}"}
            for r in rows
        ]
        file_rows = []
        for path, content in files:
            ch = logcore.file_content_hash(path, content)
            specs.append({"op": "remember", "tier": "file", "contentHash": ch, "key": f"f#{path}"})
            file_rows.append((path, content, ch))
        if len({s["key"] for s in specs}) != len(specs):
            raise ValueError("an operation writes each record id and file path at most once")
        if len({r["slot"] for r in rows}) != len(rows) or {r["id"] for r in rows} & set(retired):
            raise ValueError("writes must have distinct slots, and a retired id cannot be written")
        by_key: dict[str, Any] = {f"r#{r['id']}": r for r in rows}
        by_key.update((f"f#{path}", (path, content)) for path, content, _ in file_rows)
        checks: dict[str, tuple[str, Any]] = {
            f"r#{rid}": ("seq", seq) for rid, seq in (expected or {}).items()
        }
        # A slot check travels with the part that writes that slot (the first part otherwise).
        slot_part = {r["slot"]: i - i % MAX_ENTRIES_PER_OPERATION for i, r in enumerate(rows)}
        for slot, rid in (expected_slots or {}).items():
            checks[f"s#{slot}"] = ("recordId", rid)
        first: int | None = None
        last_size = 0
        cp = ""
        for i in range(0, len(specs), MAX_ENTRIES_PER_OPERATION):
            part = specs[i : i + MAX_ENTRIES_PER_OPERATION]
            keys = {s["key"] for s in part}
            part_checks = {
                sk: seen
                for sk, seen in checks.items()
                if sk in keys or (sk.startswith("s#") and slot_part.get(sk[2:], 0) == i)
            }
            if i == 0:
                part_checks |= {f"r#{rid}": checks[f"r#{rid}"] for rid in retired if f"r#{rid}" in checks}

            def requests(entries: list[dict[str, Any]], lo: int = i) -> Iterator[tuple[str, dict[str, Any]]]:
                return self._row_requests(tenant, package, by_key, entries, retired if lo == 0 else ())

            start, last_size, cp, _ = self._commit(tenant, package, actor, part, part_checks, requests)
            first = start if first is None else first
        assert first is not None
        return AppendResult(first, last_size - 1, last_size, cp)

    def _prepare(self, write: dict[str, Any]) -> dict[str, Any]:
        record = write["record"]
        if not isinstance(record, dict):
            raise ValueError("write.record must be an object")
        rid = write.get("id", record.get("id"))
        slot = write.get("slot")
        if not isinstance(rid, str) or not rid or not isinstance(slot, str) or not slot:
            raise ValueError("a write needs a record id and a slot key")
        zone = write.get("zone") or ("rom" if record.get("portable") is True else "save")
        canonical_json = canonical.dumps_record(record)  # once, for the body and the content hash
        body = compress(record, canonical_json)
        if len(body) > MAX_ITEM_BYTES:
            raise ValueError(f"record {rid} is too large to store")
        tags = write.get("tags", record.get("tags")) or []
        return {
            "id": rid,
            "slot": slot,
            "zone": zone,
            "cbf": write.get("cbf", record.get("codebaseFingerprint")),
            "tags": [t for t in tags if isinstance(t, str)],
            "body": body,
            "contentHash": logcore.canonical_content_hash(canonical_json),
            "pastSlots": [x for x in write["pastSlots"] if x != slot][-MAX_HISTORY:]
            if "pastSlots" in write
            else (),
            "pastIds": [x for x in write["pastIds"] if x != rid][-MAX_HISTORY:] if "pastIds" in write else (),
        }

    def _row_requests(
        self,
        tenant: str,
        package: str,
        by_key: dict[str, Any],
        entries: list[dict[str, Any]],
        retired: Sequence[str],
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The items of one operation's entries (row + slot index per record, one per file), built
        lazily: only the batch being sent exists at once, whatever the operation's size."""
        pk = self.pk(tenant, package)
        table = self.settings.records_table
        for e in entries:
            target = by_key[e["k"]]
            if isinstance(target, tuple):  # a knowledge or skill file
                path, content = target
                item = {
                    "pk": pk,
                    "sk": f"f#{path}",
                    "seq": e["s"],
                    "contentHash": e["c"],
                    "entryHash": e["h"],
                    "content": content,
                }
                yield table, {"PutRequest": {"Item": to_item(item)}}
                continue
            r = target
            item = {
                "pk": pk,
                "sk": f"r#{r['id']}",
                "seq": e["s"],
                "contentHash": e["c"],
                "entryHash": e["h"],
                "slot": r["slot"],
                "zone": r["zone"],
                "cbf": r["cbf"],
                "state": "active",
                "body": r["body"],
                "tags": r["tags"] or None,
                "pastSlots": r["pastSlots"] or None,
                "pastIds": r["pastIds"] or None,
            }
            yield table, {"PutRequest": {"Item": to_item(item)}}
            yield (
                table,
                {"PutRequest": {"Item": to_item({"pk": pk, "sk": f"s#{r['slot']}", "recordId": r["id"]})}},
            )
        for rid in retired:  # a retired row's slot item is overwritten by its survivor's (same slot)
            yield table, {"DeleteRequest": {"Key": self._key(pk, f"r#{rid}")}}

    def _find_active(
        self, tenant: str, package: str, record_id: str | None, content_hash: str | None
    ) -> dict[str, Any]:
        pk = self.pk(tenant, package)
        if record_id is not None:
            got = self._batch_get(self.settings.records_table, pk, [f"r#{record_id}"])
            item = got.get(f"r#{record_id}")
            if (
                item
                and item.get("state") == "active"
                and (content_hash is None or bytes(item["contentHash"]).hex() == content_hash)
            ):
                return item
            raise NotFound("no active record with that id")
        if content_hash is None:
            raise ValueError("forget needs a record id or a content hash")
        # No index by content hash: a filtered Query over this package's rows (forget is rare).
        want = bytes.fromhex(content_hash)
        for item in self._query(self.settings.records_table, pk, prefix="r#"):
            if item.get("state") == "active" and item.get("contentHash") == want:
                return item
        raise NotFound("no active record with that content hash")

    def forget(
        self,
        tenant: str,
        package: str,
        actor: str,
        record_id: str | None = None,
        content_hash: str | None = None,
    ) -> ForgetResult:
        """Receipt a ``forget`` entry covering the record's entry, then erase its plaintext, tombstone it."""
        for _ in range(10):
            item = self._find_active(tenant, package, record_id, content_hash)
            rid = item["sk"][2:]
            ch = bytes(item["contentHash"]).hex()
            covers: dict[str, Any] = {"seq": int(item["seq"]), "hash": bytes(item["entryHash"]).hex()}
            spec = {
                "op": "forget",
                "tier": item.get("zone") or "save",
                "contentHash": ch,
                "key": f"r#{rid}",
                "covers": covers,
            }
            pk = self.pk(tenant, package)

            def requests(
                entries: list[dict[str, Any]],
                item: dict[str, Any] = item,
                rid: str = rid,
                ch: str = ch,
                pk: str = pk,
                covers: dict[str, Any] = covers,
            ) -> list[tuple[str, dict[str, Any]]]:
                e = entries[0]
                table = self.settings.records_table
                slot = item.get("slot")
                row = {
                    "pk": pk,
                    "sk": f"r#{rid}",
                    "seq": e["s"],
                    "contentHash": e["c"],
                    "entryHash": e["h"],
                    "slot": slot,
                    "zone": item.get("zone"),
                    "cbf": item.get("cbf"),
                    "state": "tombstoned",
                    "forgottenSeq": covers["seq"],
                }
                stone = {"contentHash": ch, "recordId": rid, "seq": e["s"]}
                out = [
                    (table, {"PutRequest": {"Item": to_item(row)}}),
                    (table, {"PutRequest": {"Item": to_item({"pk": pk, "sk": f"t#{ch}", **stone})}}),
                ]
                # Older versions of the memory (past slots) and ids folded into it are refused too.
                ids = dict.fromkeys([rid, *(item.get("pastIds") or [])])
                slots = dict.fromkeys([*([slot] if slot else []), *(item.get("pastSlots") or [])])
                for key in [*(f"t#id#{i}" for i in ids), *(f"t#slot#{x}" for x in slots)]:
                    out.append((table, {"PutRequest": {"Item": to_item({"pk": pk, "sk": key, **stone})}}))
                for x in slots:
                    out.append((table, {"DeleteRequest": {"Key": self._key(pk, f"s#{x}")}}))
                return out

            try:
                start, _, cp, _ = self._commit(
                    tenant, package, actor, [spec], {f"r#{rid}": ("seq", covers["seq"])}, requests
                )
            except Conflict:
                continue  # the row changed under us: look again (it may now be gone -> NotFound)
            return ForgetResult(rid, ch, start, cp, covers, item.get("slot"))
        raise Contention("record kept changing while forgetting it")

    # ------------------------------------------------------------------ operator lock (scope admin)
    #
    # The state lives on the head item as ``adminLock = {locked, seq, contentHash}`` (an attribute
    # apart from the writers' lease ``lock``, which every claim SETs and every release REMOVEs). A
    # ``lock``/``unlock`` entry is receipted through ``_commit`` like any write, and its seq claim sets
    # the state in the same transaction; every other claim is conditional on "not locked", so no write
    # can take a seq after a lock entry (a writer that read the head before the lock fails its claim,
    # re-reads and gets PackageLocked). The entries have no row key, so the verifier neither expects a
    # row for them nor reports them as orphans.

    ADMIN_LOCK_ATTR = "adminLock"

    def admin_lock(self, tenant: str, package: str) -> dict[str, Any] | None:
        """``{locked, seq, contentHash}`` of the package's operator lock, or None if never set (one read)."""
        resp = self.db.get_item(
            TableName=self.settings.heads_table,
            Key=self._key(self.pk(tenant, package), "head"),
            ProjectionExpression="#a",
            ExpressionAttributeNames={"#a": self.ADMIN_LOCK_ATTR},
            ConsistentRead=True,
        )
        raw = resp.get("Item", {}).get(self.ADMIN_LOCK_ATTR)
        if raw is None:
            return None
        state = from_av(raw)
        if not isinstance(state, dict) or not isinstance(state.get("locked"), bool):
            raise CorruptStore("head lock state does not decode")
        return state

    def set_admin_lock(
        self, tenant: str, package: str, actor: str, locked: bool, content_hash: str
    ) -> AppendResult:
        """Receipt one ``lock``/``unlock`` entry (hashes only); its seq claim moves the head's lock state."""
        op = "lock" if locked else "unlock"
        spec = {"op": op, "tier": "package", "contentHash": content_hash, "key": None}

        def requests(entries: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
            return []  # the lock state moved with the seq claim (see _head_update): no row to land

        start, size, cp, _ = self._commit(tenant, package, actor, [spec], {}, requests)
        return AppendResult(start, size - 1, size, cp)
