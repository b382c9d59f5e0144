"""usecases.verify on a chained fake store: what each kind of tampering is reported as, and the witness.

The fake (``tests.fakes.ChainedLog``) writes real entries and signed checkpoints, so every rewrite
below is one an attacker with write access to the tables could make; the verifier must name it.
"""

from __future__ import annotations

import dataclasses

import pytest

from acx.core.log import Entry
from acx.core.package import PackageRef
from acx.core.rows import Conflict, FileWrite, RecordWrite
from acx.usecases.verify import verify_all, verify_package
from tests.factories import memory
from tests.fakes import ChainedLog

REF = PackageRef("t1", "notes")
PUBLISHER = "dev.acx.local"


def write(log: ChainedLog, *ids: str, files: tuple[FileWrite, ...] = ()) -> None:
    log.create(REF)
    log.append(
        REF, "agent", [RecordWrite(memory(i, title=f"title {i}"), f"slot-{i}") for i in ids], files=files
    )


@pytest.fixture
def log() -> ChainedLog:
    log = ChainedLog(PUBLISHER)
    write(log, "m-1", "m-2", files=(FileWrite("knowledge/a.md", "# A"),))
    write(log, "m-3")
    return log


def replace_entry(log: ChainedLog, seq: int, **changes: object) -> None:
    entries = log.receipts.entries[REF]
    entries[seq] = dataclasses.replace(entries[seq], **changes)  # type: ignore[arg-type]


def test_an_untouched_log_is_ok_and_the_witness_advances(log) -> None:
    result = verify_package(log, REF, PUBLISHER)
    assert (result.status, result.size, result.checked, result.rows, result.orphans) == ("ok", 4, 4, 4, [])
    assert log.witnesses[REF]["size"] == 4 and log.witnesses[REF]["checkpoint"] == log.latest_checkpoint(REF)
    write(log, "m-4")
    again = verify_package(log, REF, PUBLISHER, incremental=True)
    assert again.ok and again.checked == 1 and again.witness_size == 4


def test_a_rewritten_plaintext_is_a_content_hash_break_and_the_witness_stays(log) -> None:
    verify_package(log, REF, PUBLISHER)
    witnessed = dict(log.witnesses[REF])
    row = log.rows.of(REF)["m-2"]
    log.rows.of(REF)["m-2"] = dataclasses.replace(row, record={**row.record, "summary": "edited"})
    result = verify_package(log, REF, PUBLISHER)
    assert (result.status, result.reason, result.first_bad_seq) == ("broken", "content-hash", row.seq)
    assert log.witnesses[REF] == witnessed  # a broken log never moves the witness


def test_a_rewritten_file_is_caught_too(log) -> None:
    f = log.rows.files[REF]["knowledge/a.md"]
    log.rows.files[REF]["knowledge/a.md"] = dataclasses.replace(f, content="# B")
    assert verify_package(log, REF, PUBLISHER).reason == "content-hash"


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda log: replace_entry(log, 1, prev_hash="0" * 64), "link"),
        (
            lambda log: replace_entry(
                log, 2, payload={**log.receipts.entries[REF][2].payload, "tier": "save"}
            ),
            "entry-hash",
        ),
        (lambda log: log.receipts.entries[REF].pop(1), "sequence-gap"),
    ],
    ids=["link", "payload", "gap"],
)
def test_a_rewritten_receipt_is_named_by_its_rule(log, tamper, reason) -> None:
    tamper(log)
    result = verify_package(log, REF, PUBLISHER)
    assert (result.status, result.reason) == ("broken", reason)


def test_a_truncated_log_is_caught_against_the_witness(log) -> None:
    verify_package(log, REF, PUBLISHER)
    del log.receipts.entries[REF][3]
    result = verify_package(log, REF, PUBLISHER, incremental=True)
    assert (result.status, result.reason) == ("broken", "truncated")


def test_a_checkpoint_signed_by_another_key_or_for_another_package_is_refused(log) -> None:
    size = log.head(REF).size
    other = ChainedLog(PUBLISHER)
    write(other, "m-1", "m-2", files=(FileWrite("knowledge/a.md", "# A"),))
    write(other, "m-3")
    log.checkpoints.by_size[REF][size] = other.latest_checkpoint(REF)  # same tree, another key
    assert verify_package(log, REF, PUBLISHER).reason == "checkpoint-signature"
    assert verify_package(other, REF, "other.example").reason == "checkpoint-origin"


def test_a_stale_checkpoint_is_a_mismatch_and_a_missing_one_is_named(log) -> None:
    cps = log.checkpoints.by_size[REF]
    cps[4] = cps[3]
    assert verify_package(log, REF, PUBLISHER).reason == "checkpoint-mismatch"
    del cps[4]
    assert verify_package(log, REF, PUBLISHER).reason == "checkpoint-missing"


def test_plaintext_left_after_a_forget_is_reported(log) -> None:
    log.forget(REF, "ops", record_id="m-1")
    assert verify_package(log, REF, PUBLISHER).ok
    row = log.rows.of(REF)["m-1"]
    log.rows.of(REF)["m-1"] = dataclasses.replace(row, holds_plaintext=True)
    assert verify_package(log, REF, PUBLISHER).reason == "plaintext-after-forget"


