"""The head item of a package: its size, chain head and compact range, the writers' lease and the
operator lock. The sequencer serializes writers: a writer takes the lease (conditional on the head
size it read), does its reads and checks under it, then claims ``n -> n + k`` in the claim transaction.

The lease does NOT stop a writer that is paused (GC, frozen Lambda) past ``lease_margin`` between its
lease check and its next row batch; such a row is still receipted and verifies, but may shadow a newer
version (reported as an orphan entry).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from acx.adapters.dynamo import CorruptStore, Dynamo, LogStoreError, from_item, key, to_av
from acx.core import merkle
from acx.core.append import AppendPlan, LogHead
from acx.core.package import PackageRef

CONFLICT_RETRIES = 8  # TransactionConflictException on a plain UpdateItem: retried with backoff


class PackageLocked(LogStoreError):
    """An operator locked the package: writes are refused until it is unlocked (checked at the claim)."""


class LeaseExpired(LogStoreError):
    """This writer's lease ran out before all rows landed; the receipt stands, rows are orphans."""


@dataclass(frozen=True)
class HeadState:
    log: LogHead
    lock_owner: str | None = None
    lock_until: float = 0.0
    admin_locked: bool = False
    exists: bool = False  # the item has a size (a package with at least one entry)
    #: Whether a ``forget`` entry was ever claimed (so tombstones may exist): False for a package whose
    #: first claim ran this code and that has had no forget since, None when unknown (a head claimed
    #: before the flag existed). Tombstones are only written after a forget's claim, under its lease.
    forgotten: bool | None = False
    #: Partition keys of the package's rows (``rowShards``; 1 for a package created before sharding).
    row_shards: int = 1

    @property
    def may_have_tombstones(self) -> bool:
        """False only when the head proves that no forget ever claimed a seq in this package."""
        return self.forgotten is not False

    @property
    def size(self) -> int:
        return self.log.size

    def lease_free(self, owner: str, now: float) -> bool:
        return self.lock_owner in (None, owner) or self.lock_until <= now


def _size_condition(size: int) -> str:
    """The head still has the size the writer read (an absent size attribute for an empty log)."""
    return "attribute_not_exists(#size)" if size == 0 else "#size = :old"


