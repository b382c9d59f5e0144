"""The log port's contract (:class:`acx.usecases.ports.LogPort`), the same tests on every backend.

What the use cases rely on: a write is one serialized commit whose receipt and signed checkpoint come
with (or before) its rows; a stale read is refused (``Conflict``); listings page in id order with
cursors only the store issued; a forget erases every version and files tombstones that refuse the
text again; versions end and stay readable; review, policy and lock entries; the witness only moves
forward; a commit cut short leaves a log the verifier and the next commit accept. The verifier
(:mod:`acx.usecases.verify`) reads the result wherever it can tell right from wrong.
"""

from __future__ import annotations

import base64
import random
import threading
import time
from typing import Any

import pytest

from acx.adapters.faults import translate
from acx.core import erasure, forgetting
from acx.core import versions as versionscore
from acx.core.checkpoint import verify_checkpoint
from acx.core.faults import Locked
from acx.core.forgetting import NearPolicy, StaticKeyer
from acx.core.package import PackageRef
from acx.core.rows import Conflict, Edit, FileWrite, Forgotten, NotFound, RecordWrite
from acx.usecases.verify import verify_package
from tests.backends.conftest import PUBLISHER, REF, Backend, record, write_of

KEYER = StaticKeyer(b"contract-suite-forget-key")
NEAR = NearPolicy()


def verified(backend: Backend, ref: PackageRef = REF) -> Any:
    result = verify_package(backend.log, ref, PUBLISHER)
    assert result.ok, result.to_dict()
    return result


def knowing(rec: dict[str, Any], **kwargs: Any) -> RecordWrite:
    """A write carrying the record's knowledge key (what ingest computes), so a forget finds it."""
    kk = forgetting.knowledge_key(KEYER, rec.get("title"), rec.get("summary"))
    return write_of(rec, knowledge=kk, **kwargs)


def stones(row: Any) -> Any:
    return erasure.tombstones_of(KEYER, NEAR, row)


# ----------------------------------------------------------------------------- writes and reads


def test_an_append_is_receipted_checkpointed_and_readable_by_key(backend: Backend) -> None:
    log = backend.log
    assert not log.package_exists(REF) and log.head(REF).size == 0 and log.latest_checkpoint(REF) is None
    writes = [write_of(record(i)) for i in range(3)]
    res = log.append(
        REF, "t1/alice", writes, files=[FileWrite("knowledge/a.md", "# a\n", "fk-a")], agent="bot"
    )
    assert (res.from_seq, res.to_seq, res.size) == (0, 3, 4)
    cp = verify_checkpoint(res.checkpoint, log.verifier_key())
    assert cp.size == 4 and cp.root == log.log_head(REF).root
    assert log.latest_checkpoint(REF) == res.checkpoint == log.checkpoint_at(REF, 4)
    assert log.package_exists(REF) and log.head(REF).size == 4
    assert [e.seq for e in log.entries(REF, 1, 3)] == [1, 2]
    assert all(e.payload["agent"] == "bot" for e in log.entries(REF))
    assert len(log.leaf_hashes(REF, 4)) == 4
    with pytest.raises(NotFound):
        log.leaf_hashes(REF, 5)
    row = log.record(REF, "m-00001")
    assert row is not None and row.active and row.record == record(1) and row.seq == 1
    assert row.actor == "t1/alice" and row.agent == "bot" and row.trust == "belief"
    assert log.record(REF, "m-09999") is None
    found = log.lookup(REF, {"m-00000", "m-09999"}, {writes[2].slot, "no-such-slot"})
    assert set(found.by_id) == {"m-00000"} and found.by_slot[writes[2].slot].id == "m-00002"
    assert found.pointers == {writes[2].slot: "m-00002", "no-such-slot": None}
    assert log.active_records(REF, ["m-00000", "m-09999"]) == {"m-00000": record(0)}
    assert log.active_ids(REF, ["m-00002", "m-09999"]) == {"m-00002"}
    assert log.active_listed(REF, ["m-00001"])["m-00001"].record == record(1)
    assert log.read_files(REF) == [("knowledge/a.md", "# a\n")]
    assert [r.id for r in log.active_rows(REF)] == ["m-00000", "m-00001", "m-00002"]
    assert list(log.packages()) == [REF]
    assert verified(backend).size == 4


