"""Rows, slot index, files and tombstones of a package (RecordsTable), as typed values.

Items: ``r#<id>`` memory rows (the current version), ``v#<id>#<seq>`` ended versions of a memory
(superseded or invalidated: kept for history and as-of reads, deleted by its forget; on the package key,
as they are few), ``s#<slot>`` -> record id, ``f#<path>`` files, and tombstones of keyed
hashes only (see :mod:`acx.core.forgetting`): ``t#k#<knowledge key>``, ``t#i#<id key>``, ``t#f#<file
key>`` and the near-copy bands ``t#n#<band key>`` (each a map of tombstone -> sketch, forget seq).

**Write sharding.** One partition key serves at most 1,000 WCU/s (DynamoDB's per-partition limit,
which adaptive capacity does not lift), and a record costs a row plus a slot item. So a package's
``r#`` and ``s#`` items are spread over ``rowShards`` partition keys: shard ``i`` is ``<tenant>#<package>``
for ``i = 0`` and ``<tenant>#<package>#<i>`` otherwise (a package id holds no ``#``, so no other
package's key can collide), ``i`` = first 4 bytes of sha256(id or slot) mod ``rowShards``. Files,
tombstones, receipts, checkpoints and the lease stay on the package key. ``rowShards`` is written on
the head item by the package's first claim and never changes; a package created before sharding has
none and reads as one shard (everything on the package key, as before). Reads by key go to the one
shard; listings query every shard and merge by sort key, so pages and cursors are what they were.

One module: row, slot, file and tombstone items share one key and shard layout and
one item codec, and the read and the write half of each must agree on them.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from acx.adapters.dynamo import (
    BARRIER,
    BATCH_WRITE,
    CorruptStore,
    Dynamo,
    compress,
    decompress,
    inflate,
    key,
    pad,
    to_item,
)
from acx.core import erasure, forgetting
from acx.core import log as logcore
from acx.core.package import PackageRef
from acx.core.rows import (
    FileRow,
    FileWrite,
    ListedRecord,
    LogRow,
    Lookup,
    RecordWrite,
    Tombstones,
    VersionRow,
    version_key,
)

MAX_ITEM_BYTES = 350_000  # under DynamoDB's 400 KB, leaving room for attribute names and keys
MAX_HISTORY = 32  # past slots / absorbed ids / their keys kept per row (most recent)

DEFAULT_ROW_SHARDS = 8  # 8 x 1,000 WCU/s: above what one serial writer sends (docs/ARCHITECTURE.md)
MAX_ROW_SHARDS = 64
SHARDED = ("r#", "s#")  # the sort-key prefixes spread over shards

Request = tuple[str, dict[str, Any]]


def shard_of(name: str, shards: int) -> int:
    """The shard of a record id or slot key (stable: derived from the name alone)."""
    if shards <= 1:
        return 0
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") % shards


def shard_pk(pk: str, shard: int) -> str:
    return pk if shard == 0 else f"{pk}#{shard}"


class ShardLayout:
    """How many partition keys a package's rows and slot items use: the head item's ``rowShards``
    (heads table), cached per process once the package exists (it never changes after that)."""

    def __init__(self, client: Any, heads_table: str, cache_size: int = 10_000) -> None:
        self.client = client
        self.heads_table = heads_table
        self.cache_size = cache_size
        self._cache: OrderedDict[str, int] = OrderedDict()

    def count(self, ref: PackageRef) -> int:
        got = self._cache.get(ref.pk)
        if got is not None:
            self._cache.move_to_end(ref.pk)
            return got
        resp = self.client.get_item(
            TableName=self.heads_table,
            Key=key(ref.pk, "head"),
            ProjectionExpression="#s, #r",
            ExpressionAttributeNames={"#s": "size", "#r": "rowShards"},
            ConsistentRead=True,
        )
        item = resp.get("Item") or {}
        if "rowShards" in item:
            n = int(item["rowShards"]["N"])
            if not 1 <= n <= MAX_ROW_SHARDS:
                raise CorruptStore(f"head item has rowShards {n}")
        elif "size" in item:
            n = 1  # created before sharding: every row on the package key
        else:
            return 1  # no package yet (nothing to read); its first claim fixes the count
        self.remember(ref, n)
        return n

    def remember(self, ref: PackageRef, n: int) -> None:
        """Keep the count of an existing package, read from its head item by another read."""
        if not 1 <= n <= MAX_ROW_SHARDS:
            raise CorruptStore(f"head item has rowShards {n}")
        self._cache[ref.pk] = n
        self._cache.move_to_end(ref.pk)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def pks(self, ref: PackageRef) -> list[str]:
        """Every partition key holding the package's rows and slot items (shard 0 first)."""
        return [shard_pk(ref.pk, i) for i in range(self.count(ref))]

    def pk_for(self, ref: PackageRef, sk: str, shards: int | None = None) -> str:
        """The partition key of item ``sk`` (``r#``/``s#`` on its shard, anything else on the package key)."""
        if not sk.startswith(SHARDED):
            return ref.pk
        n = self.count(ref) if shards is None else shards
        return shard_pk(ref.pk, shard_of(sk[2:], n))


