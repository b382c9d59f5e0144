"""Crash at every write boundary of append and forget, then retry like a caller would.

Invariants: no row without a receipt, no record twice, no acknowledged record lost, verify ok (a
receipt whose rows never landed is an orphan: benign and reported).
"""

from __future__ import annotations

from typing import Any

import pytest

from acx.adapters.log_store import Conflict, LogStore
from acx.core import forgetting
from acx.core.forgetting import NearPolicy
from acx.usecases.deps import DEV_FORGET_KEY
from acx.usecases.forget import tombstones_for
from acx.usecases.verify import verify_package
from tests.integration.conftest import PUBLISHER, REF  # type: ignore[import-not-found]

STONES = tombstones_for(DEV_FORGET_KEY, NearPolicy())


class Crash(Exception):
    pass


def crash_at(point: str, nth: int = 1) -> Any:
    seen = {"n": 0}

    def hook(name: str) -> None:
        if name == point:
            seen["n"] += 1
            if seen["n"] == nth:
                raise Crash(point)

    return hook


def ingest(store: LogStore, records: list[dict[str, Any]], write_of: Any) -> None:
    """What the caller does: look up, write only what is missing or different, retry on Conflict."""
    for _ in range(5):
        by_id = store.rows.lookup(REF, {r["id"] for r in records}, set()).by_id
        todo = [r for r in records if r["id"] not in by_id or by_id[r["id"]].record != r]
        if not todo:
            return
        expected = {r["id"]: (by_id[r["id"]].seq if r["id"] in by_id else None) for r in todo}
        try:
            store.append(REF, "agent", [write_of(r) for r in todo], expected=expected)
            return
        except Conflict:
            continue
    raise AssertionError("did not converge")


