"""Each tampering of the stored log is detected, with the right reason."""

from __future__ import annotations

from typing import Any

import pytest

from acx.adapters.dynamo import compress, from_item, pad, to_item
from acx.adapters.log_receipts import decode_receipt
from acx.adapters.log_store import LogStore
from acx.core import log as logcore
from acx.core import merkle
from acx.core.checkpoint import Checkpoint, sign_checkpoint
from acx.core.signing import LocalEd25519Signer
from acx.usecases.verify import verify_package
from tests.integration.conftest import PUBLISHER, REF, row_key  # type: ignore[import-not-found]

PK = {"S": "t1#pkg"}


@pytest.fixture
def built(store: LogStore, make_record: Any, write_of: Any) -> LogStore:
    for k in range(3):
        store.append(REF, "a", [write_of(make_record(10 * k + i)) for i in range(3)])
    store.forget(REF, "a", record_id="m-00011")
    first = verify_package(store, REF, PUBLISHER)  # establishes the witness at size 10
    assert first.status == "ok" and first.size == 10, str(first.to_dict())
    return store


def key(sk: str) -> dict[str, Any]:
    return {"pk": PK, "sk": {"S": sk}}


def reason(store: LogStore, incremental: bool = False) -> tuple[str, str | None]:
    r = verify_package(store, REF, PUBLISHER, incremental=incremental)
    return r.status, r.reason


def test_untouched_log_verifies_fully_and_incrementally(
    built: LogStore, write_of: Any, make_record: Any
) -> None:
    built.append(REF, "a", [write_of(make_record(77))])
    r = verify_package(built, REF, PUBLISHER, incremental=True)
    assert (r.status, r.checked, r.size) == ("ok", 1, 11)
    assert reason(built) == ("ok", None)


def test_edited_plaintext(built: LogStore, settings: Any) -> None:
    got = built.db.get_item(TableName=settings.records_table, Key=row_key(built, "r#m-00020"))
    row = from_item(got["Item"])
    built.db.update_item(
        TableName=settings.records_table,
        Key=row_key(built, "r#m-00020"),
        UpdateExpression="SET body = :b",
        ExpressionAttributeValues={":b": {"B": compress({"id": "m-00020", "evil": True})}},
    )
    assert row["state"] == "active"
    assert reason(built) == ("broken", "content-hash")


def test_edited_row_hash(built: LogStore, settings: Any) -> None:
    built.db.update_item(
        TableName=settings.records_table,
        Key=row_key(built, "r#m-00000"),
        UpdateExpression="SET contentHash = :h",
        ExpressionAttributeValues={":h": {"B": b"\x01" * 32}},
    )
    assert reason(built) == ("broken", "row-receipt-mismatch")


def test_forged_row_without_receipt(built: LogStore, settings: Any) -> None:
    record = {"id": "forged", "title": "x"}
    item = {
        "pk": row_key(built, "r#forged")["pk"]["S"],
        "sk": "r#forged",
        "seq": 10,
        "state": "active",
        "body": compress(record),
        "contentHash": bytes.fromhex(logcore.content_hash(record)),
        "entryHash": b"\x02" * 32,
        "slot": "s",
    }
    built.db.put_item(TableName=settings.records_table, Item=to_item(item))
    assert reason(built) == ("broken", "row-without-receipt")


def test_deleted_receipt(built: LogStore, settings: Any) -> None:
    built.db.delete_item(TableName=settings.receipts_table, Key=key(pad(3)))
    r = verify_package(built, REF, PUBLISHER)
    assert (r.status, r.reason, r.first_bad_seq) == ("broken", "sequence-gap", 3)


def test_all_receipts_deleted_is_unverifiable(built: LogStore, settings: Any) -> None:
    for sk in (pad(0), pad(3), pad(6), pad(9)):
        built.db.delete_item(TableName=settings.receipts_table, Key=key(sk))
    built.db.delete_item(TableName=settings.heads_table, Key=key("witness"))
    assert reason(built)[0] == "unverifiable"


def raw_rows(store: LogStore, settings: Any) -> list[dict[str, Any]]:
    """Every memory row item of the package, decoded from DynamoDB's attribute values."""
    items = []
    for pk in store.rows.layout.pks(REF):  # every row shard
        items += store.db.query(
            TableName=settings.records_table,
            KeyConditionExpression="pk = :p AND begins_with(sk, :r)",
            ExpressionAttributeValues={":p": {"S": pk}, ":r": {"S": "r#"}},
        )["Items"]
    return [from_item(i) for i in items]


def rewrite_consistently(store: LogStore, settings: Any, record_id: str, new_record: dict[str, Any]) -> None:
    """The attacker's best move without the key: change a record and recompute every hash after it."""
    db = store.db
    items = [
        from_item(i)
        for i in db.query(
            TableName=settings.receipts_table,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": PK},
        )["Items"]
    ]
    new_ch = bytes.fromhex(logcore.content_hash(new_record))
    prev, rng, new_hash = logcore.GENESIS, merkle.CompactRange(), {}
    for item in items:
        item["prev"] = bytes.fromhex(prev)
        for e, decoded in zip(item["e"], decode_receipt(item), strict=True):
            payload = decoded.payload
            if e["k"] == f"r#{record_id}" and e["o"] == "remember":
                e["c"] = new_ch
                payload["contentHash"] = new_ch.hex()
            h = logcore.entry_hash(prev, payload)
            e["h"] = bytes.fromhex(h)
            new_hash[e["s"]] = e["h"]
            rng.append(e["h"])
            prev = h
        db.put_item(TableName=settings.receipts_table, Item=to_item(item))
    head = from_item(db.get_item(TableName=settings.heads_table, Key=key("head"))["Item"])
    head.update(chainHead=prev, range=rng.to_hex())
    db.put_item(TableName=settings.heads_table, Item=to_item(head))
    for row in raw_rows(store, settings):
        row["entryHash"] = new_hash[int(row["seq"])]
        if row["sk"] == f"r#{record_id}":
            row["body"], row["contentHash"] = compress(new_record), new_ch
        db.put_item(TableName=settings.records_table, Item=to_item(row))


