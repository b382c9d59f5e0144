"""Receipt items (ReceiptsTable) and signed checkpoints and witness state (HeadsTable).

A receipt item lists the entries of one write operation (at most ``MAX_ENTRIES_PER_RECEIPT``): hashes,
never plaintext. Checkpoints are append-only (``cp#<size>``, put on condition of not existing); the
witness is the verifier's last verified state and only moves forward.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from botocore.exceptions import ClientError

from acx.adapters.dynamo import CorruptStore, Dynamo, pad, to_item
from acx.core import log as logcore
from acx.core import merkle
from acx.core.package import PackageRef
from acx.core.rows import NotFound

MAX_ENTRIES_PER_RECEIPT = 1500  # ~120 B per entry -> ~180 KB per receipt item
MAX_RECEIPT_BYTES = 300_000  # under DynamoDB's 400 KB item limit, whatever the row keys' lengths
ENTRY_OVERHEAD = 160  # bytes of one encoded entry besides its row key (names, hashes, numbers)


def _extra_bytes(payload: dict[str, Any]) -> int:
    """Upper bound of the bytes the optional payload fields add to an encoded entry."""
    return sum(len(name) + 4 * len(str(payload[name])) for name in logcore.OPTIONAL if name in payload)


def _parts(entries: Sequence[logcore.Entry]) -> list[Sequence[logcore.Entry]]:
    """Consecutive runs of entries that each fit one receipt item (count and bytes bounded): a file
    path may be 1,024 characters, so a count alone does not bound the item size."""
    parts: list[Sequence[logcore.Entry]] = []
    start, size = 0, 0
    for i, e in enumerate(entries):
        cost = ENTRY_OVERHEAD + len((e.key or "").encode()) + _extra_bytes(e.payload)
        if i > start and (i - start >= MAX_ENTRIES_PER_RECEIPT or size + cost > MAX_RECEIPT_BYTES):
            parts.append(entries[start:i])
            start, size = i, 0
        size += cost
    if entries:
        parts.append(entries[start:])
    return parts


def encode_entry(entry: logcore.Entry) -> dict[str, Any]:
    p = entry.payload
    out: dict[str, Any] = {
        "s": entry.seq,
        "o": p["operation"],
        "t": p["tier"],
        "c": bytes.fromhex(p["contentHash"]),
        "h": bytes.fromhex(entry.hash),
        "k": entry.key,
    }
    if "covers" in p:
        out["cv"] = {"s": p["covers"]["seq"], "h": bytes.fromhex(p["covers"]["hash"])}
    extra = {name: p[name] for name in logcore.OPTIONAL if name in p}
    if extra:
        out["x"] = extra  # optional payload fields, by their payload names (rare: kept readable)
    return out


def decode_receipt(item: dict[str, Any]) -> list[logcore.Entry]:
    """Entries of one receipt item (hex hashes)."""
    try:
        chain = item["chain"]
        prev = bytes(item["prev"]).hex()
        out: list[logcore.Entry] = []
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
            for name, value in (e.get("x") or {}).items():
                payload[str(name)] = value
            h = bytes(e["h"]).hex()
            out.append(logcore.Entry(payload["seq"], h, prev, payload, e.get("k")))
            prev = h
        return out
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptStore(f"receipt {item.get('sk')} does not decode: {exc}") from None


class ReceiptStore:
    def __init__(self, db: Dynamo, table: str) -> None:
        self.db = db
        self.table = table

    def puts(
        self, ref: PackageRef, actor: str, at: str, entries: Sequence[logcore.Entry]
    ) -> list[dict[str, Any]]:
        """TransactWriteItems members putting the operation's receipt items (never overwriting)."""
        items = []
        for part in _parts(entries):
            item = {
                "pk": ref.pk,
                "sk": pad(part[0].seq),
                "v": logcore.VERSION,
                "chain": ref.chain_key,
                "actor": actor,
                "at": at,
                "prev": bytes.fromhex(part[0].prev_hash),
                "n": len(part),
                "e": [encode_entry(e) for e in part],
            }
            items.append(
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": to_item(item),
                        "ConditionExpression": "attribute_not_exists(sk)",
                    }
                }
            )
        return items

    def items(self, ref: PackageRef, start: int = 0) -> Iterator[dict[str, Any]]:
        """Receipt items in seq order, beginning with the one that holds entry ``start``."""
        first: str | None = None
        if start > 0:
            for item in self.db.query(self.table, ref.pk, start=pad(start + 1), forward=False, limit=1):
                first = item["sk"]
                yield item
        yield from self.db.query(self.table, ref.pk, start=first)

    def entries(self, ref: PackageRef, start: int = 0, end: int | None = None) -> Iterator[logcore.Entry]:
        """Entries ``[start, end)`` from the receipts."""
        for item in self.items(ref, start):
            for entry in decode_receipt(item):
                if entry.seq < start:
                    continue
                if end is not None and entry.seq >= end:
                    return
                yield entry

    def leaf_hashes(self, ref: PackageRef, size: int) -> list[bytes]:
        """The Merkle leaf hashes of the first ``size`` entries: the one read proofs and export share."""
        leaves = [merkle.leaf_hash(bytes.fromhex(e.hash)) for e in self.entries(ref, 0, size)]
        if len(leaves) != size:
            raise NotFound(f"log has {len(leaves)} entries, not {size}")
        return leaves