def test_a_stale_expected_seq_or_slot_is_a_conflict_and_writes_nothing(backend: Backend) -> None:
    log = backend.log
    first = write_of(record(1))
    log.append(REF, "a", [first])
    changed = write_of(record(1, "a longer summary of lesson 1 that the merge kept"))
    for expected, slots in (
        ({"m-00001": None}, {}),  # the writer saw no row, there is one now
        ({"m-00001": 7}, {}),  # the writer saw another version
        ({"m-00001": 0}, {first.slot: None}),  # the slot pointer moved since the read
    ):
        with pytest.raises(Conflict):
            log.append(REF, "a", [changed], expected=expected, expected_slots=slots)
        assert log.head(REF).size == 1 and log.record(REF, "m-00001").record == record(1)
    res = log.append(REF, "a", [changed], expected={"m-00001": 0}, expected_slots={first.slot: "m-00001"})
    assert res.from_seq == 1 and log.record(REF, "m-00001").seq == 1
    verified(backend)


def test_retired_rows_go_and_a_survivor_takes_their_slot(backend: Backend) -> None:
    log = backend.log
    a, b = write_of(record(1)), write_of(record(2))
    log.append(REF, "a", [a, b])
    survivor = RecordWrite(record(1, "merged text"), b.slot, past_ids=("m-00002",), past_slots=(a.slot,))
    log.append(REF, "a", [survivor], retired=["m-00002"], expected={"m-00001": 0, "m-00002": 1})
    assert log.record(REF, "m-00002") is None
    assert log.lookup(REF, set(), {b.slot}).by_slot[b.slot].id == "m-00001"
    assert log.record(REF, "m-00001").past_ids == ["m-00002"]
    verified(backend)