@pytest.mark.parametrize(
    ("point", "nth"),
    [
        ("before-claim", 1),
        ("after-receipt", 1),
        ("row-batch", 1),
        ("row-batch", 2),
        ("row-batch", 3),
        ("before-release", 1),
    ],
)
def test_append_crash_then_retry(
    store: LogStore, point: str, nth: int, make_record: Any, write_of: Any
) -> None:
    acked = [make_record(i) for i in range(20)]
    ingest(store, acked, write_of)  # acknowledged before the crash
    batch = [make_record(i) for i in range(20, 60)]  # 80 row requests -> 4 batches
    store.hook = crash_at(point, nth)
    with pytest.raises(Crash):
        ingest(store, batch, write_of)
    mid = verify_package(store, REF, PUBLISHER, update_witness=False)
    assert mid.status == "ok", str(mid.to_dict())  # never a row without a receipt, even mid-crash
    store.hook = lambda _p: None
    ingest(store, batch, write_of)  # the retry waits out the dead writer's lease (fake clock)
    result = verify_package(store, REF, PUBLISHER)
    assert result.status == "ok", str(result.to_dict())
    rows = list(store.rows.iter_active(REF))
    assert sorted(r.id for r in rows) == sorted(r["id"] for r in acked + batch)
    assert {r.id: r.record for r in rows} == {r["id"]: r for r in acked + batch}
    entries = list(store.entries(REF))
    assert [e.seq for e in entries] == list(range(len(entries)))
    live_seqs = [r.seq for r in rows]
    assert len(set(live_seqs)) == len(live_seqs)
    assert result.orphans == []  # the retry superseded every entry whose row never landed
    if point in ("after-receipt", "row-batch"):
        # batches alternate: 25 records' slot items, then their 25 rows (RowStore.write_requests)
        landed = 25 * ((nth - 1) // 2)
        assert len(mid.orphans) == 40 - landed  # receipted entries whose rows never landed: reported
        assert len(entries) == 20 + 40 + (40 - landed)  # the retry re-appends only what did not land
    else:
        assert mid.orphans == []
        assert len(entries) == 60


@pytest.mark.parametrize("point", ["before-claim", "after-receipt", "row-batch", "before-release"])
def test_forget_crash_then_retry(store: LogStore, point: str, make_record: Any, write_of: Any) -> None:
    recs = [make_record(i) for i in range(3)]
    ingest(store, recs, write_of)
    store.hook = crash_at(point)
    with pytest.raises(Crash):
        store.forget(REF, "agent", record_id="m-00001", tombstones=STONES)
    store.hook = lambda _p: None
    if point == "before-release":  # the forget itself completed; only the release was lost
        assert store.rows.get(REF, "m-00001").state == "tombstoned"  # type: ignore[union-attr]
    else:
        res = store.forget(REF, "agent", record_id="m-00001", tombstones=STONES)
        assert res.covers["seq"] == 1
    row = store.rows.get(REF, "m-00001")
    assert row is not None and row.state == "tombstoned" and not row.holds_plaintext
    probe = forgetting.probes(DEV_FORGET_KEY, [recs[1]], NearPolicy())
    assert [h.rule for h in store.rows.tombstone_hits(REF, probe, NearPolicy())] == ["exact"]
    result = verify_package(store, REF, PUBLISHER)
    assert result.status == "ok", str(result.to_dict())
    # writes after the crash go through (the stale lease expired)
    store.append(REF, "agent", [write_of(make_record(9))])
    assert verify_package(store, REF, PUBLISHER, incremental=True).status == "ok"


def test_a_long_operation_renews_its_lease_and_lands(
    store: LogStore, clock: Any, make_record: Any, write_of: Any
) -> None:
    """A slow store: every row batch takes 10 s, the whole operation ~8 lease lengths. The writer renews
    its lease past each half-life, so every row lands and the log verifies without orphans."""

    def slow(point: str) -> None:
        if point == "row-batch":
            clock.sleep(10.0)

    store.hook = slow
    records = [make_record(i) for i in range(300)]  # 600 row and slot items -> 24 batches
    ingest(store, records, write_of)
    store.hook = lambda _p: None
    result = verify_package(store, REF, PUBLISHER)
    assert result.status == "ok" and result.orphans == [], str(result.to_dict())
    assert len(list(store.rows.iter_active(REF))) == 300


def test_a_writer_that_lost_its_lease_stops_before_the_next_batch(
    store: LogStore, clock: Any, make_record: Any, write_of: Any
) -> None:
    """Paused past its lease (a frozen Lambda): renewal is refused, the writer stops; what it claimed
    and did not write is reported as orphans and the next writer supersedes it."""
    from acx.adapters.log_store import LeaseExpired

    def frozen(point: str) -> None:
        if point == "row-batch":
            clock.sleep(store.lease_seconds + 1)

    store.hook = frozen
    with pytest.raises(LeaseExpired):
        ingest(store, [make_record(i) for i in range(30)], write_of)
    store.hook = lambda _p: None
    assert verify_package(store, REF, PUBLISHER, update_witness=False).status == "ok"
    ingest(store, [make_record(i) for i in range(30)], write_of)
    result = verify_package(store, REF, PUBLISHER)
    assert result.status == "ok" and len(list(store.rows.iter_active(REF))) == 30


def _client_error(code: str, **extra: Any) -> Any:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": code}, **extra}, "Op")


def test_a_transaction_conflict_on_a_lease_update_is_retried(
    store: LogStore, make_record: Any, write_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB fails a plain UpdateItem on an item inside an in-flight transaction with
    TransactionConflictException, which botocore does not retry; the lease calls must."""
    real = store.db.update_item
    failures = {"left": 3}

    def flaky(**kw: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise _client_error("TransactionConflictException")
        return real(**kw)

    monkeypatch.setattr(store.db, "update_item", flaky)
    result = store.append(REF, "agent", [write_of(make_record(1))])
    assert result.size == 1 and failures["left"] == 0
    assert store.head(REF).lock_owner is None  # released, despite the conflicts
    assert verify_package(store, REF, PUBLISHER).status == "ok"


def test_a_cancellation_that_retrying_cannot_mend_fails_at_once(
    store: LogStore, make_record: Any, write_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acx.adapters.log_store import StoreRefused

    calls = {"n": 0}

    def refuse(**kw: Any) -> Any:
        calls["n"] += 1
        raise _client_error(
            "TransactionCanceledException",
            CancellationReasons=[{"Code": "None"}, {"Code": "ValidationError", "Message": "too big"}],
        )

    monkeypatch.setattr(store.db, "transact_write_items", refuse)
    with pytest.raises(StoreRefused, match="ValidationError"):
        store.append(REF, "agent", [write_of(make_record(1))])
    assert calls["n"] == 1  # not retried as contention for a minute
    assert store.head(REF).lock_owner is None and store.head(REF).size == 0
