"""Sustained DynamoDB throttling of the row writes that follow a committed receipt.

Under partition throttling BatchWriteItem answers 200 and returns part of the batch in
``UnprocessedItems`` (or raises ProvisionedThroughputExceededException when it wrote nothing); AWS's
advice is to resend them with exponential backoff. The fake client below holds half of every call's
items unprocessed for 30 s of the injected clock (sleeping advances it: no real waiting). The writer
must keep resending (renewing its lease) until the rows land, or, when its deadline comes first, fail
with a retryable error that leaves nothing the retry cannot finish.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from acx.adapters.dynamo import RowsIncomplete
from acx.adapters.faults import translate
from acx.adapters.log_rows import Tombstones
from acx.adapters.log_store import LogStore
from acx.usecases.faults import classify, is_retryable
from acx.usecases.verify import verify_package
from tests.integration.conftest import PUBLISHER, REF, FakeClock, log_store  # type: ignore[import-not-found]
from tests.integration.test_log_faults import ingest

HOLD = 30.0


class Throttled:
    """A DynamoDB client whose BatchWriteItem processes only the first half (rounded down) of each
    call's items while the clock is before ``until``; with ``refuse`` set, every other such call
    raises ProvisionedThroughputExceededException instead (nothing written)."""

    def __init__(self, client: Any, clock: FakeClock, refuse: bool = False) -> None:
        self.client, self.clock, self.refuse = client, clock, refuse
        self.until = 0.0
        self.calls = self.unprocessed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        if self.clock() >= self.until:
            return self.client.batch_write_item(RequestItems=RequestItems)  # type: ignore[no-any-return]
        self.calls += 1
        if self.refuse and self.calls % 2:
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
                "BatchWriteItem",
            )
        flat = [(t, r) for t, reqs in RequestItems.items() for r in reqs]
        done, rest = flat[: len(flat) // 2], flat[len(flat) // 2 :]
        if done:
            grouped: dict[str, list[dict[str, Any]]] = {}
            for t, r in done:
                grouped.setdefault(t, []).append(r)
            out = self.client.batch_write_item(RequestItems=grouped)
            assert not out.get("UnprocessedItems")
        self.unprocessed += len(rest)
        left: dict[str, list[dict[str, Any]]] = {}
        for t, r in rest:
            left.setdefault(t, []).append(r)
        return {"UnprocessedItems": left}


def _store(
    ddb: Any, settings: Any, signer: Any, clock: FakeClock, refuse: bool = False
) -> tuple[LogStore, Throttled]:
    client = Throttled(ddb, clock, refuse)
    return log_store(client, settings, signer, clock=clock, sleep=clock.sleep), client


def _present(store: LogStore, records: list[dict[str, Any]]) -> None:
    rows = {r.id: r.record for r in store.rows.iter_active(REF)}
    assert rows == {r["id"]: r for r in records}
    result = verify_package(store, REF, PUBLISHER)
    assert result.status == "ok", str(result.to_dict())


@pytest.mark.parametrize("refuse", [False, True], ids=["half unprocessed", "half refused outright"])
def test_half_the_items_unprocessed_for_30s_the_writer_resumes_and_every_record_lands(
    ddb: Any, settings: Any, signer: Any, clock: FakeClock, make_record: Any, write_of: Any, refuse: bool
) -> None:
    store, client = _store(ddb, settings, signer, clock, refuse)
    acked = [make_record(i) for i in range(20)]
    ingest(store, acked, write_of)
    batch = [make_record(i) for i in range(20, 80)]
    started = clock()
    client.until = started + HOLD
    ingest(store, batch, write_of)  # acknowledged only once every row and slot item landed
    assert clock() >= started + HOLD  # it really waited out the throttling (fake time)
    assert client.calls > 12  # far past the 12 rounds the writer used to give up after
    _present(store, acked + batch)
    assert verify_package(store, REF, PUBLISHER).orphans == []  # nothing re-appended
    assert len(list(store.entries(REF))) == 80


def test_a_deadline_before_the_throttling_ends_fails_retryably_and_the_retry_completes(
    ddb: Any, settings: Any, signer: Any, clock: FakeClock, make_record: Any, write_of: Any
) -> None:
    store, client = _store(ddb, settings, signer, clock)
    acked = [make_record(i) for i in range(20)]
    ingest(store, acked, write_of)
    store.time_left = lambda: 12.0  # a function with 12 s left (3 s of it kept as margin)
    batch = [make_record(i) for i in range(20, 80)]
    client.until = clock() + HOLD
    with pytest.raises(RowsIncomplete) as caught:
        ingest(store, batch, write_of)
    fault = translate(caught.value)  # what the handlers answer with
    assert is_retryable(fault)
    status, code, message, _ = classify(fault)
    assert (status, code) == (503, "unavailable") and "repeat the same request" in message
    assert store.head(REF).lock_owner is None  # lease released: the retry does not wait it out
    mid = verify_package(store, REF, PUBLISHER, update_witness=False)
    assert mid.status == "ok", str(mid.to_dict())  # receipted entries whose rows are missing: orphans
    assert mid.orphans, "some rows of the cut-short operation should still be missing"
    assert {r.id for r in store.rows.iter_active(REF)} >= {r["id"] for r in acked}  # acked: all there
    store.time_left = None
    clock.now = client.until  # the throttling has passed; the uploader repeats the same upload
    ingest(store, batch, write_of)
    _present(store, acked + batch)
    slots = store.rows.lookup(REF, set(), {write_of(r).slot for r in batch}).by_slot
    assert {row.id for row in slots.values()} == {r["id"] for r in batch}  # every slot item points home


class Recording:
    """A DynamoDB client that records the sort keys of every BatchWriteItem call, in order."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[list[tuple[str, str]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        sent = []
        for reqs in RequestItems.values():
            for r in reqs:
                kind, body = next(iter(r.items()))
                item = body["Item"] if kind == "PutRequest" else body["Key"]
                sent.append((kind, item["sk"]["S"]))
        self.calls.append(sent)
        return self.client.batch_write_item(RequestItems=RequestItems)  # type: ignore[no-any-return]


