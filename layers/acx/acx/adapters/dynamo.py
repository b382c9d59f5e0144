"""DynamoDB attribute encoding and the paged/batched calls the log tables share.

No TypeSerializer: it turns numbers into Decimal and binaries into wrappers; the log wants int and
bytes. Reads are always strongly consistent (the log's checks rely on reading its own writes).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from botocore.exceptions import ClientError

from acx.core import canonical
from acx.core.rows import CorruptStore as CorruptStoreBase

BATCH_WRITE = 25
BATCH_GET = 100
SEQ_WIDTH = 12
BACKOFF_CAP = 2.0  # seconds: the longest pause between two rounds of unprocessed items
DEFAULT_ROW_BUDGET = 300.0  # seconds a batch write may keep retrying when no deadline is given
# Request-level errors of BatchWriteItem that mean "throttled, nothing written": retried like a round
# whose every item came back unprocessed (botocore has already retried them a few times).
THROTTLED = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
}
# A request stream item that ends the current batch: every request before it has landed before any
# request after it is sent (BatchWriteItem orders nothing inside one call).
BARRIER: tuple[str, dict[str, Any]] = ("", {})


class LogStoreError(Exception):
    """Base of the log store's errors."""


class Contention(LogStoreError):
    """The package stayed locked or contended past the wait budget."""


class RowsIncomplete(Contention):
    """Rows of a committed operation did not all land before the deadline (sustained throttling).

    The receipt stands; the rows that landed verify; the missing ones are orphan entries (benign, reported
    by verify). Retrying the same upload or forget writes what is missing (retryable, 503)."""


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


def inflate(body: bytes) -> bytes:
    """The row body's canonical JSON bytes, checked to be one well-formed JSON object (orjson, a few
    microseconds per record: a listing forwards these bytes without parsing them into values;
    ``canonical.loads`` stays the strict parse wherever a record is used as a value). Raises
    :class:`CorruptStore` otherwise, so a mangled body is reported, never sent."""
    try:
        raw = zlib.decompress(body)
        ok = raw[:1] == b"{" and isinstance(orjson.loads(raw), dict)
    except (zlib.error, orjson.JSONDecodeError) as exc:
        raise CorruptStore(f"row body does not decode: {exc}") from None
    if not ok:
        raise CorruptStore("row body is not a JSON object")
    return raw