class Sequencer:
    """Reads and claims the head, and holds the per-package writers' lease."""

    ADMIN = "adminLock"
    FORGOTTEN = "forgotten"  # BOOL: a forget entry was claimed (see HeadState.forgotten)

    def __init__(
        self,
        db: Dynamo,
        table: str,
        clock: Callable[[], float] = time.time,
        lease_seconds: float = 30.0,
        lease_margin: float = 5.0,
        row_shards: int = 1,
    ) -> None:
        self.db = db
        self.table = table
        self.clock = clock
        self.lease_seconds = lease_seconds
        self.lease_margin = lease_margin
        self.row_shards = row_shards  # fixed on a new package's head by its first claim

    def read(self, ref: PackageRef) -> HeadState:
        item = self.db.get(self.table, ref.pk, "head")
        if item is None:
            return HeadState(LogHead.empty())
        try:
            lock = item.get("lock") or {}
            owner, until = lock.get("owner"), float(lock.get("until", 0)) / 1000
            admin = bool((item.get(self.ADMIN) or {}).get("locked", False))
            if "size" not in item:  # only a lease, taken before the first claim of a new package
                return HeadState(LogHead.empty(), owner, until, admin)
            size = int(item["size"])
            rng = merkle.CompactRange.from_hex(size, item["range"])
            forgotten = item.get(self.FORGOTTEN)
            known = None if forgotten is None else bool(forgotten)
            shards = int(item.get("rowShards", 1))
            return HeadState(LogHead(size, item["chainHead"], rng), owner, until, admin, True, known, shards)
        except (KeyError, ValueError, TypeError) as exc:
            raise CorruptStore(f"head item does not decode: {exc}") from None

    def exists(self, ref: PackageRef) -> bool:
        resp = self.db.client.get_item(
            TableName=self.table,
            Key=key(ref.pk, "head"),
            ProjectionExpression="#s",
            ExpressionAttributeNames={"#s": "size"},
        )
        return "size" in resp.get("Item", {})

    def admin_lock(self, ref: PackageRef) -> dict[str, Any] | None:
        """``{locked, seq, contentHash}`` of the operator lock, or None if never set (one read)."""
        resp = self.db.client.get_item(
            TableName=self.table,
            Key=key(ref.pk, "head"),
            ProjectionExpression="#a",
            ExpressionAttributeNames={"#a": self.ADMIN},
            ConsistentRead=True,
        )
        raw = resp.get("Item", {}).get(self.ADMIN)
        if raw is None:
            return None
        state = from_item({"a": raw})["a"]
        if not isinstance(state, dict) or not isinstance(state.get("locked"), bool):
            raise CorruptStore("head lock state does not decode")
        return state

    # ------------------------------------------------------------------ lease

    def _update(self, **kwargs: Any) -> bool:
        """UpdateItem; False on a failed condition. A TransactionConflictException (the item is in an
        in-flight transaction; botocore does not retry it) is retried with backoff."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                self.db.client.update_item(TableName=self.table, **kwargs)
                return True
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
                if code == "ConditionalCheckFailedException":
                    return False
                if code != "TransactionConflictException" or attempt == CONFLICT_RETRIES - 1:
                    raise
                self.db.backoff(attempt)
        return False  # pragma: no cover - the loop returns or raises

    def acquire(self, ref: PackageRef, head: HeadState, owner: str, now: float, admin_op: bool) -> float:
        """Take the lease if the head still has the size read and no live lease of someone else (and,
        for writes, no operator lock). Returns the lease's expiry, 0.0 when refused."""
        until = now + self.lease_seconds
        cond = (
            f"{_size_condition(head.size)} AND "
            "(attribute_not_exists(#lock) OR #lock.#owner = :me OR #lock.#until <= :now)"
        )
        names = {"#size": "size", "#lock": "lock", "#until": "until", "#owner": "owner"}
        values: dict[str, Any] = {
            ":lock": to_av({"owner": owner, "until": int(until * 1000)}),
            ":now": {"N": str(int(now * 1000))},
            ":me": {"S": owner},
        }
        if head.size:
            values[":old"] = {"N": str(head.size)}
        if not admin_op:
            cond += " AND (attribute_not_exists(#adm) OR #adm.#locked = :false)"
            names |= {"#adm": self.ADMIN, "#locked": "locked"}
            values[":false"] = {"BOOL": False}
        ok = self._update(
            Key=key(ref.pk, "head"),
            UpdateExpression="SET #lock = :lock",
            ConditionExpression=cond,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        return until if ok else 0.0

    def renew(self, ref: PackageRef, owner: str, now: float, until: float) -> float:
        """Extend our lease to ``now + lease_seconds`` if we still hold it unexpired; else keep ``until``
        (the caller then stops: someone else may own the package by now)."""
        new = now + self.lease_seconds
        ok = self._update(
            Key=key(ref.pk, "head"),
            UpdateExpression="SET #lock.#until = :new",
            ConditionExpression="#lock.#owner = :me AND #lock.#until > :now",
            ExpressionAttributeNames={"#lock": "lock", "#owner": "owner", "#until": "until"},
            ExpressionAttributeValues={
                ":me": {"S": owner},
                ":new": {"N": str(int(new * 1000))},
                ":now": {"N": str(int(now * 1000))},
            },
        )
        return new if ok else until

    def release(self, ref: PackageRef, owner: str) -> None:
        self._update(
            Key=key(ref.pk, "head"),
            UpdateExpression="REMOVE #lock",
            ConditionExpression="#lock.#owner = :me",
            ExpressionAttributeNames={"#lock": "lock", "#owner": "owner"},
            ExpressionAttributeValues={":me": {"S": owner}},
        )

    def keep(self, ref: PackageRef, owner: str, until: float) -> Callable[[], None]:
        """A check to run before each row batch: renew past half-life, stop when the lease ran out."""
        state = {"until": until}

        def check() -> None:
            now = self.clock()
            if now > state["until"] - self.lease_seconds / 2:
                state["until"] = self.renew(ref, owner, now, state["until"])
            if self.clock() > state["until"] - self.lease_margin:
                raise LeaseExpired("lease ran out before all rows landed")

        return check

    # ------------------------------------------------------------------ claim

    def claim(
        self, ref: PackageRef, old: HeadState, plan: AppendPlan, owner: str, admin: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The seq claim (a TransactWriteItems member): ``n -> n + k`` only while we hold the lease
        and the size is still ``n``; writes also need "not locked". A lock/unlock entry (``admin``)
        moves the lock state in the same claim, so no write can claim a seq after a lock's entry."""
        update = "SET #size = :new, #ch = :ch, #rng = :rng"
        names = {"#size": "size", "#ch": "chainHead", "#rng": "range", "#lock": "lock", "#owner": "owner"}
        values: dict[str, Any] = {
            ":new": {"N": str(plan.size)},
            ":ch": {"S": plan.head.chain_head},
            ":rng": to_av(plan.head.range.to_hex()),
            ":me": {"S": owner},
        }
        cond = f"{_size_condition(old.size)} AND #lock.#owner = :me"
        if old.size:
            values[":old"] = {"N": str(old.size)}
        else:  # a new package: its row shard count, from now on (acx.adapters.log_rows.ShardLayout)
            update += ", #rs = if_not_exists(#rs, :rs)"
            names["#rs"] = "rowShards"
            values[":rs"] = {"N": str(self.row_shards)}
        if any(e.operation == "forget" for e in plan.entries):
            update += ", #fg = :true"  # in the claim's transaction: before any tombstone is written
            names["#fg"] = self.FORGOTTEN
            values[":true"] = {"BOOL": True}
        elif not old.size:  # a new package: known to hold no tombstones until its first forget
            update += ", #fg = if_not_exists(#fg, :nofg)"
            names["#fg"] = self.FORGOTTEN
            values[":nofg"] = {"BOOL": False}
        names["#adm"] = self.ADMIN
        if admin is not None:
            update += ", #adm = :adm"
            values[":adm"] = to_av(admin)
        else:
            cond += " AND (attribute_not_exists(#adm) OR #adm.#locked = :false)"
            names["#locked"] = "locked"
            values[":false"] = {"BOOL": False}
        return {
            "Update": {
                "TableName": self.table,
                "Key": key(ref.pk, "head"),
                "UpdateExpression": update,
                "ConditionExpression": cond,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }
