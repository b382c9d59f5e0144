"""LogStore on moto: append, lookup, forget, listing, proofs, checkpoints."""

from __future__ import annotations

from typing import Any

import pytest

from acx.adapters.log_store import Conflict, CorruptStore, LogStore, NotFound
from acx.core import log as logcore
from acx.core import merkle
from acx.core.checkpoint import verify_checkpoint
from acx.usecases.verify import verify_package


def test_append_chains_receipts_rows_and_signs(store: LogStore, make_record: Any, write_of: Any) -> None:
    recs = [make_record(i) for i in range(5)]
    r1 = store.append("t1", "pkg", "agent", [write_of(r) for r in recs[:3]], files=[("rom/k.md", "# hi")])
    assert (r1.from_seq, r1.to_seq, r1.size) == (0, 3, 4)
    r2 = store.append("t1", "pkg", "agent", [write_of(r) for r in recs[3:]])
    assert (r2.from_seq, r2.to_seq, r2.size) == (4, 5, 6)
    entries = list(store.entries("t1", "pkg"))
    assert [e["seq"] for e in entries] == list(range(6))
    prev = logcore.GENESIS
    for e in entries:
        assert e["prevHash"] == prev
        assert logcore.entry_hash(prev, e["payload"]) == e["hash"]
        prev = e["hash"]
    assert entries[0]["payload"]["contentHash"] == logcore.content_hash(recs[0])
    cp = verify_checkpoint(r2.checkpoint, store.verifier_key())
    assert cp.size == 6 and cp.chain_head == prev
    assert cp.root == merkle.root([bytes.fromhex(e["hash"]) for e in entries])
    assert store.latest_checkpoint("t1", "pkg") == r2.checkpoint
    assert cp.origin == "dev.acx.local/t1/pkg"
    assert store.read_files("t1", "pkg") == [("rom/k.md", "# hi")]
    assert store.package_exists("t1", "pkg") and not store.package_exists("t1", "other")
    assert verify_package(store, "t1", "pkg").status == "ok"


def test_lookup_by_id_and_slot_and_expected_conflict(
    store: LogStore, make_record: Any, write_of: Any
) -> None:
    recs = [make_record(i) for i in range(3)]
    writes = [write_of(r) for r in recs]
    store.append("t1", "pkg", "a", writes)
    by_id, by_slot, _ = store.lookup("t1", "pkg", {"m-00000", "nope"}, {writes[2]["slot"], "zz"})
    assert set(by_id) == {"m-00000"} and by_id["m-00000"]["record"] == recs[0]
    assert set(by_slot) == {writes[2]["slot"]} and by_slot[writes[2]["slot"]]["id"] == "m-00002"
    seen = by_id["m-00000"]["seq"]
    # another writer updates m-00000; an append based on the stale seq must fail before its receipt
    store.append(
        "t1", "pkg", "b", [{**writes[0], "record": {**recs[0], "summary": "x"}}], expected={"m-00000": seen}
    )
    size = store.head("t1", "pkg")["size"]
    with pytest.raises(Conflict):
        store.append(
            "t1",
            "pkg",
            "a",
            [{**writes[0], "record": {**recs[0], "summary": "y"}}],
            expected={"m-00000": seen},
        )
    with pytest.raises(Conflict):
        store.append("t1", "pkg", "a", [write_of(recs[1])], expected={"m-00001": None})
    assert store.head("t1", "pkg")["size"] == size
    assert store.lookup("t1", "pkg", {"m-00000"}, set())[0]["m-00000"]["record"]["summary"] == "x"


def test_expected_checks_beyond_one_transaction(store: LogStore, make_record: Any, write_of: Any) -> None:
    recs = [make_record(i) for i in range(120)]
    expected: dict[str, int | None] = {r["id"]: None for r in recs}
    store.append("t1", "big", "a", [write_of(r) for r in recs], expected=expected)
    by_id, _, _ = store.lookup("t1", "big", {r["id"] for r in recs}, set())
    assert len(by_id) == 120
    stale = {r["id"]: None for r in recs}  # all exist now
    with pytest.raises(Conflict):
        store.append("t1", "big", "a", [write_of({**r, "xpAwarded": 9}) for r in recs], expected=stale)
    assert store.head("t1", "big")["size"] == 120
    assert store.head("t1", "big")  # and the lease was released: the next append goes through
    store.append("t1", "big", "a", [write_of(make_record(500))])


def test_forget_erases_plaintext_keeps_chain(store: LogStore, make_record: Any, write_of: Any) -> None:
    recs = [make_record(i) for i in range(3)]
    writes = [write_of(r) for r in recs]
    store.append("t1", "pkg", "a", writes)
    res = store.forget("t1", "pkg", "a", record_id="m-00001")
    assert res.seq == 3 and res.covers["seq"] == 1
    assert res.content_hash == logcore.content_hash(recs[1])
    row = store.get_rows("t1", "pkg", ["r#m-00001"])["r#m-00001"]
    assert row["state"] == "tombstoned" and "body" not in row and "tags" not in row
    by_id, by_slot, _ = store.lookup("t1", "pkg", {"m-00001"}, {writes[1]["slot"]})
    assert by_id["m-00001"]["record"] is None and by_slot == {}
    stones = store.forgotten(
        "t1", "pkg", content_hashes=[res.content_hash], ids=["m-00001"], slots=[writes[1]["slot"]]
    )
    assert {s["sk"] for s in stones} == {
        f"t#{res.content_hash}",
        "t#id#m-00001",
        f"t#slot#{writes[1]['slot']}",
    }
    assert store.forgotten("t1", "pkg", ids=["m-00000"]) == []
    forget_entry = next(iter(store.entries("t1", "pkg", 3)))
    assert forget_entry["payload"]["operation"] == "forget"
    assert forget_entry["payload"]["covers"]["seq"] == 1
    with pytest.raises(NotFound):
        store.forget("t1", "pkg", "a", record_id="m-00001")
    res2 = store.forget("t1", "pkg", "a", content_hash=logcore.content_hash(recs[2]))
    assert res2.record_id == "m-00002"
    assert [r["id"] for r in store.iter_active("t1", "pkg")] == ["m-00000"]
    v = verify_package(store, "t1", "pkg")
    assert v.status == "ok", v.to_dict()