def _call_of(calls: list[list[tuple[str, str]]], kind: str, sk: str) -> int:
    return next(i for i, c in enumerate(calls) if (kind, sk) in c)


def test_slot_items_land_before_their_rows_and_deletes_after_every_survivor(
    ddb: Any, settings: Any, signer: Any, clock: FakeClock, make_record: Any, write_of: Any
) -> None:
    from acx.core.rows import RecordWrite

    client = Recording(ddb)
    store = log_store(client, settings, signer, clock=clock, sleep=clock.sleep)
    old = [make_record(i) for i in range(60)]
    store.append(REF, "a", [write_of(r) for r in old])
    for r in old:  # every call holding a row comes after the call holding its slot item
        w = write_of(r)
        assert _call_of(client.calls, "PutRequest", f"s#{w.slot}") < _call_of(
            client.calls, "PutRequest", f"r#{w.id}"
        )
    client.calls.clear()
    # 30 survivors, each absorbing a stored row of the same slot under a smaller id
    survivors = [RecordWrite({**r, "id": "a" + r["id"]}, write_of(r).slot) for r in old[:30]]
    store.append(REF, "a", survivors, retired=[r["id"] for r in old[:30]])
    last_put = max(i for i, c in enumerate(client.calls) if any(k == "PutRequest" for k, _ in c))
    first_delete = min(i for i, c in enumerate(client.calls) if any(k == "DeleteRequest" for k, _ in c))
    assert last_put < first_delete
    client.calls.clear()
    store.forget(REF, "a", record_id="m-00040", tombstones=lambda row: Tombstones(knowledge=("k" * 43,)))
    assert _call_of(client.calls, "PutRequest", "t#k#" + "k" * 43) < _call_of(
        client.calls, "PutRequest", "r#m-00040"
    )


def test_a_forget_cut_short_between_its_erasures_is_finished_by_its_repeat(
    store: LogStore, make_record: Any
) -> None:
    from acx.core.forgetting import NearPolicy
    from acx.core.rows import RecordWrite
    from acx.usecases.deps import DEV_FORGET_KEY
    from acx.usecases.forget import tombstones_for

    stones = tombstones_for(DEV_FORGET_KEY, NearPolicy())
    # 20 rows of one knowledge: the forget erases all 20 (40 requests: two batches after the tombstones)
    writes = [RecordWrite(make_record(i), f"slot-{i}", "K" * 43) for i in range(20)]
    store.append(REF, "a", writes)
    real = store.dynamo.client
    erasures = {"n": 0}

    class DiesOnSecondErasureBatch:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def batch_write_item(self, RequestItems: dict[str, Any]) -> Any:
            reqs = [r for rs in RequestItems.values() for r in rs]
            if any("PutRequest" in r and r["PutRequest"]["Item"]["sk"]["S"].startswith("r#") for r in reqs):
                erasures["n"] += 1
                if erasures["n"] == 2:
                    raise RuntimeError("function died")
            return real.batch_write_item(RequestItems=RequestItems)

    store.dynamo.client = DiesOnSecondErasureBatch()
    with pytest.raises(RuntimeError):
        store.forget(REF, "a", record_id="m-00000", tombstones=stones)
    store.dynamo.client = real
    rows = {r.id: r for r in store.rows.rows(REF)}
    assert not rows["m-00000"].active  # the target was erased in the first erasure batch...
    assert any(r.active for r in rows.values())  # ...but not every row of its knowledge
    again = store.forget(REF, "a", record_id="m-00000", tombstones=stones)
    assert not again.repeated  # it had work left: the rows still active are forgotten now
    rows = {r.id: r for r in store.rows.rows(REF)}
    assert not any(r.active or r.holds_plaintext for r in rows.values())
    assert store.forget(REF, "a", record_id="m-00000", tombstones=stones).repeated
    assert verify_package(store, REF, PUBLISHER).status == "ok"


class SlowReads(Throttled):
    """Every BatchGetItem takes ``step`` seconds of the injected clock (a large upload's tombstone
    check on a busy table: ~20 keys per record, 100 keys per call)."""

    step = 0.0

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.clock.now += self.step
        return self.client.batch_get_item(RequestItems=RequestItems)  # type: ignore[no-any-return]


def test_reads_under_the_lease_renew_it_so_a_long_check_does_not_expire_the_write(
    ddb: Any, settings: Any, signer: Any, clock: FakeClock, make_record: Any, write_of: Any
) -> None:
    client = SlowReads(ddb, clock)
    store = log_store(client, settings, signer, clock=clock, sleep=clock.sleep)
    # The check runs only where a tombstone may exist (the head's ``forgotten`` flag): forget first.
    first = make_record(99)
    store.append(REF, "agent", [write_of(first)])
    store.forget(REF, "a", record_id=first["id"], tombstones=lambda row: Tombstones(knowledge=("k" * 43,)))
    client.step = 10.0  # 12 reads of 10 s: four times the 30 s lease
    checked: list[int] = []

    def long_check() -> None:
        for i in range(12):
            store.dynamo.batch_get(settings.records_table, REF.pk, [f"t#k#{i}"])
            checked.append(i)

    records = [make_record(i) for i in range(5)]
    store.append(REF, "agent", [write_of(r) for r in records], guard=long_check)
    assert len(checked) == 12
    client.step = 0.0
    _present(store, records)
    assert clock() - 1_750_000_000.0 >= 120  # the check really outlived the lease several times
