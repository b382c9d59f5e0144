"""Memories that change (issue 28), through the API handler on moto: update supersedes and the old
version leaves default reads but answers history and as-of; invalidate ends validity without erasing;
the log verifies and its proofs cover the supersession entries; forget erases every version; a racing
update and forget end in one of the two orders with nothing forgotten coming back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from acx.core import merkle
from acx.core.checkpoint import parse_checkpoint
from tests.integration.service import Service, bundle, record, scan_everything, start_service
from tests.integration.test_log_concurrency import atomic_moto  # noqa: F401 - a fixture

PKG = "versions-pkg"
OLD = "Staging API port is 8080, set in the nginx upstream block of the gateway (Walrus-7731)."
NEW = "Staging API port is 9090 now (Narwhal-4410)."
BASE = f"/v1/packages/{PKG}/memories"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def staging(summary: str = OLD) -> dict[str, Any]:
    return record(7, title="Staging API port", summary=summary)


def put(svc: Service, rec: dict[str, Any], **body: Any) -> tuple[int, Any]:
    return svc.call("PUT", f"{BASE}/{rec['id']}", body={"record": rec, **body})


def verified(svc: Service) -> dict[str, Any]:
    return dict(svc.call("GET", f"/v1/packages/{PKG}/log/verify")[1])


def test_update_supersedes_reads_history_as_of_and_proofs(svc: Service) -> None:
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([staging(), record(1)]))[0] == 201
    # the first symptom: a shorter same-id correction is not "unchanged", and says why
    status, body = svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([staging(NEW)]))
    assert status == 201 and body["unchanged"] == 0, body
    assert [(k["id"], k["field"]) for k in body["kept"]] == [("mem-0007", "summary")]
    assert f"PUT {BASE}/mem-0007" in body["kept"][0]["reason"]
    old = svc.call("GET", f"{BASE}/mem-0007")[1]

    status, out = put(svc, staging(NEW))
    assert status == 200, out
    assert out["supersedes"] == {"seq": old["seq"], "hash": out["supersedes"]["hash"]}
    assert set(out) == {"id", "seq", "supersedes", "validFrom"}

    assert svc.call("GET", f"{BASE}/mem-0007")[1]["record"]["summary"] == NEW
    listed = svc.call("GET", BASE)[1]["records"]
    assert [r["summary"] for r in listed if r["id"] == "mem-0007"] == [NEW]
    hits = svc.call("GET", f"{BASE}/search", query={"q": "Walrus 8080 nginx upstream"})[1]["results"]
    assert all(h["record"]["summary"] != OLD for h in hits)
    hits = svc.call("GET", f"{BASE}/search", query={"q": "Narwhal 9090"})[1]["results"]
    assert hits and hits[0]["id"] == "mem-0007" and hits[0]["record"]["summary"] == NEW

    status, hist = svc.call("GET", f"{BASE}/mem-0007/history")
    assert status == 200, hist
    first, second = hist["versions"]
    assert (first["operation"], first["record"]["summary"], first["validUntil"]) == (
        "remember",
        OLD,
        out["validFrom"],
    )
    assert (second["operation"], second["seq"], second["validUntil"]) == ("supersede", out["seq"], None)
    assert second["actor"] == "acme/agent-1" and second["recordedAt"] == out["validFrom"]

    then = first["validFrom"]  # the old version was valid from then until the update
    got = svc.call("GET", f"{BASE}/mem-0007", query={"asOf": then})[1]
    assert got["record"]["summary"] == OLD and got["seq"] == first["seq"]
    page = svc.call("GET", BASE, query={"asOf": then})[1]["records"]
    assert [r["summary"] for r in page if r["id"] == "mem-0007"] == [OLD]
    hits = svc.call("GET", f"{BASE}/search", query={"q": "Walrus nginx", "asOf": then})[1]["results"]
    assert hits and hits[0]["record"]["summary"] == OLD
    status, err = svc.call("GET", BASE, query={"asOf": "yesterday"})
    assert status == 400 and err["error"]["path"] == "$.asOf"

    assert verified(svc)["status"] == "ok"
    log = svc.call("GET", f"/v1/packages/{PKG}/log")[1]
    cp = parse_checkpoint(log["checkpoint"])
    proof = svc.call(
        "GET",
        f"/v1/packages/{PKG}/log/proof/inclusion",
        query={"index": str(out["seq"]), "size": str(cp.size)},
    )[1]
    entries = svc.call("GET", f"/v1/packages/{PKG}/log/entries", query={"limit": "100"})[1]["entries"]
    supersede = next(e for e in entries if e["seq"] == out["seq"])
    assert supersede["operation"] == "supersede"
    leaf = merkle.leaf_hash(bytes.fromhex(supersede["hash"]))
    assert proof["leafHash"] == leaf.hex()
    assert merkle.verify_inclusion(
        leaf, out["seq"], cp.size, [bytes.fromhex(p) for p in proof["proof"]], cp.root
    )


def test_invalidate_ends_validity_without_erasing_and_forget_then_erases_every_version(svc: Service) -> None:
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([staging()]))[0] == 201
    assert put(svc, staging(NEW))[0] == 200
    status, out = svc.call("POST", f"{BASE}/mem-0007/invalidate", body={"reason": "the gateway was retired"})
    assert status == 200 and set(out) == {"id", "seq", "validUntil"}, out
    assert svc.call("GET", f"{BASE}/mem-0007")[0] == 404
    assert svc.call("GET", BASE)[1]["records"] == []
    assert scan_everything("gateway was retired") == []  # the reason is hashed, never stored
    versions = svc.call("GET", f"{BASE}/mem-0007/history")[1]["versions"]
    assert [v["record"]["summary"] for v in versions] == [OLD, NEW]
    assert versions[1]["validUntil"] == out["validUntil"]
    assert verified(svc)["status"] == "ok"
    assert scan_everything("Walrus-7731") and scan_everything("Narwhal-4410")  # kept, not erased

    status, body = svc.call("DELETE", f"{BASE}/mem-0007")
    assert status == 200, body
    assert scan_everything("Walrus-7731") == [] and scan_everything("Narwhal-4410") == []
    assert [v["record"] for v in svc.call("GET", f"{BASE}/mem-0007/history")[1]["versions"]] == [None, None]
    for text in (OLD, NEW):  # the knowledge of every version is refused, under any id
        status, body = svc.call(
            "POST",
            f"/v1/packages/{PKG}/bundles",
            body=bundle([record(50, title="Staging API port", summary=text)]),
        )
        assert status == 409 and body["error"]["code"] == "forgotten", body
    status, body = put(svc, staging("A different lesson about the staging API entirely"))
    assert status == 409 and "was forgotten and cannot be updated" in body["error"]["message"]
    assert verified(svc)["status"] == "ok"


def test_bad_updates_name_the_problem_and_write_nothing(svc: Service) -> None:
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([staging()]))[0] == 201
    size = svc.call("GET", f"/v1/packages/{PKG}/log")[1]["size"]
    token = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"
    cases = [
        (f"{BASE}/mem-0099", {"record": record(99)}, 404, "not_found"),
        (f"{BASE}/mem-0007", {"record": record(8)}, 422, None),  # the body's id differs from the path
        (f"{BASE}/mem-0007", {"record": staging(NEW), "validFrom": "soon"}, 422, None),
        (f"{BASE}/mem-0007", {"record": staging(NEW), "extra": 1}, 422, None),
        (f"{BASE}/mem-0007", {"record": staging(f"token {token}")}, 422, "blocked"),
        (f"{BASE}/mem-0007", {}, 422, None),
        (f"{BASE}/mem-0007", {"record": {**staging(NEW), token: 1, "xpAwarded": -1}}, 422, None),
    ]
    for path, body, status, code in cases:
        got, answer = svc.call("PUT", path, body=body)
        assert got == status, (body, answer)
        assert code is None or answer["error"]["code"] == code
        assert token not in str(answer)
    status, answer = svc.call("POST", f"{BASE}/mem-0007/invalidate", body={"reason": "x" * 1001})
    assert status == 422, answer
    status, answer = svc.call(
        "PUT", f"{BASE}/mem-0007", body={"record": staging(NEW)}, scopes=["memory:read"]
    )
    assert status == 403
    assert svc.call("GET", f"/v1/packages/{PKG}/log")[1]["size"] == size
    assert scan_everything(token) == []


def test_an_exported_cartridge_after_updates_holds_the_current_versions_and_is_trusted(
    svc: Service, tmp_path: Path
) -> None:
    from acx.core.cartridge import CartridgeReader
    from acx.core.trust import evaluate

    assert (
        svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([staging(), record(1), record(2)]))[0]
        == 201
    )
    assert put(svc, staging(NEW))[0] == 200
    assert svc.call("POST", f"{BASE}/mem-0002/invalidate", body={"reason": "obsolete"})[0] == 200
    status, exported = svc.call("POST", f"/v1/packages/{PKG}/cartridges", body={})
    assert status == 201 and exported["status"] == "ready", exported
    path = tmp_path / "c.acx"
    key = f"cartridges/acme/{PKG}/{exported['cartridgeId']}.acx"
    path.write_bytes(
        boto3.client("s3", region_name="us-east-1")
        .get_object(Bucket=svc.env["CARTRIDGES_BUCKET"], Key=key)["Body"]
        .read()
    )
    registry = svc.call("GET", "/v1/trust-registry", tenant=None)[1]
    verdict = evaluate(path, registry=registry)
    assert verdict.verdict == "trusted", verdict.reasons
    with CartridgeReader(path) as reader:
        payloads = {m["id"]: m for m in reader.memory_records()}
    assert set(payloads) == {"mem-0001", "mem-0007"} and payloads["mem-0007"]["summary"] == NEW
    assert verdict.inclusion.get("checked", verdict.inclusion.get("proofs")), verdict.inclusion


@pytest.mark.usefixtures("atomic_moto")  # moto's backend applies each request atomically, as DynamoDB
def test_a_racing_update_and_forget_end_in_one_order_with_nothing_forgotten_back(svc: Service) -> None:
    from acx.usecases import forget, versions
    from acx.usecases.deps import deps
    from acx.usecases.errors import ServiceError

    d = deps()
    orders = []
    for round_ in range(6):
        rid = f"mem-{100 + round_:04d}"
        first = record(100 + round_, title=f"Race {round_} port", summary=f"Port 80{round_} (Ibex-{round_}a)")
        assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([first]))[0] == 201
        outcome: dict[str, Any] = {}

        second = dict(first, summary=f"Port 90 (Ibex-{round_}b)")

        def updater(out: dict[str, Any] = outcome, rid: str = rid, new: dict[str, Any] = second) -> None:
            try:
                out["update"] = versions.update(d, "acme", PKG, "agent-1", rid, new)
            except ServiceError as exc:
                out["update"] = exc.status

        def forgetter(out: dict[str, Any] = outcome, rid: str = rid) -> None:
            out["forget"] = forget.forget(d, "acme", PKG, "ops", record_id=rid)

        if round_ == 0:  # each order once for sure, then both at once
            updater(), forgetter()
        elif round_ == 1:
            forgetter(), updater()
        else:
            threads = [threading.Thread(target=updater), threading.Thread(target=forgetter)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        orders.append("forget first" if outcome["update"] == 409 else "update first")
        assert outcome["forget"]["forgotten"] == rid
        assert outcome["update"] == 409 or outcome["update"]["id"] == rid, outcome  # either order
        assert scan_everything(f"Ibex-{round_}a") == [] and scan_everything(f"Ibex-{round_}b") == []
        assert svc.call("GET", f"{BASE}/{rid}")[0] == 404
    assert {"forget first", "update first"} <= set(orders[:2])
    assert verified(svc)["status"] == "ok"


def test_verification_detects_an_edited_or_forged_ended_version(svc: Service) -> None:
    import zlib

    from acx.core.canonical import dumps_record

    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle([staging()]))[0] == 201
    assert put(svc, staging(NEW))[0] == 200
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    table = svc.env["RECORDS_TABLE"]
    (item,) = ddb.query(
        TableName=table,
        KeyConditionExpression="pk = :p AND begins_with(sk, :v)",
        ExpressionAttributeValues={":p": {"S": f"acme#{PKG}"}, ":v": {"S": "v#mem-0007#"}},
    )["Items"]
    record = staging("Staging API port is 8081, set in the nginx upstream block (edited).")
    edited = dict(item, body={"B": zlib.compress(dumps_record(record))})
    ddb.put_item(TableName=table, Item=edited)
    got = verified(svc)
    assert (got["status"], got["reason"]) == ("broken", "content-hash"), got
    forged = dict(item, sk={"S": "v#mem-0007#000000000099"}, seq={"N": "99"})
    ddb.put_item(TableName=table, Item=item)  # restored: verifies again
    assert verified(svc)["status"] == "ok"
    ddb.put_item(TableName=table, Item=forged)  # a version no receipt holds
    got = verified(svc)
    assert (got["status"], got["reason"]) == ("broken", "row-without-receipt"), got