def test_consistent_rewrite_of_both_tables(built: LogStore, settings: Any) -> None:
    rewrite_consistently(built, settings, "m-00020", {"id": "m-00020", "title": "rewritten"})
    assert reason(built) == ("broken", "witness-mismatch")
    built.db.delete_item(TableName=settings.heads_table, Key=key("witness"))  # a verifier with no history
    assert reason(built) == ("broken", "checkpoint-mismatch")  # the signed root still names the old log


def test_consistent_rewrite_with_self_signed_checkpoint(built: LogStore, settings: Any) -> None:
    rewrite_consistently(built, settings, "m-00020", {"id": "m-00020", "title": "rewritten"})
    built.db.delete_item(TableName=settings.heads_table, Key=key("witness"))
    head = built.log_head(REF)
    forged = sign_checkpoint(
        Checkpoint("dev.acx.local/t1/pkg", 10, head.root, head.chain_head),
        "acx-test-log",
        LocalEd25519Signer(),
    )
    built.db.put_item(
        TableName=settings.heads_table,
        Item=to_item({"pk": "t1#pkg", "sk": f"cp#{pad(10)}", "size": 10, "text": forged}),
    )
    assert reason(built) == ("broken", "checkpoint-signature")


def test_truncated_last_entries(built: LogStore, settings: Any) -> None:
    db = built.db
    db.delete_item(TableName=settings.receipts_table, Key=key(pad(9)))  # the forget entry
    db.delete_item(TableName=settings.heads_table, Key=key(f"cp#{pad(10)}"))
    db.delete_item(TableName=settings.receipts_table, Key=key(pad(6)))
    db.delete_item(TableName=settings.heads_table, Key=key(f"cp#{pad(9)}"))
    for i in range(20, 23):
        db.delete_item(TableName=settings.records_table, Key=row_key(built, f"r#m-{i:05d}"))
    rng = merkle.CompactRange()
    entries = list(built.entries(REF))
    for e in entries:
        rng.append(bytes.fromhex(e.hash))
    row = from_item(db.get_item(TableName=settings.records_table, Key=row_key(built, "r#m-00011"))["Item"])
    db.put_item(
        TableName=settings.records_table,
        Item=to_item({**row, "seq": 4, "state": "active", "entryHash": bytes.fromhex(entries[4].hash)}),
    )
    head = from_item(db.get_item(TableName=settings.heads_table, Key=key("head"))["Item"])
    head.update(size=6, chainHead=entries[-1].hash, range=rng.to_hex())
    db.put_item(TableName=settings.heads_table, Item=to_item(head))
    r = verify_package(built, REF, PUBLISHER)
    assert (r.status, r.reason) == ("broken", "truncated"), str(r.to_dict())
    assert reason(built, incremental=True) == ("broken", "truncated")


def test_older_checkpoint_put_back(built: LogStore, settings: Any) -> None:
    old = built.checkpoints.at(REF, 6)
    built.db.put_item(
        TableName=settings.heads_table,
        Item=to_item({"pk": "t1#pkg", "sk": f"cp#{pad(10)}", "size": 10, "text": old}),
    )
    assert reason(built) == ("broken", "checkpoint-rollback")
    built.db.delete_item(TableName=settings.heads_table, Key=key("witness"))
    assert reason(built) == ("broken", "checkpoint-mismatch")


def test_forged_checkpoint_signature(built: LogStore, settings: Any) -> None:
    text = built.latest_checkpoint(REF) or ""
    body, sig_line = text.rsplit("\n\n", 1)
    prefix, b64 = sig_line.rsplit(" ", 1)
    flipped = "A" if b64[10] != "A" else "B"
    forged = f"{body}\n\n{prefix} {b64[:10]}{flipped}{b64[11:]}"
    built.db.put_item(
        TableName=settings.heads_table,
        Item=to_item({"pk": "t1#pkg", "sk": f"cp#{pad(10)}", "size": 10, "text": forged}),
    )
    assert reason(built) == ("broken", "checkpoint-signature")


def test_a_candidate_turned_into_a_belief_in_the_table_is_an_unvouched_belief(
    built: LogStore, settings: Any, make_record: Any, write_of: Any
) -> None:
    import dataclasses

    built.append(
        REF, "a", [dataclasses.replace(write_of(make_record(i)), trust="candidate") for i in (40, 41)]
    )
    approved = built.record(REF, "m-00040")
    assert approved is not None
    built.review(REF, "reviewer", "m-00040", "approve", approved.seq)
    assert reason(built) == ("ok", None)  # positive control: an approve vouches for m-00040
    built.db.update_item(  # what someone with write access to the records table can do
        TableName=settings.records_table,
        Key=row_key(built, "r#m-00041"),
        UpdateExpression="REMOVE #t",
        ExpressionAttributeNames={"#t": "trust"},
    )
    assert built.record(REF, "m-00041").trust == "belief"  # type: ignore[union-attr]
    assert reason(built) == ("broken", "unvouched-belief")