class CheckpointStore:
    """Signed checkpoints (append-only) and the verifier's witness state, in the heads table."""

    def __init__(self, db: Dynamo, table: str) -> None:
        self.db = db
        self.table = table

    def put(self, ref: PackageRef, size: int, text: str) -> dict[str, Any]:
        """TransactWriteItems member putting the checkpoint for ``size`` (never overwriting)."""
        return {
            "Put": {
                "TableName": self.table,
                "Item": to_item({"pk": ref.pk, "sk": f"cp#{pad(size)}", "size": size, "text": text}),
                "ConditionExpression": "attribute_not_exists(sk)",
            }
        }

    def latest(self, ref: PackageRef) -> str | None:
        for item in self.db.query(self.table, ref.pk, prefix="cp#", forward=False, limit=1):
            return self._text(item)
        return None

    def at(self, ref: PackageRef, size: int) -> str | None:
        item = self.db.get(self.table, ref.pk, f"cp#{pad(size)}")
        return self._text(item) if item else None

    @staticmethod
    def _text(item: dict[str, Any]) -> str:
        text = item.get("text")
        if not isinstance(text, str):
            raise CorruptStore("checkpoint item has no text")
        return text

    def witness(self, ref: PackageRef) -> dict[str, Any] | None:
        """The verifier's last witnessed state of a package, if any."""
        return self.db.get(self.table, ref.pk, "witness")

    def put_witness(self, ref: PackageRef, state: dict[str, Any]) -> bool:
        """Store verifier state; only ever moves forward (conditional on a smaller stored size)."""
        try:
            self.db.client.put_item(
                TableName=self.table,
                Item=to_item({"pk": ref.pk, "sk": "witness", **state}),
                ConditionExpression="attribute_not_exists(sk) OR #s <= :s",
                ExpressionAttributeNames={"#s": "size"},
                ExpressionAttributeValues={":s": {"N": str(state["size"])}},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def packages(self) -> Iterator[PackageRef]:
        """Every package with a head item. A Scan of the heads table: for the scheduled verifier."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "#sk = :h",
            "ExpressionAttributeNames": {"#sk": "sk", "#pk": "pk"},
            "ExpressionAttributeValues": {":h": {"S": "head"}},
            "ProjectionExpression": "#pk",
        }
        while True:
            resp = self.db.client.scan(**kwargs)
            for item in resp.get("Items", []):
                yield PackageRef.from_pk(item["pk"]["S"])
            if not resp.get("LastEvaluatedKey"):
                return
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
