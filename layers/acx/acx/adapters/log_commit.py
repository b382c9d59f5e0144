"""The log's one serialized commit: every write operation (append, forget, forget file, lock) goes
through :meth:`Committer.commit`, the only code that writes receipts and checkpoints.

1. read the head (size n) and take the package's lease on condition that the size is still n and no
   live lease is held (the sequencer, :mod:`acx.adapters.log_sequencer`);
2. under the lease, the caller's ``prepare`` step reads what it must (rows it merged from, the
   tombstones that refuse it, the rows a forget erases) and returns the entry specs and row requests:
   so a tombstone check and the forget that files the tombstone can never interleave;
3. plan the entries (:func:`acx.core.append.plan_append`, pure), sign the checkpoint (the injected
   ``sign`` callback), and ONE TransactWriteItems: the head claim n -> n+k (still ours, still n), the
   receipt item(s) and the checkpoint, put on condition of not existing. The receipt is durable
   before any row;
4. rows, slot index items, tombstones, retired-row deletes (BatchWriteItem, 25 per call, the lease
   renewed past half-life and checked before each batch);
5. release the lease.

What the operations prepare is :mod:`acx.adapters.log_store`'s job; this module only runs the
protocol. It does NOT stop a writer that bypasses it (any principal with PutItem on the tables can
write rows or receipts directly): the verifier (:mod:`acx.usecases.verify`) finds such rows.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from acx.adapters.dynamo import Contention, Dynamo, LogStoreError, RowsIncomplete
from acx.adapters.log_receipts import CheckpointStore, ReceiptStore
from acx.adapters.log_rows import Request
from acx.adapters.log_sequencer import HeadState, PackageLocked, Sequencer
from acx.core import log as logcore
from acx.core.append import AppendPlan, EntrySpec, plan_append
from acx.core.checkpoint import Checkpoint
from acx.core.package import PackageRef
from acx.deadline import remaining

MAX_TX_BYTES = 4_000_000  # TransactWriteItems carries at most 4 MB (AWS), enforced here, not by moto
RETRYABLE_CANCEL = {"ConditionalCheckFailed", "TransactionConflict", "None", None}


class StoreRefused(LogStoreError):
    """DynamoDB refused the transaction for a reason retrying cannot mend (ValidationError,
    ItemCollectionSizeLimitExceeded...): fail at once, naming it."""


@dataclass
class Prepared:
    """What a commit's ``prepare`` step returns: the entries to append and how their rows land."""

    specs: list[EntrySpec]
    requests: Callable[[list[logcore.Entry]], Iterable[Request]]


def _now_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _tx_bytes(items: list[dict[str, Any]]) -> int:
    return len(repr(items).encode())  # an over-estimate of the wire size (repr is wordier than JSON)


class Committer:
    """Runs the commit protocol over the log's stores (shared with the :class:`LogStore` that owns it).

    ``hook`` is fault injection: called with a boundary name ("before-claim", "after-receipt",
    "row-batch", "before-release").
    """

    def __init__(
        self,
        dynamo: Dynamo,
        sequencer: Sequencer,
        receipts: ReceiptStore,
        checkpoints: CheckpointStore,
        sign: Callable[[Checkpoint], str],
        publisher_id: str,
        clock: Callable[[], float] = time.time,
        wait_budget: float = 60.0,
        hook: Callable[[str], None] | None = None,
    ) -> None:
        self.dynamo = dynamo
        self.sequencer = sequencer
        self.receipts = receipts
        self.checkpoints = checkpoints
        self.sign = sign
        self.publisher_id = publisher_id
        self.clock = clock
        self.wait_budget = wait_budget
        self.hook = hook or (lambda _point: None)
        # Seconds the caller has left (a Lambda's remaining time, set by the handler): rows of a
        # committed operation are retried under throttling until then, minus ``time_margin``.
        self.time_left: Callable[[], float] | None = None
        self.time_margin = 3.0

    @property
    def db(self) -> Any:
        return self.dynamo.client

    def commit(
        self, ref: PackageRef, actor: str, prepare_: Callable[[HeadState], Prepared], admin_op: bool = False
    ) -> tuple[AppendPlan, str]:
        """Lease, prepare under it, claim + receipt + checkpoint, land rows, release.
        Returns the plan and its signed checkpoint."""
        owner = uuid.uuid4().hex
        started = self.clock()
        attempt = 0
        while True:
            now = self.clock()
            if now - started > self.wait_budget:
                raise Contention(f"package {ref.chain_key} stayed busy for {self.wait_budget:.0f}s")
            head = self.sequencer.read(ref)
            if head.admin_locked and not admin_op:
                if head.lock_owner == owner:
                    self.sequencer.release(ref, owner)
                raise PackageLocked(f"package {ref.chain_key} is locked by an operator")
            if not head.lease_free(owner, now):
                attempt += 1
                self.dynamo.backoff(attempt)
                continue
            until = self.sequencer.acquire(ref, head, owner, now, admin_op)
            if not until:
                attempt += 1
                self.dynamo.backoff(attempt)
                continue
            try:
                with self.dynamo.heartbeat(self.sequencer.keep(ref, owner, until)):
                    prepared = prepare_(head)  # its reads renew the lease (a large upload's checks)
                at = _now_iso(now)
                plan = plan_append(head.log, prepared.specs, actor=actor, chain=ref.chain_key, created_at=at)
                text = self.sign(plan.checkpoint(ref.origin(self.publisher_id)))
                admin = None
                if admin_op:
                    spec = prepared.specs[0]
                    admin = {
                        "locked": spec.operation == "lock",
                        "seq": head.size,
                        "contentHash": spec.content_hash,
                    }
                items = [self.sequencer.claim(ref, head, plan, owner, admin)]
                items += self.receipts.puts(ref, actor, at, plan.entries)
                items.append(self.checkpoints.put(ref, plan.size, text))
                if _tx_bytes(items) > MAX_TX_BYTES:
                    raise ValueError("one log operation may not exceed DynamoDB's 4 MB transaction limit")
                self.hook("before-claim")
                self.db.transact_write_items(TransactItems=items)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "TransactionCanceledException":
                    self.sequencer.release(ref, owner)
                    raise
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
                bad = [c for c in reasons if c not in RETRYABLE_CANCEL]
                if bad:
                    self.sequencer.release(ref, owner)
                    raise StoreRefused(f"DynamoDB refused the log transaction: {', '.join(bad)}") from None
                attempt += 1
                self.dynamo.backoff(attempt)
                continue  # someone moved the head (a writer whose lease we waited out): plan again
            except BaseException:
                self.sequencer.release(ref, owner)
                raise
            break
        self.hook("after-receipt")
        keep = self.sequencer.keep(ref, owner, until)

        def before_batch() -> None:
            keep()
            self.hook("row-batch")

        time_left = self.time_left or remaining()  # the caller's, else the Lambda invocation's
        deadline = None if time_left is None else self.clock() + time_left() - self.time_margin
        try:
            self.dynamo.batch_write(prepared.requests(plan.entries), before_batch, deadline)
        except RowsIncomplete:
            self.sequencer.release(ref, owner)  # the retry need not wait out our lease
            raise
        self.hook("before-release")
        self.sequencer.release(ref, owner)
        return plan, text
