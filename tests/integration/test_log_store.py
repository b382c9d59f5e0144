"""LogStore on moto: append, lookup, forget, listing, proofs, checkpoints."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from acx.adapters.log_store import Conflict, CorruptStore, LogStore, NotFound
from acx.core import log as logcore
from acx.core import merkle
from acx.core.checkpoint import verify_checkpoint
from acx.core.package import PackageRef
from acx.core.rows import FileWrite
from acx.usecases.logview import consistency_proof, inclusion_proof
from acx.usecases.verify import verify_package
from tests.fakes import fake_deps
from tests.integration.conftest import PUBLISHER, REF, row_key  # type: ignore[import-not-found]

BIG = PackageRef("t1", "big")


def raw_item(store: LogStore, sk: str) -> dict[str, Any]:
    """The stored item itself, as DynamoDB holds it (what a reader of the table sees)."""
    resp = store.db.get_item(TableName="acx-records", Key=row_key(store, sk))
    return dict(resp["Item"])


def test_append_chains_receipts_rows_and_signs(store: LogStore, make_record: Any, write_of: Any) -> None:
    recs = [make_record(i) for i in range(5)]
    r1 = store.append(REF, "agent", [write_of(r) for r in recs[:3]], files=[FileWrite("rom/k.md", "# hi")])
    assert (r1.from_seq, r1.to_seq, r1.size) == (0, 3, 4)
    r2 = store.append(REF, "agent", [write_of(r) for r in recs[3:]])
    assert (r2.from_seq, r2.to_seq, r2.size) == (4, 5, 6)
    entries = list(store.entries(REF))
    assert [e.seq for e in entries] == list(range(6))
    prev = logcore.GENESIS
    for e in entries:
        assert e.prev_hash == prev
        assert logcore.entry_hash(prev, e.payload) == e.hash
        prev = e.hash
    assert entries[0].payload["contentHash"] == logcore.content_hash(recs[0])
    cp = verify_checkpoint(r2.checkpoint, store.verifier_key())
    assert cp.size == 6 and cp.chain_head == prev
    assert cp.root == merkle.root([bytes.fromhex(e.hash) for e in entries])
    assert store.latest_checkpoint(REF) == r2.checkpoint
    assert cp.origin == "dev.acx.local/t1/pkg"
    assert store.rows.read_files(REF) == [("rom/k.md", "# hi")]
    assert store.package_exists(REF) and not store.package_exists(PackageRef("t1", "other"))
    assert verify_package(store, REF, PUBLISHER).status == "ok"


def test_lookup_by_id_and_slot_and_expected_conflict(
    store: LogStore, make_record: Any, write_of: Any
) -> None:
    recs = [make_record(i) for i in range(3)]
    writes = [write_of(r) for r in recs]
    store.append(REF, "a", writes)
    found = store.rows.lookup(REF, {"m-00000", "nope"}, {writes[2].slot, "zz"})
    by_id, by_slot = found.by_id, found.by_slot
    assert set(by_id) == {"m-00000"} and by_id["m-00000"].record == recs[0]
    assert set(by_slot) == {writes[2].slot} and by_slot[writes[2].slot].id == "m-00002"
    seen = by_id["m-00000"].seq
    # another writer updates m-00000; an append based on the stale seq must fail before its receipt
    store.append(
        REF, "b", [replace(writes[0], record={**recs[0], "summary": "x"})], expected={"m-00000": seen}
    )
    size = store.head(REF).size
    with pytest.raises(Conflict):
        store.append(
            REF,
            "a",
            [replace(writes[0], record={**recs[0], "summary": "y"})],
            expected={"m-00000": seen},
        )
    with pytest.raises(Conflict):
        store.append(REF, "a", [write_of(recs[1])], expected={"m-00001": None})
    assert store.head(REF).size == size
    assert store.rows.lookup(REF, {"m-00000"}, set()).by_id["m-00000"].record["summary"] == "x"  # type: ignore[index]


def test_expected_checks_beyond_one_transaction(store: LogStore, make_record: Any, write_of: Any) -> None:
    recs = [make_record(i) for i in range(120)]
    expected: dict[str, int | None] = {r["id"]: None for r in recs}
    store.append(BIG, "a", [write_of(r) for r in recs], expected=expected)
    assert len(store.rows.lookup(BIG, {r["id"] for r in recs}, set()).by_id) == 120
    stale = {r["id"]: None for r in recs}  # all exist now
    with pytest.raises(Conflict):
        store.append(BIG, "a", [write_of({**r, "xpAwarded": 9}) for r in recs], expected=stale)
    assert store.head(BIG).size == 120
    assert store.head(BIG)  # and the lease was released: the next append goes through
    store.append(BIG, "a", [write_of(make_record(500))])


def test_forget_erases_plaintext_keeps_chain(store: LogStore, make_record: Any, write_of: Any) -> None:
    recs = [make_record(i) for i in range(3)]
    writes = [write_of(r) for r in recs]
    store.append(REF, "a", writes)
    res = store.forget(REF, "a", record_id="m-00001")
    assert res.seq == 3 and res.covers["seq"] == 1
    assert res.content_hash == logcore.content_hash(recs[1])
    row = raw_item(store, "r#m-00001")
    assert row["state"] == {"S": "tombstoned"} and "body" not in row and "tags" not in row
    found = store.rows.lookup(REF, {"m-00001"}, {writes[1].slot})
    assert found.by_id["m-00001"].record is None and found.by_slot == {}
    forget_entry = next(iter(store.entries(REF, 3)))
    assert forget_entry.payload["operation"] == "forget"
    assert forget_entry.payload["covers"]["seq"] == 1
    again = store.forget(REF, "a", record_id="m-00001")  # idempotent: the first answer, no new entry
    assert again.repeated and (again.seq, again.checkpoint, again.covers) == (
        res.seq,
        res.checkpoint,
        res.covers,
    )
    assert store.head(REF).size == 4
    with pytest.raises(NotFound):
        store.forget(REF, "a", record_id="never-there")
    res2 = store.forget(REF, "a", content_hash=logcore.content_hash(recs[2]))
    assert res2.record_id == "m-00002"
    assert [r.id for r in store.rows.iter_active(REF)] == ["m-00000"]
    v = verify_package(store, REF, PUBLISHER)
    assert v.status == "ok", v.to_dict()


def test_list_active_pages_filters_and_refuses_corrupt_rows(
    store: LogStore, ddb: Any, settings: Any, make_record: Any, write_of: Any
) -> None:
    recs = [make_record(i, portable=i % 2 == 0) for i in range(7)]
    store.append(REF, "a", [write_of(r) for r in recs])
    page, cursor = store.rows.list_active(REF, limit=3)
    ids = [r.id for r in page]
    while cursor:
        page, cursor = store.rows.list_active(REF, limit=3, cursor=cursor)
        ids += [r.id for r in page]
    assert ids == [r["id"] for r in recs]
    rom, _ = store.rows.list_active(REF, zone="rom")
    assert [r.id for r in rom] == ["m-00000", "m-00002", "m-00004", "m-00006"]
    tagged, _ = store.rows.list_active(REF, tag="t1")
    assert [r.id for r in tagged] == ["m-00001", "m-00004"]
    ddb.update_item(
        TableName=settings.records_table,
        Key=row_key(store, "r#m-00003"),
        UpdateExpression="SET body = :b",
        ExpressionAttributeValues={":b": {"B": b"not zlib"}},
    )
    with pytest.raises(CorruptStore):
        store.rows.list_active(REF, limit=50)
    assert verify_package(store, REF, PUBLISHER).status == "corrupt"


def test_proofs_verify_against_checkpoint(store: LogStore, make_record: Any, write_of: Any) -> None:
    for k in range(4):
        store.append(REF, "a", [write_of(make_record(10 * k + i)) for i in range(k + 1)])
    deps = fake_deps()
    deps.log = store
    cp = verify_checkpoint(store.latest_checkpoint(REF) or "", store.verifier_key())
    leaves = [merkle.leaf_hash(bytes.fromhex(e.hash)) for e in store.entries(REF)]
    for index in range(cp.size):
        p = inclusion_proof(deps, REF, index, cp.size)
        assert merkle.verify_inclusion(p.leaf_hash, index, cp.size, p.proof, cp.root)
        assert p.leaf_hash == leaves[index]
    old = verify_checkpoint(store.checkpoints.at(REF, 3) or "", store.verifier_key())
    c = consistency_proof(deps, REF, 3, cp.size)
    assert merkle.verify_consistency(3, cp.size, old.root, cp.root, c.proof)
    assert next(iter(store.entries(REF, 4, 6))).seq == 4


def test_receipt_written_before_rows(store: LogStore, make_record: Any, write_of: Any) -> None:
    order: list[str] = []
    original = store.db.transact_write_items

    def tx(**kw: Any) -> Any:
        order.append("receipt")
        return original(**kw)

    store.db.transact_write_items = tx  # type: ignore[method-assign]
    store.hook = order.append
    store.append(REF, "a", [write_of(make_record(i)) for i in range(30)])
    # 60 items: the slot items of the first 25 records, their rows, then the last 5 slots and rows
    # (a run's slot items land before its rows: see RowStore.write_requests)
    assert order == [
        "before-claim",
        "receipt",
        "after-receipt",
        "row-batch",
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

    store.append(REF, "agent", [write_of(make_record(0))])
    store.set_admin_lock(REF, "operator", True, "ab" * 32)
    # The old window: a head read that sees the lock's seq but not yet its state. Only the claim's
    # "not locked" condition can stop this writer now.
    stale = dataclasses.replace(store.sequencer.read(REF), admin_locked=False)
    reads = iter([stale])
    real = store.sequencer.read
    monkeypatch.setattr(store.sequencer, "read", lambda ref: next(reads, None) or real(ref))
    with pytest.raises(PackageLocked):
        store.append(REF, "agent", [write_of(make_record(1))])
    assert store.head(REF).size == 2  # the write and the lock; nothing after the lock
    assert verify_package(store, REF, PUBLISHER).status == "ok"
    store.set_admin_lock(REF, "operator", False, "cd" * 32)
    assert store.append(REF, "agent", [write_of(make_record(1))]).size == 4


def test_receipt_items_stay_under_400_kb_whatever_the_paths(store: LogStore, settings: Any) -> None:
    """AWS refuses items over 400 KB; moto does not. 600 files with 1,000-character paths would make
    one 600 KB receipt item if receipts were cut by count only."""
    from acx.adapters.log_receipts import MAX_RECEIPT_BYTES

    long_dir = "/".join(["d" * 60] * 16)[:990]
    files = [FileWrite(f"{long_dir}/f{i:04d}.md", f"# {i}") for i in range(600)]
    result = store.append(REF, "agent", [], files=files)
    assert result.size == 600
    items = store.db.query(
        TableName=settings.receipts_table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": REF.pk}},
    )["Items"]
    assert len(items) >= 2
    assert all(len(repr(item).encode()) < MAX_RECEIPT_BYTES * 1.2 for item in items)
    assert verify_package(store, REF, PUBLISHER).status == "ok"


def test_a_belief_is_refused_under_the_lease_once_the_policy_requires_review(
    store: LogStore, make_record: Any, write_of: Any
) -> None:
    from acx.core.canonical import sha256_hex

    store.append(REF, "a", [write_of(make_record(1))])  # a belief under the default policy
    store.set_policy(REF, "ops", "required", sha256_hex({"review": "required"}))
    size = store.head(REF).size
    with pytest.raises(Conflict, match="policy"):  # an upload that read `none` before the change
        store.append(REF, "a", [write_of(make_record(2))])
    current = store.record(REF, "m-00001")
    assert current is not None
    with pytest.raises(Conflict, match="policy"):
        store.supersede(REF, "a", write_of(make_record(1, "corrected")), current.seq)
    assert store.head(REF).size == size  # nothing claimed
    store.append(REF, "a", [replace(write_of(make_record(2)), trust="candidate")])  # positive control
    assert store.record(REF, "m-00002").trust == "candidate"  # type: ignore[union-attr]


def test_an_edit_commits_the_supersede_and_the_approve_with_their_rows(
    store: LogStore, make_record: Any, write_of: Any
) -> None:
    from acx.core.rows import Edit, Forgotten

    store.append(REF, "agent", [replace(write_of(make_record(1)), trust="candidate")], agent="bot-1")
    candidate = store.record(REF, "m-00001")
    assert candidate is not None and candidate.trust == "candidate"
    fixed = replace(write_of(make_record(1, "corrected")), past_slots=(str(candidate.slot),))
    store.append(REF, "agent", [write_of(make_record(9))])
    store.forget(REF, "agent", record_id="m-00009")  # a forget was claimed: the guard runs
    size = store.head(REF).size

    def refuse() -> None:
        raise Forgotten([])

    with pytest.raises(Forgotten):
        store.review(REF, "alice", "m-00001", "approve", candidate.seq, edit=Edit(fixed, {}, refuse))
    assert store.head(REF).size == size and store.record(REF, "m-00001") == candidate  # nothing written
    with pytest.raises(Conflict):  # a stale candidate
        store.review(REF, "alice", "m-00001", "approve", candidate.seq - 1, edit=Edit(fixed))
    out = store.review(REF, "alice", "m-00001", "approve", candidate.seq, agent="desk", edit=Edit(fixed))
    superseding, approval = list(store.entries(REF, size))
    assert (superseding.operation, superseding.payload["trust"], superseding.key) == (
        "supersede", "candidate", "r#m-00001",
    )  # fmt: skip
    assert approval.payload["covers"] == {"seq": superseding.seq, "hash": superseding.hash}
    assert (out.from_seq, out.to_seq) == (superseding.seq, approval.seq)
    row = store.record(REF, "m-00001")
    assert row is not None and row.record == fixed.record and row.seq == superseding.seq
    assert (row.trust, row.reviewer, row.actor, row.agent) == ("belief", "alice", "alice", "desk")
    assert [v.seq for v in store.memory_versions(REF, "m-00001")] == [candidate.seq]  # kept, ended
    assert store.review_queue(REF, 10) == ([], None)
    assert raw_item(store, f"s#{fixed.slot}")["recordId"] == {"S": "m-00001"}
    with pytest.raises(KeyError):  # the candidate's slot item moved to the corrected text's
        raw_item(store, f"s#{candidate.slot}")
    assert verify_package(store, REF, PUBLISHER).status == "ok"


def test_a_belief_listing_pages_past_candidates_and_a_candidate_listing_finds_only_them(
    store: LogStore, make_record: Any, write_of: Any
) -> None:
    writes = [
        replace(write_of(make_record(i)), trust="candidate") if i % 3 == 0 else write_of(make_record(i))
        for i in range(20)
    ]
    store.append(REF, "a", writes)
    beliefs = [f"m-{i:05d}" for i in range(20) if i % 3]
    seen: list[str] = []
    cursor = None
    while True:  # pages of 4: candidates between them are dropped, none is lost or repeated
        page, cursor = store.list_active(REF, limit=4, cursor=cursor, trust="belief")
        assert all(r.trust == "belief" for r in page)
        seen += [r.id for r in page]
        if cursor is None:
            break
    assert seen == beliefs
    candidates, _ = store.list_active(REF, limit=50, trust="candidate")
    assert [r.id for r in candidates] == [f"m-{i:05d}" for i in range(0, 20, 3)]
    everything, _ = store.list_active(REF, limit=50)  # no filter: both
    assert len(everything) == 20
