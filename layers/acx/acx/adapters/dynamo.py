"""DynamoDB attribute encoding and the paged/batched calls the log tables share.

No TypeSerializer: it turns numbers into Decimal and binaries into wrappers; the log wants int and
bytes. Reads are always strongly consistent (the log's checks rely on reading its own writes).
"""

from __future__ import annotations

import itertools
import random
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from acx.core import canonical
from acx.core.rows import CorruptStore as CorruptStoreBase

BATCH_WRITE = 25
BATCH_GET = 100
SEQ_WIDTH = 12


class LogStoreError(Exception):
    """Base of the log store's errors."""


class Contention(LogStoreError):
    """The package stayed locked or contended past the wait budget."""


class CorruptStore(CorruptStoreBase, LogStoreError):
    """An item that cannot be decoded: never read as empty."""


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


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


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


class Dynamo:
    """The boto3 client plus retrying batch calls and paged queries (one per process, shared)."""

    def __init__(self, client: Any, sleep: Callable[[float], None] = time.sleep, rounds: int = 12) -> None:
        self.client = client
        self.sleep = sleep
        self.rounds = rounds

    def backoff(self, attempt: int) -> None:
        self.sleep(random.uniform(0, min(1.0, 0.01 * 2**attempt)))

    def get(self, table: str, pk: str, sk: str, **extra: Any) -> dict[str, Any] | None:
        resp = self.client.get_item(TableName=table, Key=key(pk, sk), ConsistentRead=True, **extra)
        return from_item(resp["Item"]) if "Item" in resp else None

    def batch_get(
        self, table: str, pk: str, sks: Sequence[str], projection: Sequence[str] = ()
    ) -> dict[str, dict[str, Any]]:
        """BatchGetItem in chunks of 100, retrying UnprocessedKeys; returns sk -> decoded item."""
        out: dict[str, dict[str, Any]] = {}
        unique = sorted(set(sks))
        for i in range(0, len(unique), BATCH_GET):
            request: dict[str, Any] = {
                "Keys": [key(pk, sk) for sk in unique[i : i + BATCH_GET]],
                "ConsistentRead": True,
            }
            if projection:
                names = {f"#a{j}": name for j, name in enumerate(["sk", *projection])}
                request["ProjectionExpression"] = ", ".join(names)
                request["ExpressionAttributeNames"] = names
            pending: dict[str, Any] = {table: request}
            for attempt in range(self.rounds):
                resp = self.client.batch_get_item(RequestItems=pending)
                for item in resp.get("Responses", {}).get(table, []):
                    decoded = from_item(item)
                    out[decoded["sk"]] = decoded
                pending = resp.get("UnprocessedKeys") or {}
                if not pending:
                    break
                self.backoff(attempt)
            else:
                raise Contention("BatchGetItem kept returning UnprocessedKeys")
        return out

    def batch_write(
        self,
        requests: Iterable[tuple[str, dict[str, Any]]],
        before_batch: Callable[[], None] = lambda: None,
    ) -> None:
        """BatchWriteItem 25 at a time across tables, retrying UnprocessedItems.

        ``requests`` may be a generator: only one batch is built at a time. ``before_batch`` runs
        before each call (the writer's lease check).
        """
        it = iter(requests)
        while batch := list(itertools.islice(it, BATCH_WRITE)):
            before_batch()
            pending: dict[str, list[dict[str, Any]]] = {}
            for table, req in batch:
                pending.setdefault(table, []).append(req)
            for attempt in range(self.rounds):
                resp = self.client.batch_write_item(RequestItems=pending)
                pending = resp.get("UnprocessedItems") or {}
                if not pending:
                    break
                self.backoff(attempt)
            else:
                raise Contention("BatchWriteItem kept returning UnprocessedItems")

    def query(
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
        names = {"#pk": "pk", **extra.pop("ExpressionAttributeNames", {})}
        values: dict[str, Any] = {":pk": {"S": pk}, **extra.pop("ExpressionAttributeValues", {})}
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
            kwargs["ExclusiveStartKey"] = key(pk, start)
        while True:
            resp = self.client.query(**kwargs)
            for item in resp.get("Items", []):
                yield from_item(item)
            last = resp.get("LastEvaluatedKey")
            if not last or limit is not None:
                return
            kwargs["ExclusiveStartKey"] = last
