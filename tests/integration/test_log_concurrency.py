"""Writers racing on one package through a real HTTP moto server: no fork, no gap, nothing lost,
no content slot filled twice."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from acx.adapters.log_store import Conflict
from acx.config import Settings
from acx.core.signing import LocalEd25519Signer
from acx.usecases.verify import verify_package
from tests.fakes import FakeJobs
from tests.integration.conftest import (  # type: ignore[import-not-found]
    PUBLISHER,
    REF,
    _make_record,
    _write_of,
    create_tables,
    log_store,
)
from tests.unit.core.test_bundle import record


@pytest.fixture
def atomic_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's DynamoDB backend is not thread-safe: two threaded requests can both pass a condition.

    DynamoDB itself applies each request (and each transaction) atomically, so the server is made to
    do the same by serialising the backend's item operations (DESIGN §6: a stand-in limit, not ours).
    """
    from moto.dynamodb.models import DynamoDBBackend

    big_lock = threading.RLock()
    for name in (
        "transact_write_items",
        "put_item",
        "update_item",
        "delete_item",
        "batch_write_item",
        "get_item",
        "batch_get_item",
        "query",
    ):
        original = getattr(DynamoDBBackend, name)

        def locked(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with big_lock:
                return __original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, locked)


@pytest.fixture
def endpoint(atomic_moto: None) -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    # moto's backends live in this process, shared by every server it starts: begin empty.
    urllib.request.urlopen(urllib.request.Request(url + "/moto-api/reset", method="POST")).close()  # noqa: S310
    try:
        yield url
    finally:
        server.stop()


def client(endpoint: str) -> Any:
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint)


def run_all(worker: Any, n: int) -> None:
    """Run ``worker(0..n-1)`` on n threads at once and wait for all of them."""
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)


def test_eight_writers_one_package(endpoint: str) -> None:
    settings = Settings.model_validate({})
    create_tables(client(endpoint), settings)
    signer = LocalEd25519Signer()
    acked: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        store = log_store(client(endpoint), settings, signer)
        try:
            for op in range(2):
                recs = [_make_record(w * 100 + op * 10 + i) for i in range(2)]
                # one record every writer touches: the merge race the lease + expected checks guard
                shared = {**_make_record(99999), "xpAwarded": w * 10 + op}
                for _ in range(50):
                    by_id = store.rows.lookup(REF, {r["id"] for r in [*recs, shared]}, set()).by_id
                    expected = {
                        r["id"]: by_id[r["id"]].seq if r["id"] in by_id else None for r in [*recs, shared]
                    }
                    try:
                        store.append(REF, f"w{w}", [_write_of(r) for r in [*recs, shared]], expected=expected)
                        break
                    except Conflict:
                        continue
                else:
                    raise AssertionError("writer never got through")
                with lock:
                    for r in recs:
                        acked[r["id"]] = r
        except BaseException as exc:
            errors.append(exc)

    run_all(worker, 8)
    assert not errors, errors
    store = log_store(client(endpoint), settings, signer)
    entries = list(store.entries(REF))
    assert [e.seq for e in entries] == list(range(8 * 2 * 3))  # contiguous, no fork, no gap
    rows = {r.id: r for r in store.rows.iter_active(REF)}
    for rid, rec in acked.items():
        assert rows[rid].record == rec
    assert len(rows) == len(acked) + 1
    result = verify_package(store, REF, PUBLISHER)
    assert result.status == "ok", str(result.to_dict())
    assert result.orphans == []


def test_writers_racing_for_one_empty_slot_leave_one_survivor(endpoint: str) -> None:
    """Six uploads, each the same memory under its own id, all at once into an empty package.

    Each writer's lookup finds the slot empty; without the slot check at the claim, every one of them
    would write its own row for the same content. With it, losers re-plan and fold into the winner.
    """
    import json

    from acx.adapters.objects import ObjectStore
    from acx.usecases.deps import Deps
    from acx.usecases.ingest import ingest_bundle

    settings = Settings.model_validate({})
    create_tables(client(endpoint), settings)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    s3.create_bucket(Bucket=settings.data_bucket)
    signer = LocalEd25519Signer()
    content = {k: v for k, v in record(0).items() if k != "id"}
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        store = log_store(client(endpoint), settings, signer)
        data = ObjectStore(s3, settings.data_bucket)
        deps = Deps(settings, store, data, data, data, FakeJobs(), signer)
        body = json.dumps(
            {"schemaVersion": "acx.memory-bundle/1", "records": [{"id": f"same-{w}", **content}]}
        )
        barrier.wait()
        try:
            ingest_bundle(deps, "t1", "pkg", f"w{w}", body.encode())
        except BaseException as exc:
            errors.append(exc)

    run_all(worker, 6)
    assert not errors, errors
    store = log_store(client(endpoint), settings, signer)
    rows = list(store.rows.iter_active(REF))
    assert [r.id for r in rows] == ["same-0"]  # one row per slot; the smallest id survives
    result = verify_package(store, REF, PUBLISHER)
    assert result.status == "ok", str(result.to_dict())


def test_an_upload_racing_a_forget_never_brings_the_knowledge_back(endpoint: str) -> None:
    """Issue 11's race: a copy of a memory under a new id (plus filler) uploaded while the memory is
    forgotten. Whichever commit wins, the forgotten text is absent afterwards and the log verifies:
    the tombstone check runs under the writer's lease, and forget erases every row of the knowledge.
    Moving the check out of the commit (before the merge) lets the copy land after the forget."""
    import json

    from acx.adapters.jobs import JobStore
    from acx.adapters.objects import ObjectStore
    from acx.core.package import PackageRef
    from acx.usecases.deps import Deps
    from acx.usecases.errors import ServiceError
    from acx.usecases.forget import forget
    from acx.usecases.ingest import ingest_bundle

    settings = Settings.model_validate({})
    create_tables(client(endpoint), settings)
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    s3.create_bucket(Bucket=settings.data_bucket)
    signer = LocalEd25519Signer()
    marker = "Wombat-freeze-lesson-8812"
    memory = {**record(0), "id": "orig", "summary": f"{marker}: hold the deploy while the index rebuilds"}

    def make_deps() -> Deps:
        data = ObjectStore(s3, settings.data_bucket)
        jobs = JobStore(client(endpoint), settings.jobs_table)
        return Deps(settings, log_store(client(endpoint), settings, signer), data, data, data, jobs, signer)

    def body(records: list[dict[str, Any]]) -> bytes:
        return json.dumps({"schemaVersion": "acx.memory-bundle/1", "records": records}).encode()

    def one_round(rnd: int) -> str:
        package = f"race-{rnd}"
        seed = make_deps()
        ingest_bundle(seed, "t1", package, "seed", body([memory]))
        copy_ = {**memory, "id": f"copy-{rnd}", "tags": ["other"], "xpAwarded": 7}
        filler = [{**record(100 + i), "id": f"fill-{rnd}-{i}"} for i in range(150)]
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []
        result: dict[str, str] = {}

        def upload(
            copy_: dict[str, Any] = copy_, filler: list[dict[str, Any]] = filler, package: str = package
        ) -> None:
            deps = make_deps()
            barrier.wait()
            try:
                ingest_bundle(deps, "t1", package, "uploader", body([*filler, copy_]))
                result["upload"] = "landed"
            except ServiceError as exc:
                result["upload"] = f"refused {exc.status}"
            except BaseException as exc:
                errors.append(exc)

        def forget_it(package: str = package) -> None:
            deps = make_deps()
            barrier.wait()
            try:
                forget(deps, "t1", package, "operator", record_id="orig")
            except BaseException as exc:
                errors.append(exc)

        run_all(lambda w: (upload if w == 0 else forget_it)(), 2)
        assert not errors, errors
        store = make_deps().log
        ref = PackageRef("t1", package)
        live = [r.record for r in store.rows.iter_active(ref)]
        assert not any(marker in (r or {}).get("summary", "") for r in live), (rnd, result)
        verdict = verify_package(store, ref, PUBLISHER)
        assert verdict.status == "ok", verdict.to_dict()
        return result.get("upload", "?")

    outcomes = [one_round(rnd) for rnd in range(6)]
    assert all(o in ("landed", "refused 409") for o in outcomes), outcomes