def test_list_active_pages_filters_and_refuses_corrupt_rows(
    store: LogStore, ddb: Any, settings: Any, make_record: Any, write_of: Any
) -> None:
    recs = [make_record(i, portable=i % 2 == 0) for i in range(7)]
    store.append("t1", "pkg", "a", [write_of(r) for r in recs])
    page, cursor = store.list_active("t1", "pkg", limit=3)
    ids = [r["id"] for r in page]
    while cursor:
        page, cursor = store.list_active("t1", "pkg", limit=3, cursor=cursor)
        ids += [r["id"] for r in page]
    assert ids == [r["id"] for r in recs]
    rom, _ = store.list_active("t1", "pkg", zone="rom")
    assert [r["id"] for r in rom] == ["m-00000", "m-00002", "m-00004", "m-00006"]
    tagged, _ = store.list_active("t1", "pkg", tag="t1")
    assert [r["id"] for r in tagged] == ["m-00001", "m-00004"]
    ddb.update_item(
        TableName=settings.records_table,
        Key={"pk": {"S": "t1#pkg"}, "sk": {"S": "r#m-00003"}},
        UpdateExpression="SET body = :b",
        ExpressionAttributeValues={":b": {"B": b"not zlib"}},
    )
    with pytest.raises(CorruptStore):
        store.list_active("t1", "pkg", limit=50)
    assert verify_package(store, "t1", "pkg").status == "corrupt"


def test_proofs_verify_against_checkpoint(store: LogStore, make_record: Any, write_of: Any) -> None:
    for k in range(4):
        store.append("t1", "pkg", "a", [write_of(make_record(10 * k + i)) for i in range(k + 1)])
    cp = verify_checkpoint(store.latest_checkpoint("t1", "pkg") or "", store.verifier_key())
    leaves = [merkle.leaf_hash(bytes.fromhex(e["hash"])) for e in store.entries("t1", "pkg")]
    for index in range(cp.size):
        p = store.inclusion_proof("t1", "pkg", index, cp.size)
        assert merkle.verify_inclusion(
            bytes.fromhex(p["leafHash"]), index, cp.size, [bytes.fromhex(x) for x in p["proof"]], cp.root
        )
        assert bytes.fromhex(p["leafHash"]) == leaves[index]
    old = verify_checkpoint(store.checkpoint_at("t1", "pkg", 3) or "", store.verifier_key())
    c = store.consistency_proof("t1", "pkg", 3, cp.size)
    assert merkle.verify_consistency(3, cp.size, old.root, cp.root, [bytes.fromhex(x) for x in c["proof"]])
    assert next(iter(store.entries("t1", "pkg", 4, 6)))["seq"] == 4


def test_receipt_written_before_rows(store: LogStore, make_record: Any, write_of: Any) -> None:
    order: list[str] = []
    original = store.db.transact_write_items

    def tx(**kw: Any) -> Any:
        order.append("receipt")
        return original(**kw)

    store.db.transact_write_items = tx  # type: ignore[method-assign]
    store.hook = order.append
    store.append("t1", "pkg", "a", [write_of(make_record(i)) for i in range(30)])
    assert order == [
        "before-claim",
        "receipt",
        "after-receipt",
        "row-batch",
        "row-batch",
        "row-batch",
        "before-release",
    ]


def test_a_writer_that_read_the_head_before_a_lock_cannot_claim_a_seq_after_it(
    store: LogStore, make_record: Any, write_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from acx.adapters.log_store import PackageLocked

    store.append("t1", "pkg", "agent", [write_of(make_record(0))])
    store.set_admin_lock("t1", "pkg", "operator", True, "ab" * 32)
    # The old window: a head read that sees the lock's seq but not yet its state. Only the claim's
    # "not locked" condition can stop this writer now.
    stale = dataclasses.replace(store._read_head(store.pk("t1", "pkg")), admin_locked=False)
    reads = iter([stale])
    real = store._read_head
    monkeypatch.setattr(store, "_read_head", lambda pk: next(reads, None) or real(pk))
    with pytest.raises(PackageLocked):
        store.append("t1", "pkg", "agent", [write_of(make_record(1))])
    assert store.head("t1", "pkg")["size"] == 2  # the write and the lock; nothing after the lock
    assert verify_package(store, "t1", "pkg").status == "ok"
    store.set_admin_lock("t1", "pkg", "operator", False, "cd" * 32)
    assert store.append("t1", "pkg", "agent", [write_of(make_record(1))]).size == 4
