"""moto fixtures for the log store: tables with the layout of docs/ARCHITECTURE.md."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from acx.adapters.log_store import LogStore
from acx.config import Settings
from acx.core.checkpoint import NoteSigner
from acx.core.package import PackageRef
from acx.core.rows import RecordWrite
from acx.core.signing import LocalEd25519Signer
from acx.local.resources import create_tables_named
from tests.integration.moto_stock import patched_moto

REF = PackageRef("t1", "pkg")
PUBLISHER = "dev.acx.local"


def log_store(client: Any, settings: Settings, signer: LocalEd25519Signer, **kwargs: Any) -> LogStore:
    """A log store signing checkpoints as the tests' log key."""
    notes = NoteSigner("acx-test-log", signer)
    return LogStore(client, settings, notes.sign, notes.verifier_key, **kwargs)


def row_key(store: LogStore, sk: str, ref: PackageRef = REF) -> dict[str, Any]:
    """The DynamoDB key of a records-table item of ``ref``: ``r#``/``s#`` items live on their row
    shard (acx.adapters.log_rows), everything else on the package key."""
    return {"pk": {"S": store.rows.layout.pk_for(ref, sk)}, "sk": {"S": sk}}


def create_tables(dynamodb_client: Any, settings: Settings) -> None:
    """The log and job tables, as template.yaml declares them, under the default names, without the
    rest of the stack; the e2e and handler tests create everything from template.yaml instead."""
    fields = ("records_table", "receipts_table", "heads_table", "jobs_table")
    create_tables_named(
        dynamodb_client, {Settings.model_fields[f].alias or f: getattr(settings, f) for f in fields}
    )


class FakeClock:
    """Deterministic time: sleeping advances it, so lease expiry is instant in tests."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.001)


@pytest.fixture(autouse=True, scope="module")
def _moto_as_shipped() -> Iterator[None]:
    """Each test file starts and ends on moto as shipped: a patch an earlier file left on this worker
    would decide what the production adapters run against here."""
    assert patched_moto() == [], "moto patched by an earlier test file on this worker"
    yield
    assert patched_moto() == [], "moto left patched by this test file"


@pytest.fixture
def settings() -> Settings:
    return Settings.model_validate({})


@pytest.fixture
def ddb(settings: Settings) -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_tables(client, settings)
        yield client


@pytest.fixture(scope="session")
def signer() -> LocalEd25519Signer:
    return LocalEd25519Signer()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(ddb: Any, settings: Settings, signer: LocalEd25519Signer, clock: FakeClock) -> LogStore:
    return log_store(ddb, settings, signer, clock=clock, sleep=clock.sleep)


def _make_record(i: int, text: str = "", portable: bool = True) -> dict[str, Any]:
    """A small memory record (shape only; validation is another module's job)."""
    return {
        "id": f"m-{i:05d}",
        "title": f"lesson {i}",
        "summary": text or f"summary of lesson {i}: retry with jittered backoff",
        "portable": portable,
        "codebaseFingerprint": None if portable else "cbf1_" + "a" * 40,
        "tags": ["ops", f"t{i % 3}"],
        "impact": "neutral",
        "xpAwarded": i,
    }


def _write_of(record: dict[str, Any]) -> RecordWrite:
    from acx.core.canonical import sha256_hex

    return RecordWrite(record, sha256_hex({"slotOf": record["summary"], "id": record["id"]}))


@pytest.fixture(name="make_record")
def make_record_fixture() -> Any:
    return _make_record


@pytest.fixture(name="write_of")
def write_of_fixture() -> Any:
    return _write_of