def test_concurrent_appends_make_one_gapless_chain_every_checkpoint_verifying(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N writers, each with its own log object (as N Lambdas or N request threads), on one package."""
    if backend.name == "moto":
        _atomic_moto(monkeypatch)
    writers, rounds = 4, 5
    results: list[Any] = []
    errors: list[BaseException] = []

    def work(w: int) -> None:
        log = backend.new_log(clock=time.time)
        try:
            for r in range(rounds):
                i = 100 * w + r
                results.append(
                    log.append(REF, f"t1/w{w}", [write_of(record(i))], expected={f"m-{i:05d}": None})
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    n = writers * rounds
    assert sorted(r.from_seq for r in results) == list(range(n))
    assert [e.seq for e in backend.log.entries(REF)] == list(range(n))
    for r in results:  # each commit's checkpoint names exactly the log as it stood after it
        cp = verify_checkpoint(r.checkpoint, backend.log.verifier_key())
        assert cp.size == r.size and backend.log.checkpoint_at(REF, r.size) == r.checkpoint
    assert verified(backend).rows == n


def _atomic_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB applies each request atomically; moto's backend, called from threads, does not (two
    threaded requests can both pass a condition). Its item operations are serialised for this test:
    what AWS guarantees, stood in for, undone after the test."""
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    for name in ("transact_write_items", "put_item", "update_item", "delete_item", "batch_write_item",
                 "get_item", "batch_get_item", "query", "scan"):  # fmt: skip
        original = getattr(DynamoDBBackend, name)

        def locked(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with lock:
                return __original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, locked)


# ----------------------------------------------------------------------------- listing and cursors


def test_listing_pages_active_records_in_id_order_and_refuses_foreign_cursors(backend: Backend) -> None:
    log = backend.log
    recs = [record(i, tags=["x"] if i % 2 else ["y"], portable=i != 3) for i in range(7)]
    log.append(REF, "a", [knowing(r) for r in recs])
    log.forget(REF, "a", "m-00004", tombstones=stones)
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page, cursor = log.list_active(REF, limit=2, cursor=cursor)
        assert len(page) <= 2
        seen += [r.id for r in page]
        if cursor is None:
            break
    assert seen == ["m-00000", "m-00001", "m-00002", "m-00003", "m-00005", "m-00006"]
    assert [r.id for r in log.list_active(REF, tag="x")[0]] == ["m-00001", "m-00003", "m-00005"]
    assert [r.id for r in log.list_active(REF, zone="save")[0]] == ["m-00003"]
    assert log.list_active(REF, limit=1)[0][0].record == recs[0]
    row = log.record(REF, "m-00002")
    assert row is not None
    assert [r.id for r in log.list_active(REF, limit=2, cursor=log.cursor_after(row))[0]] == [
        "m-00003",
        "m-00005",
    ]
    other_keys = [
        base64.urlsafe_b64encode(k).decode() for k in (b"f#knowledge/a.md", b"t#k#abc", b"\xff\xfe")
    ]
    for foreign in ("q#000000000001", "not base64 at all!", *other_keys):
        with pytest.raises(ValueError):
            page, _ = log.list_active(REF, cursor=foreign)
            raise AssertionError(f"{foreign!r} was taken as a cursor: {page}")
    with pytest.raises(ValueError):
        log.list_active(REF, limit=0)


def test_the_review_queue_pages_candidates_by_seq_and_an_approval_makes_a_belief(backend: Backend) -> None:
    log = backend.log
    log.append(REF, "a", [write_of(record(i), trust="candidate") for i in (5, 1, 3)] + [write_of(record(9))])
    queued: list[int] = []
    cursor = None
    for _ in range(5):
        page, cursor = log.review_queue(REF, 2, cursor)
        queued += [r.seq for r in page]
        if cursor is None:
            break
    assert queued == [0, 1, 2]
    assert [r.trust for r in log.list_active(REF, trust="candidate")[0]] == ["candidate"] * 3
    with pytest.raises(ValueError):
        log.review_queue(REF, 2, "r#m-00001")
    with pytest.raises(Conflict):
        log.review(REF, "t1/rev", "m-00001", "approve", seen_seq=0)  # m-00001 is at seq 1
    with pytest.raises(Conflict):
        log.review(REF, "t1/rev", "m-00009", "approve", seen_seq=3)  # a belief is not reviewed
    res = log.review(REF, "t1/rev", "m-00001", "approve", seen_seq=1, agent="reviewer-bot")
    row = log.record(REF, "m-00001")
    assert row is not None and row.trust == "belief" and row.reviewer == "t1/rev" and row.seq == 1
    entry = next(log.entries(REF, res.from_seq))
    assert entry.operation == "review" and entry.payload["decision"] == "approve"
    assert entry.covers is not None and entry.covers.seq == 1
    assert [r.id for r in log.review_queue(REF, 10)[0]] == ["m-00005", "m-00003"]
    log.review(REF, "t1/rev", "m-00003", "reject", seen_seq=2)
    assert log.record(REF, "m-00003").trust == "candidate"  # a forget follows
    verified(backend)


def test_a_policy_entry_comes_with_the_setting(backend: Backend) -> None:
    log = backend.log
    assert log.policy(REF) is None
    res = log.set_policy(REF, "t1/admin", "required", "c" * 64, agent="ops")
    assert log.policy(REF) == "required"
    entry = next(log.entries(REF, res.from_seq))
    assert entry.operation == "policy" and entry.payload["actor"] == "t1/admin" and entry.key is None
    verified(backend)


def test_under_a_review_policy_a_belief_write_is_a_conflict_and_a_candidate_lands(backend: Backend) -> None:
    """The policy is re-read inside the commit: a writer that read "beliefs admitted" before an
    operator required review cannot land a belief (it re-reads and writes a candidate)."""
    log = backend.log
    log.append(REF, "a", [write_of(record(1))])
    log.set_policy(REF, "t1/admin", "required", "c" * 64)
    with pytest.raises(Conflict):
        log.append(REF, "a", [write_of(record(2))])
    with pytest.raises(Conflict):
        log.supersede(REF, "a", write_of(record(1, "changed")), expected=0)
    log.append(REF, "a", [write_of(record(2), trust="candidate")])
    changed = write_of(record(1, "changed"), trust="candidate")
    log.supersede(REF, "a", changed, expected=0, extra=(("trust", "candidate"),))  # as usecases.versions
    assert [(r.id, r.trust) for r in log.list_active(REF)[0]] == [
        ("m-00001", "candidate"),
        ("m-00002", "candidate"),
    ]
    verified(backend)


def test_an_edit_and_approve_is_one_commit_ending_the_candidate_and_vouching_for_the_edit(
    backend: Backend,
) -> None:
    log = backend.log
    draft = record(1, "a draft with a typo")
    log.append(REF, "t1/bot", [write_of(draft, trust="candidate")], agent="bot")
    edited = write_of(record(1, "the reviewed text"), trust="candidate")
    with pytest.raises(Conflict):
        log.review(REF, "t1/rev", "m-00001", "approve", seen_seq=1, edit=Edit(edited))  # stale version
    assert log.head(REF).size == 1  # the refused edit wrote nothing
    res = log.review(REF, "t1/rev", "m-00001", "approve", seen_seq=0, edit=Edit(edited))
    assert (res.from_seq, res.to_seq) == (1, 2)
    row = log.record(REF, "m-00001")
    assert row is not None and row.record == edited.record and row.trust == "belief"
    assert row.reviewer == "t1/rev" and row.seq == 1
    assert [(v.seq, v.end_seq, v.record) for v in log.memory_versions(REF, "m-00001")] == [(0, 1, draft)]
    supersede, review = list(log.entries(REF, 1))
    assert supersede.operation == "supersede" and supersede.payload["actor"] == "t1/rev"
    assert review.operation == "review" and review.payload["decision"] == "approve"
    assert review.covers is not None and review.covers.seq == 1
    assert log.review_queue(REF, 10)[0] == []
    verified(backend)


def test_an_operator_lock_refuses_writes_until_unlocked(backend: Backend) -> None:
    log = backend.log
    log.append(REF, "a", [write_of(record(1))])
    assert log.admin_lock(REF) is None and not log.head(REF).admin_locked
    log.set_admin_lock(REF, "t1/admin", True, "a" * 64)
    assert log.head(REF).admin_locked and log.admin_lock(REF)["locked"] is True
    for write in (
        lambda: log.append(REF, "a", [write_of(record(2))]),
        lambda: log.set_policy(REF, "a", "required", "c" * 64),
        lambda: log.forget(REF, "a", "m-00001"),
    ):
        with pytest.raises(Exception) as caught:
            write()
        assert isinstance(translate(caught.value), Locked)
    assert log.head(REF).size == 2
    log.set_admin_lock(REF, "t1/admin", False, "b" * 64)  # the unlock itself passes the lock
    assert log.admin_lock(REF)["locked"] is False
    log.append(REF, "a", [write_of(record(2))])
    assert [e.operation for e in log.entries(REF)] == ["remember", "lock", "unlock", "remember"]
    verified(backend)


# ----------------------------------------------------------------------------- forget


def test_forget_erases_every_version_and_its_tombstones_refuse_the_text_again(backend: Backend) -> None:
    log = backend.log
    old = record(1, "the deploy key lives in the ops vault")
    log.append(REF, "a", [knowing(old), knowing(record(2))])
    new = record(1, "the deploy key lives in the ops vault, rotated")
    log.supersede(REF, "a", knowing(new), expected=0)
    same = {**new, "id": "m-00007"}  # another id, the current version's knowledge
    log.append(REF, "a", [knowing(same)])
    assert not log.head(REF).may_have_tombstones
    assert len(log.memory_versions(REF, "m-00001")) == 1
    probes = forgetting.probes(KEYER, [old, record(3)], NEAR)
    res = log.forget(REF, "t1/alice", "m-00001", tombstones=stones, agent="bot")
    assert res.record_id == "m-00001" and not res.repeated and res.also == ["m-00007"]
    assert res.knowledge and res.to_seq == res.seq + 1
    for rid in ("m-00001", "m-00007"):
        row = log.record(REF, rid)
        assert row is not None and row.forgotten and row.record is None and not row.holds_plaintext
        assert log.memory_versions(REF, rid) == []
    assert list(log.all_versions(REF)) == []
    assert log.active_ids(REF, ["m-00001", "m-00002", "m-00007"]) == {"m-00002"}
    assert log.head(REF).may_have_tombstones and log.may_have_tombstones(REF)
    hits = log.tombstone_hits(REF, probes, NEAR)
    assert [(h.index, h.rule) for h in hits] == [(0, "exact")]  # the ended version's text; not record 3
    again = log.forget(REF, "t1/alice", "m-00001", tombstones=stones)
    assert again.repeated and again.seq == res.seq and again.checkpoint == res.checkpoint
    calls: list[str] = []

    def guard() -> None:
        calls.append("guard")
        if log.tombstone_hits(REF, probes, NEAR):
            raise Forgotten(log.tombstone_hits(REF, probes, NEAR))

    with pytest.raises(Forgotten):
        log.append(REF, "a", [knowing(old)], guard=guard)
    assert calls == ["guard"] and log.record(REF, "m-00001").forgotten
    with pytest.raises(NotFound):
        log.forget(REF, "a", "m-09999")
    verified(backend)


def test_a_guard_is_skipped_where_no_forget_ever_committed(backend: Backend) -> None:
    log = backend.log
    calls: list[str] = []
    log.append(REF, "a", [write_of(record(1))], guard=lambda: calls.append("first"))
    assert calls == []
    log.forget(REF, "a", "m-00001")
    log.append(REF, "a", [write_of(record(2))], guard=lambda: calls.append("after a forget"))
    assert calls == ["after a forget"]


def test_forget_by_content_hash_finds_the_active_row(backend: Backend) -> None:
    log = backend.log
    log.append(REF, "a", [write_of(record(1)), write_of(record(2))])
    target = log.record(REF, "m-00002")
    assert target is not None
    res = log.forget(REF, "a", content_hash=target.content_hash)
    assert res.record_id == "m-00002" and log.record(REF, "m-00002").forgotten
    with pytest.raises(NotFound):
        log.forget(REF, "a", content_hash="e" * 64)
    verified(backend)


def test_forget_file_erases_it_and_files_its_tombstone(backend: Backend) -> None:
    log = backend.log
    log.append(REF, "a", [], files=[FileWrite("skills/s.md", "do x", "fk-s"), FileWrite("k.md", "y", "fk-k")])
    row, plan = log.forget_file(REF, "a", "skills/s.md", None, lambda content: "unused")
    assert row.content == "do x" and plan is not None and plan.size == 3
    assert log.read_files(REF) == [("k.md", "y")]
    assert log.file_forgotten(REF, ["fk-s", "fk-k"]) == {"fk-s": 2}
    again, none = log.forget_file(REF, "a", "skills/s.md", None, lambda content: "unused")
    assert none is None and not again.active
    with pytest.raises(NotFound):
        log.forget_file(REF, "a", "nope.md", None, lambda content: "unused")
    verified(backend)


# ----------------------------------------------------------------------------- versions


def test_supersede_and_invalidate_end_versions_that_stay_readable(backend: Backend) -> None:
    log = backend.log
    v1 = record(1, "first text")
    log.append(REF, "a", [write_of(v1)])
    v2 = record(1, "second text")
    with pytest.raises(Conflict):
        log.supersede(REF, "a", write_of(v2), expected=5)
    log.supersede(REF, "a", write_of(v2), expected=0, extra=(("validFrom", "2026-01-02T00:00:00Z"),))
    row = log.record(REF, "m-00001")
    assert row is not None and row.record == v2 and row.seq == 1
    ended = log.memory_versions(REF, "m-00001")
    assert [(v.seq, v.end_seq, v.record) for v in ended] == [(0, 1, v1)]
    with pytest.raises(Conflict):
        log.invalidate(REF, "a", "m-00001", expected=0, content_hash="d" * 64)
    log.invalidate(
        REF,
        "a",
        "m-00001",
        expected=1,
        content_hash="d" * 64,
        extra=(("validUntil", "2026-01-03T00:00:00Z"),),
    )
    row = log.record(REF, "m-00001")
    assert row is not None and row.state == "ended" and row.record is None
    assert [(v.seq, v.end_seq) for v in log.memory_versions(REF, "m-00001")] == [(0, 1), (1, 2)]
    assert [v.seq for v in log.all_versions(REF)] == [0, 1]
    assert log.list_active(REF)[0] == []
    history = versionscore.versions(log.entries(REF))
    assert [(v.seq, v.ended_by) for v in history] == [(0, "supersede"), (1, "invalidate")]
    assert versionscore.valid_at(history, "2026-01-02T12:00:00Z").seq == 1
    assert versionscore.valid_at(history, "2026-01-04T00:00:00Z") is None
    verified(backend)


# ----------------------------------------------------------------------------- the verifier's state


def test_the_witness_only_moves_forward(backend: Backend) -> None:
    log = backend.log
    assert log.witness(REF) is None
    assert log.put_witness(REF, {"size": 5, "root": "r5"})
    assert not log.put_witness(REF, {"size": 3, "root": "r3"})
    assert log.witness(REF)["root"] == "r5"
    assert log.put_witness(REF, {"size": 5, "root": "r5"}) and log.put_witness(REF, {"size": 9, "root": "r9"})
    assert int(log.witness(REF)["size"]) == 9


def test_the_verifier_advances_the_witness_and_refuses_a_rollback(backend: Backend) -> None:
    log = backend.log
    log.append(REF, "a", [write_of(record(1))])
    assert verified(backend).witness_size is None
    log.append(REF, "a", [write_of(record(2))])
    again = verified(backend)
    assert again.witness_size == 1 and int(log.witness(REF)["size"]) == 2
    log.put_witness(REF, {**log.witness(REF), "size": 3})
    assert verify_package(log, REF, PUBLISHER).reason == "truncated"


# ----------------------------------------------------------------------------- crash points


@pytest.mark.parametrize("point", ["before-claim", "after-receipt", "before-release"])
def test_a_commit_cut_short_leaves_a_log_the_verifier_and_the_next_commit_accept(
    backend: Backend, point: str
) -> None:
    log = backend.log
    log.append(REF, "a", [write_of(record(1))])

    def crash(at: str) -> None:
        if at == point:
            raise RuntimeError(f"killed at {at}")

    backend.set_hook(log, crash)
    with pytest.raises(RuntimeError):
        log.append(REF, "a", [write_of(record(2))], expected={"m-00002": None})
    backend.set_hook(log, lambda at: None)
    verified(backend)  # a receipt without its rows is an orphan, reported, not a break
    seen = log.lookup(REF, {"m-00002"}, set()).seen_seqs({"m-00002"})
    log.append(REF, "a", [write_of(record(2))], expected=seen)  # the retry completes it
    assert log.record(REF, "m-00002").active
    log.append(REF, "a", [write_of(record(3))])
    result = verified(backend)
    assert result.size == log.head(REF).size and [r.id for r in log.active_rows(REF)] == [
        "m-00001",
        "m-00002",
        "m-00003",
    ]


# ----------------------------------------------------------------------------- limits


def test_malformed_operations_are_refused_before_anything_is_written(backend: Backend) -> None:
    log = backend.log
    a = write_of(record(1))
    for bad in (
        lambda: log.append(REF, "a", []),
        lambda: log.append(REF, "a", [a, write_of(record(1, "other"))]),  # one id twice
        lambda: log.append(REF, "a", [a, RecordWrite(record(2), a.slot)]),  # one slot twice
        lambda: log.append(REF, "a", [a], retired=["m-00001"]),
        lambda: log.append(REF, "a", [], files=[FileWrite("a.md", "x"), FileWrite("a.md", "y")]),
    ):
        with pytest.raises(ValueError):
            bad()
    assert log.head(REF).size == 0


def test_a_record_over_the_row_limit_is_refused_and_one_under_it_stored(backend: Backend) -> None:
    log = backend.log
    big = record(1, base64.b64encode(random.Random(7).randbytes(400_000)).decode())  # does not compress
    with pytest.raises(ValueError):
        log.append(REF, "a", [write_of(big)])
    roomy = record(2, "ab" * 100_000)  # 200 KB of text that compresses well: a row under the limit
    log.append(REF, "a", [write_of(roomy)])
    assert log.record(REF, "m-00002").record == roomy
    verified(backend)


def test_a_long_file_path_and_many_entries_in_one_operation_verify(backend: Backend) -> None:
    log = backend.log
    path = "knowledge/" + "p" * 1000 + ".md"
    res = log.append(REF, "a", [write_of(record(i)) for i in range(300)], files=[FileWrite(path, "x")])
    assert (res.from_seq, res.to_seq) == (0, 300)
    assert log.read_files(REF) == [(path, "x")]
    assert verified(backend).rows == 301


def test_packages_lists_every_package_with_a_log(backend: Backend) -> None:
    other = PackageRef("t2", "other")
    backend.log.append(other, "b", [write_of(record(1))])
    backend.log.append(REF, "a", [write_of(record(1))])
    assert sorted(backend.log.packages(), key=lambda r: r.pk) == [REF, other]
    assert backend.log.record(other, "m-00001").actor == "b"


# ----------------------------------------------------------------------------- one log, two stores


def _script(log: Any) -> None:
    """Every kind of operation, in an order that leaves rows of every state."""
    recs = [record(i, tags=["x"] if i % 2 else []) for i in range(6)]
    writes = [knowing(r, trust="candidate" if i == 3 else "belief") for i, r in enumerate(recs)]
    files = [FileWrite("k.md", "# k\n", "fk-k"), FileWrite("s.md", "s", "fk-s")]
    log.append(REF, "t1/alice", writes, files=files, agent="bot")
    log.supersede(REF, "t1/alice", knowing(record(1, "corrected")), expected=1,
                  extra=(("validFrom", "2026-01-02T00:00:00Z"),))  # fmt: skip
    log.invalidate(REF, "t1/alice", "m-00002", expected=2, content_hash="d" * 64)
    log.review(REF, "t1/rev", "m-00003", "approve", seen_seq=3)
    log.append(REF, "t1/bot", [knowing(record(7, "draft"), trust="candidate")])
    log.review(REF, "t1/rev", "m-00007", "approve", seen_seq=11,
               edit=Edit(knowing(record(7, "reviewed"), trust="candidate")))  # fmt: skip
    log.forget(REF, "t1/alice", "m-00004", tombstones=stones)
    log.forget_file(REF, "t1/alice", "s.md", None, lambda content: "unused")
    log.set_admin_lock(REF, "t1/admin", True, "a" * 64)
    log.set_admin_lock(REF, "t1/admin", False, "b" * 64)
    survivor = RecordWrite(record(0, "merged"), write_of(record(5)).slot, past_ids=("m-00005",))
    log.append(REF, "t1/alice", [survivor], retired=["m-00005"], expected={"m-00000": 0, "m-00005": 5})
    log.set_policy(REF, "t1/admin", "required", "c" * 64)


def _state(log: Any) -> dict[str, Any]:
    size = log.head(REF).size
    return {
        "entries": list(log.entries(REF)),
        "checkpoints": [log.checkpoint_at(REF, n) for n in range(1, size + 1)],
        "rows": list(log.all_rows(REF)),
        "versions": list(log.all_versions(REF)),
        "listed": log.list_active(REF, limit=100),
        "tagged": log.list_active(REF, tag="x"),
        "queue": log.review_queue(REF, 10),
        "policy": log.policy(REF),
        "lock": log.admin_lock(REF),
        "files": log.read_files(REF),
        "hits": log.tombstone_hits(REF, forgetting.probes(KEYER, [record(4), record(9)], NEAR), NEAR),
        "file_stones": log.file_forgotten(REF, ["fk-s", "fk-k"]),
        "head": (log.head(REF).size, log.head(REF).may_have_tombstones, log.log_head(REF).root),
    }


def test_both_backends_store_the_same_log_for_the_same_operations(both: tuple[Backend, Backend]) -> None:
    """Field by field, not only "both verify": entries, checkpoints, rows of every state, versions,
    pages and tombstones read back equal. A backend that keeps one column differently fails here."""
    states = []
    for backend in both:
        _script(backend.log)
        verified(backend)
        states.append(_state(backend.log))
    moto, embedded = states
    for name in moto:
        assert moto[name] == embedded[name], name