@dataclass(frozen=True)
class PreparedRow:
    """A write with its stored body and content hash computed once."""

    write: RecordWrite
    body: bytes
    content_hash: str


def _hex(value: Any) -> str:
    return bytes(value).hex()


def prepare(write: RecordWrite) -> PreparedRow:
    canonical_json = logcore.dumps_record(write.record)  # once, for the body and the content hash
    body = compress(write.record, canonical_json)
    if len(body) > MAX_ITEM_BYTES:
        raise ValueError(f"record {write.id} is too large to store")
    return PreparedRow(write, body, logcore.canonical_content_hash(canonical_json))


def decode_row(item: dict[str, Any]) -> LogRow:
    try:
        state = item["state"]
        body = item.get("body")
        if state == "active" and not isinstance(body, bytes):
            raise CorruptStore(f"active row {item['sk']} has no body")
        if state not in ("active", "ended", "tombstoned"):
            raise CorruptStore(f"row {item['sk']} has unknown state")
        return LogRow(
            id=item["sk"][2:],
            seq=int(item["seq"]),
            content_hash=_hex(item["contentHash"]),
            entry_hash=_hex(item["entryHash"]),
            state=state,
            record=decompress(body) if isinstance(body, bytes) and state == "active" else None,
            slot=item.get("slot"),
            zone=item.get("zone"),
            cbf=item.get("cbf"),
            tags=[t for t in item.get("tags") or [] if isinstance(t, str)],
            past_slots=list(item.get("pastSlots") or []),
            past_ids=list(item.get("pastIds") or []),
            knowledge=item.get("kk"),
            past_keys=list(item.get("pastKeys") or []),
            forgotten_seq=item.get("forgottenSeq"),
            forget_op=(int(item["forgetOp"][0]), int(item["forgetOp"][1])) if item.get("forgetOp") else None,
            holds_plaintext="body" in item or "tags" in item,
            trust=item.get("trust") or "belief",
            actor=item.get("actor"),
            agent=item.get("agent"),
            reviewer=item.get("reviewer"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptStore(
            f"row {item.get('sk')} lacks or mangles seq/contentHash/entryHash: {exc}"
        ) from None


def decode_version(item: dict[str, Any]) -> VersionRow:
    try:
        sk = item["sk"]
        body = item["body"]
        if not isinstance(body, bytes):
            raise TypeError("no body")
        return VersionRow(
            id=sk[2:-13],
            seq=int(item["seq"]),
            content_hash=_hex(item["contentHash"]),
            entry_hash=_hex(item["entryHash"]),
            record=decompress(body),
            end_seq=int(item["endSeq"]),
            zone=item.get("zone"),
            knowledge=item.get("kk"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptStore(f"version {item.get('sk')} does not decode: {exc}") from None


def decode_file(item: dict[str, Any]) -> FileRow:
    try:
        state = item.get("state", "active")
        content = item.get("content")
        if state == "active" and not isinstance(content, str):
            raise CorruptStore(f"file {item['sk']} has no content")
        return FileRow(
            path=item["sk"][2:],
            seq=int(item["seq"]),
            content_hash=_hex(item["contentHash"]),
            entry_hash=_hex(item["entryHash"]),
            state=state,
            content=content if isinstance(content, str) else None,
            file_key=item.get("fk"),
            forgotten_seq=item.get("forgottenSeq"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptStore(f"file {item.get('sk')} does not decode: {exc}") from None


class RowStore:
    def __init__(self, db: Dynamo, table: str, layout: ShardLayout) -> None:
        self.db = db
        self.table = table
        self.layout = layout

    def _get_many(
        self, ref: PackageRef, sks: Sequence[str], projection: Sequence[str] = ()
    ) -> dict[str, dict[str, Any]]:
        """Point reads of sort keys, each on its shard; returns sk -> decoded item."""
        n = self.layout.count(ref)
        keys = [(self.layout.pk_for(ref, sk, n), sk) for sk in sks]
        return {sk: it for (_, sk), it in self.db.batch_get_keys(self.table, keys, projection).items()}

    def _query(self, ref: PackageRef, prefix: str, after: str | None = None, **extra: Any) -> Iterator[dict]:
        """A prefix Query over every shard, merged in sort-key order (one shard: one plain Query)."""
        pks = self.layout.pks(ref)
        if len(pks) == 1:
            if after is not None:
                return self.db.query(self.table, pks[0], prefix=prefix, after=after, **extra)
            return self.db.query(self.table, pks[0], prefix=prefix, **extra)
        streams = [self.db.query(self.table, pk, prefix=prefix, after=after, **extra) for pk in pks]
        return heapq.merge(*streams, key=lambda item: item["sk"])

    # ------------------------------------------------------------------ reads

    def lookup(self, ref: PackageRef, ids: set[str], slots: set[str]) -> Lookup:
        """Rows (any state) by id, active rows by slot key, and slot pointers. Point reads only."""
        got = self._get_many(ref, [f"r#{i}" for i in ids] + [f"s#{s}" for s in slots])
        by_id = {sk[2:]: decode_row(it) for sk, it in got.items() if sk.startswith("r#")}
        slot_ids = {sk[2:]: it.get("recordId") for sk, it in got.items() if sk.startswith("s#")}
        missing = {rid for rid in slot_ids.values() if isinstance(rid, str) and rid not in by_id}
        extra = self._get_many(ref, [f"r#{r}" for r in missing]) if missing else {}
        for sk, it in extra.items():
            by_id.setdefault(sk[2:], decode_row(it))
        by_slot: dict[str, LogRow] = {}
        for slot, rid in slot_ids.items():
            row = by_id.get(rid) if isinstance(rid, str) else None
            if row is not None and row.active and row.slot == slot:
                by_slot[slot] = row
        pointers = {slot: slot_ids.get(slot) for slot in slots}
        return Lookup({i: r for i, r in by_id.items() if i in ids}, by_slot, pointers)

    def active_records(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The records of the ids whose rows are active: point reads of state and body only (what a
        search result shows; a tombstoned or absent row is simply not in the answer)."""
        got = self._get_many(ref, [f"r#{i}" for i in ids], ("state", "body"))  # each on its shard
        return {
            sk[2:]: decompress(it["body"])
            for sk, it in got.items()
            if it.get("state") == "active" and isinstance(it.get("body"), bytes)
        }

    def active_listed(self, ref: PackageRef, ids: Iterable[str]) -> dict[str, ListedRecord]:
        """:meth:`active_records` with each record's trust state and author (what a search result
        carries): point reads of state, body, trust, actor and agent."""
        got = self._get_many(ref, [f"r#{i}" for i in ids], ("state", "body", "trust", "actor", "agent"))
        return {
            sk[2:]: ListedRecord(
                sk[2:], inflate(it["body"]), it.get("trust") or "belief", it.get("actor"), it.get("agent")
            )
            for sk, it in got.items()
            if it.get("state") == "active" and isinstance(it.get("body"), bytes)
        }

    def active_ids(self, ref: PackageRef, ids: Iterable[str]) -> set[str]:
        """Which of the ids have an active row (point reads of the state only)."""
        got = self._get_many(ref, [f"r#{i}" for i in ids], ("state",))
        return {sk[2:] for sk, it in got.items() if it.get("state") == "active"}

    def unchanged(self, ref: PackageRef, seqs: dict[str, int | None], slots: dict[str, str | None]) -> bool:
        """Do the rows and slot items still read as the writer saw them (run under the lease)?"""
        want = {f"r#{i}": ("seq", s) for i, s in seqs.items()} | {
            f"s#{s}": ("recordId", r) for s, r in slots.items()
        }
        if not want:
            return True
        got = self._get_many(ref, list(want), ("seq", "recordId", "state"))
        for sk, (attr, value) in want.items():
            item = got.get(sk)
            if item is not None and sk.startswith("r#") and item.get("state") != "active":
                item = None  # a forgotten row reads as absent (what the writer's lookup saw)
            if (item.get(attr) if item else None) != value:
                return False
        return True

    def get(self, ref: PackageRef, record_id: str) -> LogRow | None:
        sk = f"r#{record_id}"
        item = self.db.get(self.table, self.layout.pk_for(ref, sk), sk)
        return decode_row(item) if item else None

    def get_file(self, ref: PackageRef, path: str) -> FileRow | None:
        item = self.db.get(self.table, ref.pk, f"f#{path}")
        return decode_file(item) if item else None

    def rows(self, ref: PackageRef, **extra: Any) -> Iterator[LogRow]:
        """Every memory row, any state (paginated, every shard, in id order)."""
        for item in self._query(ref, "r#", **extra):
            yield decode_row(item)

    def files(self, ref: PackageRef) -> Iterator[FileRow]:
        for item in self.db.query(self.table, ref.pk, prefix="f#"):
            yield decode_file(item)

    def by_keys(self, ref: PackageRef, keys: Sequence[str]) -> list[LogRow | FileRow]:
        got = self._get_many(ref, keys)
        return [decode_file(it) if sk.startswith("f#") else decode_row(it) for sk, it in sorted(got.items())]

    def iter_active(self, ref: PackageRef) -> Iterator[LogRow]:
        for item in self._query(ref, "r#"):
            if item.get("state") == "active":
                yield decode_row(item)

    def with_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        """Rows not forgotten (active or ended) whose text (or an older version folded into them) has
        this knowledge key.

        A filtered Query over the package's rows: O(package), run by forget only (rare)."""
        return list(
            self.rows(
                ref,
                FilterExpression="#st IN (:active, :ended) AND (#kk = :k OR contains(#pk2, :k))",
                ExpressionAttributeNames={"#st": "state", "#kk": "kk", "#pk2": "pastKeys"},
                ExpressionAttributeValues={
                    ":active": {"S": "active"},
                    ":ended": {"S": "ended"},
                    ":k": {"S": knowledge},
                },
            )
        )

    def with_version_knowledge(self, ref: PackageRef, knowledge: str) -> list[LogRow]:
        """Rows not forgotten whose ended versions have this knowledge key (a forget of that knowledge
        erases those memories whole). A filtered Query over the package's ended versions (few)."""
        ids: set[str] = set()
        for item in self.db.query(
            self.table,
            ref.pk,
            prefix="v#",
            FilterExpression="#kk = :k",
            ExpressionAttributeNames={"#kk": "kk"},
            ExpressionAttributeValues={":k": {"S": knowledge}},
        ):
            ids.add(decode_version(item).id)
        rows = [self.get(ref, rid) for rid in sorted(ids)]
        return [r for r in rows if r is not None and not r.forgotten]

    # ------------------------------------------------------------------ ended versions

    def versions(self, ref: PackageRef, record_id: str) -> list[VersionRow]:
        """The ended versions of one memory, oldest first (one Query on the package key)."""
        prefix = f"v#{record_id}#"
        return [
            decode_version(it)
            for it in self.db.query(self.table, ref.pk, prefix=prefix)
            if len(it["sk"]) == len(prefix) + 12  # not the versions of an id that extends this one
        ]

    def all_versions(self, ref: PackageRef) -> Iterator[VersionRow]:
        """Every ended version of the package, by id then seq."""
        for item in self.db.query(self.table, ref.pk, prefix="v#"):
            yield decode_version(item)

    def version_request(self, ref: PackageRef, row: LogRow, end_seq: int) -> Request:
        """Keep ``row``'s current version as an ended version (before the row is overwritten)."""
        assert row.record is not None
        item = {
            "pk": ref.pk,
            "sk": version_key(row.id, row.seq),
            "seq": row.seq,
            "contentHash": bytes.fromhex(row.content_hash),
            "entryHash": bytes.fromhex(row.entry_hash),
            "zone": row.zone,
            "kk": row.knowledge,
            "body": compress(row.record),
            "endSeq": end_seq,
        }
        return self.table, {"PutRequest": {"Item": to_item(item)}}

    def slot_delete_request(self, ref: PackageRef, slot: str) -> Request:
        sk = f"s#{slot}"
        return self.table, {"DeleteRequest": {"Key": key(self.layout.pk_for(ref, sk), sk)}}

    def delete_version_requests(self, ref: PackageRef, items: Sequence[VersionRow]) -> list[Request]:
        return [(self.table, {"DeleteRequest": {"Key": key(ref.pk, v.key)}}) for v in items]

    def ended_request(self, ref: PackageRef, row: LogRow, entry: logcore.Entry) -> list[Request]:
        """The row of a memory whose validity ended with no successor: hashes of the ending entry, no
        body; its slot item removed (the content slot is free for a new memory)."""
        shards = self.layout.count(ref)
        item = {
            "pk": self.layout.pk_for(ref, row.key, shards),
            "sk": row.key,
            "seq": entry.seq,
            "contentHash": bytes.fromhex(entry.content_hash),
            "entryHash": bytes.fromhex(entry.hash),
            "zone": row.zone,
            "cbf": row.cbf,
            "kk": row.knowledge,
            "state": "ended",
            "pastSlots": [*row.past_slots, *([row.slot] if row.slot else [])][-MAX_HISTORY:] or None,
            "pastIds": row.past_ids[-MAX_HISTORY:] or None,
            "pastKeys": row.past_keys[-MAX_HISTORY:] or None,
        }
        out: list[Request] = [(self.table, {"PutRequest": {"Item": to_item(item)}})]
        if row.slot:
            sk = f"s#{row.slot}"
            out.append((self.table, {"DeleteRequest": {"Key": key(self.layout.pk_for(ref, sk, shards), sk)}}))
        return out

    def list_active(
        self,
        ref: PackageRef,
        zone: str | None = None,
        tag: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        trust: str | None = None,
        agent: str | None = None,
    ) -> tuple[list[ListedRecord], str | None]:
        """A page of active records in id order, each as its stored canonical JSON; the cursor is
        opaque (base64 of the last row key). ``trust`` (belief | candidate; None: any) and ``agent``
        filter the same Query: a row carries ``trust`` only while it is a candidate.

        The Query filters out tombstoned rows (and other zones and tags) and projects the sort key,
        the state and the body only: filtered rows are read (DynamoDB bills a Query on the items it
        reads, before the filter and whatever the projection) but not sent, and the client parses
        three attributes per item instead of fifteen. A forgotten row is ``tombstoned`` with its body
        removed before the forget answers, so it never passes the filter."""
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
        names = {"#lk": "sk", "#lb": "body", "#ls": "state", "#lq": "trust", "#la": "actor", "#lg": "agent"}
        values: dict[str, Any] = {":gone": {"S": "tombstoned"}, ":ended": {"S": "ended"}}
        # Not "state = active": a row whose state is missing or unknown comes back and is refused as
        # corrupt below (a mangled row is reported, never silently left out).
        condition = "(attribute_not_exists(#ls) OR NOT #ls IN (:gone, :ended))"
        if zone is not None:
            names["#lz"], values[":zone"] = "zone", {"S": zone}
            condition += " AND #lz = :zone"
        if tag is not None:
            names["#lt"], values[":tag"] = "tags", {"S": tag}
            condition += " AND contains(#lt, :tag)"
        # Beliefs are the rows without ``trust``: the Query already projects it, so the candidates are
        # dropped here rather than by one more clause of the filter condition, which is evaluated per
        # item read (moto's evaluator: 18% of a full listing at 100k; DynamoDB's: free, but the
        # condition would save only the bytes of candidates, which are few and wait for a reviewer).
        # Candidates alone (trust=candidate) are few among many beliefs: filtered in the Query.
        if trust is not None and trust != "belief":
            values[":trust"] = {"S": trust}
            condition += " AND #lq = :trust"
        if agent is not None:
            values[":agent"] = {"S": agent}
            condition += " AND #lg = :agent"
        out: list[ListedRecord] = []
        # Each shard holds about 1/shards of a page (ids hash evenly, so a shard's part is binomial):
        # read its share plus 8 + 2 sqrt(share) per Query (about three standard deviations: 156 rows of
        # a shard for a page of 1,000 over 8), and the generator reads on in the rare shard that holds
        # more (~1% of pages). Twice the share, as before, read 2,016 rows for a page of 1,000; this
        # reads 1,248, and every row read past the page is parsed for nothing.
        shards = self.layout.count(ref)
        share = -(-(limit + 1) // shards)
        page = min(limit + 1, 1000, share + (0 if shards == 1 else 8 + 2 * math.isqrt(share)))
        items = self._query(
            ref,
            "r#",
            after=start,
            page_size=page,
            FilterExpression=condition,
            ProjectionExpression="#lk, #lb, #ls, #lq, #la, #lg",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        for item in items:
            body = item.get("body")
            if item.get("state") != "active":
                raise CorruptStore(f"row {item.get('sk')} has unknown state")
            if not isinstance(body, bytes):
                raise CorruptStore(f"active row {item.get('sk')} has no body")
            if trust == "belief" and item.get("trust"):
                continue  # a candidate (see the condition above)
            out.append(
                ListedRecord(
                    item["sk"][2:],
                    inflate(body),
                    item.get("trust") or "belief",
                    item.get("actor"),
                    item.get("agent"),
                )
            )
            if len(out) >= limit:
                return out, base64.urlsafe_b64encode(item["sk"].encode()).decode()
        return out, None

    @staticmethod
    def cursor_after(row: LogRow | ListedRecord) -> str:
        """The cursor that continues a listing right after ``row`` (``list_active``'s cursor format:
        the last row key read), for a caller that stops inside a page it was given."""
        return base64.urlsafe_b64encode(row.key.encode()).decode()

    def read_files(self, ref: PackageRef) -> list[tuple[str, str]]:
        """(path, content) of every live file."""
        return [(f.path, f.content) for f in self.files(ref) if f.active and f.content is not None]

    # ------------------------------------------------------------------ review (acx.core.review)
    #
    # A candidate row carries ``trust: candidate`` and has a queue item ``q#<seq>`` -> record id on
    # the package key, so the queue is read in log order in O(page). A queue item whose row has moved
    # on (approved, forgotten, rewritten at another seq) is stale: the reader skips it, and a decision
    # deletes the item it consumes.

    def review_queue(
        self, ref: PackageRef, limit: int, cursor: str | None = None
    ) -> tuple[list[LogRow], str | None]:
        """Up to ``limit`` candidate rows, oldest (lowest seq) first; the cursor is the last queue key."""
        if cursor is not None and not (cursor.startswith("q#") and cursor[2:].isdigit()):
            raise ValueError("invalid cursor")
        out: list[LogRow] = []
        items = self.db.query(self.table, ref.pk, prefix="q#", after=cursor, page_size=limit + 1)
        batch: list[dict[str, Any]] = []

        def drain() -> str | None:
            rows = self._get_many(ref, [f"r#{it['recordId']}" for it in batch])
            for it in batch:
                got = rows.get(f"r#{it['recordId']}")
                row = decode_row(got) if got else None
                if (
                    row is not None
                    and row.active
                    and row.trust == "candidate"
                    and pad(row.seq) == it["sk"][2:]
                ):
                    out.append(row)
                    if len(out) >= limit:
                        return str(it["sk"])
            batch.clear()
            return None

        for item in items:
            batch.append(item)
            if len(batch) >= limit - len(out):
                last = drain()
                if last is not None:
                    return out, last
        last = drain() if batch else None
        return out, last

    def policy(self, ref: PackageRef) -> str | None:
        """The package's review policy (None: never set, the default)."""
        item = self.db.get(self.table, ref.pk, "policy")
        return str(item["review"]) if item and isinstance(item.get("review"), str) else None

    def policy_requests(self, ref: PackageRef, review: str, entry: logcore.Entry) -> list[Request]:
        item = {
            "pk": ref.pk,
            "sk": "policy",
            "review": review,
            "seq": entry.seq,
            "actor": entry.payload["actor"],
        }
        return [(self.table, {"PutRequest": {"Item": to_item(item)}})]

    def approve_requests(self, ref: PackageRef, row: LogRow, entry: logcore.Entry) -> list[Request]:
        """Turn a candidate row into a belief (seq, hashes and body unchanged: the row still points at
        the entry that wrote it; the ``review`` entry covers that entry) and drop its queue item."""
        sk = row.key
        pk = self.layout.pk_for(ref, sk)
        item = self.db.get(self.table, pk, sk)
        if item is None:
            raise CorruptStore(f"row {sk} vanished under the lease")
        item.pop("trust", None)
        item.update(reviewer=entry.payload["actor"], reviewSeq=entry.seq)
        return [
            (self.table, {"PutRequest": {"Item": to_item(item)}}),
            (self.table, {"DeleteRequest": {"Key": key(ref.pk, f"q#{pad(row.seq)}")}}),
        ]

    def dequeue_requests(self, ref: PackageRef, row: LogRow) -> list[Request]:
        return [(self.table, {"DeleteRequest": {"Key": key(ref.pk, f"q#{pad(row.seq)}")}})]

    # ------------------------------------------------------------------ tombstones

    def tombstone_hits(
        self, ref: PackageRef, probes: Sequence[forgetting.Probe], near: forgetting.NearPolicy
    ) -> list[forgetting.Hit]:
        """The probes a tombstone refuses (the rule: :func:`acx.core.erasure.blocked`). Point reads of
        the keys :func:`acx.core.erasure.tombstone_keys` names: the cost does not grow with the number
        of tombstones."""
        if not probes:
            return []
        got = self.db.batch_get(self.table, ref.pk, ["t#" + k for k in erasure.tombstone_keys(probes, near)])
        found = {sk[2:]: int(it.get("seq", -1)) for sk, it in got.items() if not sk.startswith("t#n#")}
        bands = {sk[4:]: self._band(it) for sk, it in got.items() if sk.startswith("t#n#")}
        return erasure.blocked(probes, found, bands, near)

    def file_forgotten(self, ref: PackageRef, file_keys: Iterable[str]) -> dict[str, int]:
        """file key -> forget seq for the file keys a tombstone refuses."""
        got = self.db.batch_get(self.table, ref.pk, [f"t#f#{k}" for k in file_keys])
        return {sk[4:]: int(it.get("seq", -1)) for sk, it in got.items()}

    @staticmethod
    def _band(item: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], int]]:
        try:
            return {
                tid: (forgetting.unpack(bytes(v["s"])), int(v["q"]))
                for tid, v in (item.get("m") or {}).items()
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStore(f"tombstone band {item.get('sk')} does not decode: {exc}") from None

    def tombstone_requests(self, ref: PackageRef, stones: Tombstones, seq: int) -> list[Request]:
        """Put the tombstone items of one forget (run under the lease: band maps are read and merged,
        so two forgets filed under one band both stay)."""
        out: list[Request] = []
        plain = [f"t#k#{k}" for k in stones.knowledge] + [f"t#i#{k}" for k in stones.ids]
        plain += [f"t#f#{k}" for k in stones.files]
        for sk in dict.fromkeys(plain):
            out.append((self.table, {"PutRequest": {"Item": to_item({"pk": ref.pk, "sk": sk, "seq": seq})}}))
        bands: dict[str, dict[str, Any]] = {}
        for kk, sk_ in stones.sketches:
            for bk in forgetting.band_keys(sk_):
                bands.setdefault(bk, {})[kk[:16]] = {"s": forgetting.pack(sk_), "q": seq}
        if bands:
            old = self.db.batch_get(self.table, ref.pk, [f"t#n#{bk}" for bk in bands])
            for bk, members in bands.items():
                merged = {**(old.get(f"t#n#{bk}", {}).get("m") or {}), **members}
                item = {"pk": ref.pk, "sk": f"t#n#{bk}", "m": merged}
                out.append((self.table, {"PutRequest": {"Item": to_item(item)}}))
        return out

    # ------------------------------------------------------------------ writes

    def write_requests(
        self,
        ref: PackageRef,
        entries: Sequence[logcore.Entry],
        rows: dict[str, PreparedRow],
        files: dict[str, FileWrite],
        retired: Sequence[str],
        approved: logcore.Entry | None = None,
    ) -> Iterator[Request]:
        """The items of one operation's entries (row + slot index per record, one per file), built
        lazily: only the batch being sent exists at once, whatever the operation's size. ``approved``:
        the ``review`` entry of the same commit that approves these rows (an edit-and-approve): they
        are written as beliefs naming its reviewer, with no queue item.

        Order, so that any prefix that lands can be completed by a retry of the same upload: per run of
        25 records their slot items, then (after a barrier) their rows; the retired-row deletes only
        after every survivor has landed. A slot item without its row is harmless (a lookup checks the
        row's slot); a row without its slot item could take a second row into one slot."""
        shards = self.layout.count(ref)
        slots: list[Request] = []
        bodies: list[Request] = []

        def flush() -> Iterator[Request]:
            yield from slots
            yield BARRIER
            yield from bodies
            yield BARRIER
            slots.clear()
            bodies.clear()

        for e in entries:
            assert e.key is not None
            if e.key.startswith("f#"):
                f = files[e.key]
                item = {
                    "pk": ref.pk,
                    "sk": e.key,
                    "seq": e.seq,
                    "contentHash": bytes.fromhex(e.content_hash),
                    "entryHash": bytes.fromhex(e.hash),
                    "content": f.content,
                    "fk": f.file_key,
                }
                yield self.table, {"PutRequest": {"Item": to_item(item)}}
                continue
            r = rows[e.key]
            w = r.write
            item = {
                "pk": self.layout.pk_for(ref, e.key, shards),
                "sk": e.key,
                "seq": e.seq,
                "contentHash": bytes.fromhex(e.content_hash),
                "entryHash": bytes.fromhex(e.hash),
                "slot": w.slot,
                "zone": w.zone,
                "cbf": w.record.get("codebaseFingerprint"),
                "state": "active",
                "body": r.body,
                "tags": [t for t in w.record.get("tags") or [] if isinstance(t, str)] or None,
                "pastSlots": [x for x in w.past_slots if x != w.slot][-MAX_HISTORY:] or None,
                "pastIds": [x for x in w.past_ids if x != w.id][-MAX_HISTORY:] or None,
                "kk": w.knowledge,
                "pastKeys": [x for x in w.past_keys if x != w.knowledge][-MAX_HISTORY:] or None,
                "trust": e.payload.get("trust"),  # only "candidate" is stored: absent reads as belief
                "actor": e.payload.get("actor"),
                "agent": e.payload.get("agent"),
            }
            if approved is not None:
                item.update(trust=None, reviewer=approved.payload["actor"], reviewSeq=approved.seq)
            bodies.append((self.table, {"PutRequest": {"Item": to_item(item)}}))
            if item["trust"] == "candidate":  # the review queue, in log order, on the package key
                queued = {"pk": ref.pk, "sk": f"q#{pad(e.seq)}", "recordId": w.id}
                bodies.append((self.table, {"PutRequest": {"Item": to_item(queued)}}))
            slot_sk = f"s#{w.slot}"
            slot_item = {"pk": self.layout.pk_for(ref, slot_sk, shards), "sk": slot_sk, "recordId": w.id}
            slots.append((self.table, {"PutRequest": {"Item": to_item(slot_item)}}))
            if len(bodies) == BATCH_WRITE:
                yield from flush()
        yield from flush()
        for rid in retired:  # a retired row's slot item is overwritten by its survivor's (same slot)
            sk = f"r#{rid}"
            yield self.table, {"DeleteRequest": {"Key": key(self.layout.pk_for(ref, sk, shards), sk)}}

    def erase_requests(
        self, ref: PackageRef, row: LogRow, entry: logcore.Entry, op: tuple[int, int]
    ) -> list[Request]:
        """Forget one memory row: plaintext and tags gone, hashes kept; its slot items removed."""
        shards = self.layout.count(ref)
        item = {
            "pk": self.layout.pk_for(ref, row.key, shards),
            "sk": row.key,
            "seq": entry.seq,
            "contentHash": bytes.fromhex(entry.content_hash),
            "entryHash": bytes.fromhex(entry.hash),
            "slot": row.slot,
            "zone": row.zone,
            "cbf": row.cbf,
            "kk": row.knowledge,
            "state": "tombstoned",
            "forgottenSeq": row.seq,
            "forgetOp": list(op),  # the forget operation's seqs: a repeated forget answers with them
        }
        out: list[Request] = [(self.table, {"PutRequest": {"Item": to_item(item)}})]
        for x in dict.fromkeys([*([row.slot] if row.slot else []), *row.past_slots]):
            sk = f"s#{x}"
            out.append((self.table, {"DeleteRequest": {"Key": key(self.layout.pk_for(ref, sk, shards), sk)}}))
        return out

    def erase_file_requests(self, ref: PackageRef, f: FileRow, entry: logcore.Entry) -> list[Request]:
        item = {
            "pk": ref.pk,
            "sk": f.key,
            "seq": entry.seq,
            "contentHash": bytes.fromhex(entry.content_hash),
            "entryHash": bytes.fromhex(entry.hash),
            "fk": f.file_key,
            "state": "tombstoned",
            "forgottenSeq": f.seq,
        }
        return [(self.table, {"PutRequest": {"Item": to_item(item)}})]