def test_a_row_with_no_receipt_and_a_receipt_with_no_row(log) -> None:
    row = log.rows.of(REF)["m-3"]
    log.rows.of(REF)["m-3"] = dataclasses.replace(row, seq=99)
    assert verify_package(log, REF, PUBLISHER).reason == "row-without-receipt"
    del log.rows.of(REF)["m-3"]  # a crashed write: the entry is an orphan, not tampering
    result = verify_package(log, REF, PUBLISHER)
    assert result.ok and result.orphans == [row.seq]


def test_rows_without_receipts_are_unverifiable_not_ok() -> None:
    log = ChainedLog(PUBLISHER)
    log.create(REF)
    log.rows.put(REF, memory("m-1"))
    result = verify_package(log, REF, PUBLISHER)
    assert (result.status, result.reason) == ("unverifiable", "no-receipts")


def test_an_undecodable_entry_is_corrupt_not_a_crash(log) -> None:
    entry: Entry = log.receipts.entries[REF][0]
    replace_entry(log, 0, payload={k: v for k, v in entry.payload.items() if k != "chainKey"})
    assert verify_package(log, REF, PUBLISHER).status == "corrupt"


def test_verify_all_covers_every_package(log) -> None:
    other = PackageRef("t2", "x")
    log.create(other)
    log.append(other, "a", [RecordWrite(memory("z"), "slot-z")])
    results = verify_all(log, PUBLISHER)
    assert [(r.tenant, r.package, r.status) for r in results] == [("t1", "notes", "ok"), ("t2", "x", "ok")]
    assert results[0].to_dict()["orphanCount"] == 0 and "first_bad_seq" not in results[0].to_dict()


def test_a_checkpoint_older_than_the_witnessed_one_is_a_rollback(log) -> None:
    verify_package(log, REF, PUBLISHER)  # witnesses size 4
    cps = log.checkpoints.by_size[REF]
    cps[4] = cps[3]  # an attacker serves the older (validly signed) checkpoint
    assert verify_package(log, REF, PUBLISHER).reason == "checkpoint-rollback"


def _candidates(log: ChainedLog, *ids: str) -> None:
    log.append(
        REF,
        "t1/agent",
        [RecordWrite(memory(i, title=f"title {i}"), f"slot-{i}", trust="candidate") for i in ids],
    )


def _flip_to_belief(log: ChainedLog, record_id: str) -> None:
    """What an attacker with write access to the records table does: drop the row's ``trust``."""
    rows = log.rows.of(REF)
    rows[record_id] = dataclasses.replace(rows[record_id], trust="belief")


def test_a_candidate_flipped_to_a_belief_in_the_table_is_unvouched(log) -> None:
    _candidates(log, "c-1", "c-2")
    log.review(REF, "t1/alice", "c-1", "approve", log.rows.of(REF)["c-1"].seq)
    # positive control: the reviewer's approve accounts for c-1, and c-2 is still a candidate
    assert verify_package(log, REF, PUBLISHER).status == "ok"
    _flip_to_belief(log, "c-2")
    got = verify_package(log, REF, PUBLISHER)
    assert (got.status, got.reason) == ("broken", "unvouched-belief"), got.to_dict()
    assert got.first_bad_seq == log.rows.of(REF)["c-2"].seq and "c-2" in (got.detail or "")


def test_an_incremental_run_accounts_for_the_beliefs_it_reads(log) -> None:
    from acx.core.canonical import sha256_hex

    log.set_policy(REF, "t1/ops", "required", sha256_hex({"review": "required"}))
    assert verify_package(log, REF, PUBLISHER).status == "ok"
    assert log.witness(REF)["review"] == "required"  # the policy in force at the witnessed size
    _candidates(log, "c-3")
    got = verify_package(log, REF, PUBLISHER, incremental=True)
    assert (got.status, got.checked) == ("ok", 1)  # positive control: a candidate under `required`
    _candidates(log, "c-4")
    _flip_to_belief(log, "c-4")
    got = verify_package(log, REF, PUBLISHER, incremental=True)
    assert (got.checked, got.reason) == (1, "unvouched-belief")
    # a witness from before it carried the policy: the entries before the witnessed size say it
    log.witnesses[REF].pop("review")
    assert verify_package(log, REF, PUBLISHER, incremental=True).reason == "unvouched-belief"


def test_a_belief_entered_after_the_policy_required_review_is_unvouched(log) -> None:
    from acx.core.canonical import sha256_hex

    log.set_policy(REF, "t1/ops", "required", sha256_hex({"review": "required"}))
    _candidates(log, "c-1")
    assert verify_package(log, REF, PUBLISHER).status == "ok"  # positive control: a candidate
    # the store refuses a belief under `required` (the lease check) ...
    with pytest.raises(Conflict, match="policy"):
        log.append(REF, "t1/agent", [RecordWrite(memory("b-1", title="sneaked in"), "slot-b")])
    # ... so a belief entry there can only come from a writer that skips it: the verifier names it
    log.rows.policies.pop(REF)
    log.append(REF, "t1/agent", [RecordWrite(memory("b-1", title="sneaked in"), "slot-b")])
    got = verify_package(log, REF, PUBLISHER)
    assert (got.status, got.reason) == ("broken", "unvouched-belief") and "required" in (got.detail or "")