class Dynamo:
    """The boto3 client plus retrying batch calls and paged queries (one per process, shared)."""

    def __init__(
        self,
        client: Any,
        sleep: Callable[[float], None] = time.sleep,
        rounds: int = 12,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.sleep = sleep
        self.rounds = rounds
        self.clock = clock
        self._beat = threading.local()  # per thread: the local stack serves requests in threads

    def backoff(self, attempt: int, cap: float = 1.0) -> None:
        """Full-jitter exponential backoff (AWS's advice for throttled and unprocessed items)."""
        self.sleep(random.uniform(0, min(cap, 0.01 * 2 ** min(attempt, 16))))

    def get(self, table: str, pk: str, sk: str, **extra: Any) -> dict[str, Any] | None:
        resp = self.client.get_item(TableName=table, Key=key(pk, sk), ConsistentRead=True, **extra)
        return from_item(resp["Item"]) if "Item" in resp else None

    @contextmanager
    def heartbeat(self, beat: Callable[[], None]) -> Iterator[None]:
        """Run ``beat`` before every BatchGetItem round while inside: a writer's reads under its
        lease (the tombstone check reads ~20 keys per record) renew the lease as they go."""
        before = getattr(self._beat, "fn", None)
        self._beat.fn = beat
        try:
            yield
        finally:
            self._beat.fn = before

    def batch_get(
        self, table: str, pk: str, sks: Sequence[str], projection: Sequence[str] = ()
    ) -> dict[str, dict[str, Any]]:
        """BatchGetItem of ``sks`` in one partition; returns sk -> decoded item."""
        got = self.batch_get_keys(table, [(pk, sk) for sk in sks], projection)
        return {sk: item for (_, sk), item in got.items()}

    def batch_get_keys(
        self, table: str, keys: Sequence[tuple[str, str]], projection: Sequence[str] = ()
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """BatchGetItem of (pk, sk) keys in chunks of 100, retrying UnprocessedKeys;
        returns (pk, sk) -> decoded item."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        unique = sorted(set(keys))
        for i in range(0, len(unique), BATCH_GET):
            request: dict[str, Any] = {
                "Keys": [key(pk, sk) for pk, sk in unique[i : i + BATCH_GET]],
                "ConsistentRead": True,
            }
            if projection:
                names = {f"#a{j}": name for j, name in enumerate(["pk", "sk", *projection])}
                request["ProjectionExpression"] = ", ".join(names)
                request["ExpressionAttributeNames"] = names
            pending: dict[str, Any] = {table: request}
            for attempt in range(self.rounds):
                beat = getattr(self._beat, "fn", None)
                if beat is not None:
                    beat()
                resp = self.client.batch_get_item(RequestItems=pending)
                for item in resp.get("Responses", {}).get(table, []):
                    decoded = from_item(item)
                    out[(decoded["pk"], decoded["sk"])] = decoded
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
        deadline: float | None = None,
    ) -> None:
        """BatchWriteItem 25 at a time across tables, resending UnprocessedItems until they land.

        ``requests`` may be a generator: only one batch is built at a time; a :data:`BARRIER` in it ends
        the batch (what came before has landed before anything after is sent). ``before_batch`` runs
        before every call, retries included (the writer's lease check and renewal). Unprocessed items
        and throttling errors are retried with capped exponential backoff until they land or the clock
        passes ``deadline`` (``self.clock`` time; default ``DEFAULT_ROW_BUDGET`` from now), then
        :class:`RowsIncomplete` is raised naming how many items are still unwritten: a partial write
        is never reported as done.
        """
        if deadline is None:
            deadline = self.clock() + DEFAULT_ROW_BUDGET
        it = iter(requests)
        batch: list[tuple[str, dict[str, Any]]] = []
        for request in itertools.chain(it, [BARRIER]):
            if request is BARRIER or request == BARRIER:
                self._write_batch(batch, before_batch, deadline)
                batch = []
                continue
            batch.append(request)
            if len(batch) == BATCH_WRITE:
                self._write_batch(batch, before_batch, deadline)
                batch = []

    def _write_batch(
        self, batch: list[tuple[str, dict[str, Any]]], before_batch: Callable[[], None], deadline: float
    ) -> None:
        if not batch:
            return
        pending: dict[str, list[dict[str, Any]]] = {}
        for table, req in batch:
            pending.setdefault(table, []).append(req)
        attempt = 0
        while True:
            before_batch()
            try:
                resp = self.client.batch_write_item(RequestItems=pending)
                pending = resp.get("UnprocessedItems") or {}
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in THROTTLED:
                    raise
            if not pending:
                return
            if self.clock() >= deadline:
                left = sum(len(v) for v in pending.values())
                raise RowsIncomplete(
                    f"{left} item(s) stayed unprocessed (DynamoDB throttling) until the write deadline"
                )
            attempt += 1
            self.backoff(attempt, BACKOFF_CAP)

    def query(
        self,
        table: str,
        pk: str,
        prefix: str | None = None,
        start: str | None = None,
        after: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        page_size: int | None = None,
        **extra: Any,
    ) -> Iterator[dict[str, Any]]:
        """Paginated Query on one partition, optionally on an sk prefix or from an exclusive start sk.

        ``limit`` stops after one page of that many items; ``page_size`` only bounds each page (a
        caller that stops early then reads about what it needs, not 1 MB per page). ``after`` (with
        ``prefix``): only sort keys above it, as ``BETWEEN after AND <end of prefix>`` (a documented key
        condition; AWS documents ExclusiveStartKey as a previous page's LastEvaluatedKey, and ``after``
        may be a key of another shard's partition).
        """
        names = {"#pk": "pk", **extra.pop("ExpressionAttributeNames", {})}
        values: dict[str, Any] = {":pk": {"S": pk}, **extra.pop("ExpressionAttributeValues", {})}
        cond = "#pk = :pk"
        if prefix is not None and after is not None:
            if not prefix or not after.startswith(prefix):
                raise ValueError("after must begin with the prefix")
            names["#sk"] = "sk"
            values[":lo"] = {"S": after}
            values[":hi"] = {"S": prefix[:-1] + chr(ord(prefix[-1]) + 1)}
            cond += " AND #sk BETWEEN :lo AND :hi"
        elif prefix is not None:
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
                sk = item["sk"]["S"]
                if after is not None and (sk <= after or not sk.startswith(prefix or "")):
                    continue  # BETWEEN is inclusive at both ends
                yield from_item(item)
            last = resp.get("LastEvaluatedKey")
            if not last or limit is not None:
                return
            kwargs["ExclusiveStartKey"] = last
