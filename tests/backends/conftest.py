"""The backends the contract suite runs on: the AWS adapters on stock moto, and the embedded backend.

Each test takes ``backend`` and runs once per backend (``-k moto`` / ``-k embedded`` to pick one). A
:class:`Backend` hands out the four ports under test, built the way production builds them:

- ``moto``: :class:`LogStore`, :class:`JobStore`, :class:`IdempotencyStore` and :class:`Catalog` on
  ``moto.mock_aws`` as shipped, tables created from template.yaml's keys (as the integration tests
  create them). The suite refuses to run on a moto whose DynamoDB classes carry a method from outside
  moto (:func:`stock_moto`): a stand-in patched by another test file would make this a test of the
  patch.
- ``embedded``: :class:`SqliteLog` and the tables of :mod:`acx.local.embedded` on a fresh file under
  ``tmp_path``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acx.config import Settings
from acx.core.canonical import sha256_hex
from acx.core.checkpoint import NoteSigner
from acx.core.package import PackageRef
from acx.core.rows import RecordWrite
from acx.core.signing import LocalEd25519Signer
from acx.usecases.ports import CatalogPort, IdempotencyPort, JobsPort, LogPort

PUBLISHER = "dev.acx.local"
REF = PackageRef("t1", "pkg")
BACKENDS = ("moto", "embedded")


class FakeClock:
    """Time that sleeping advances: a lease left behind by a failed commit expires at once."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.001)


@dataclass
class Backend:
    """One backend's ports; ``new_log`` builds another log over the same store (``clock``: its time)."""

    name: str
    log: LogPort
    jobs: JobsPort
    idempotency: IdempotencyPort
    catalog: CatalogPort
    new_log: Callable[..., LogPort]
    notes: NoteSigner
    extra: dict[str, Any] = field(default_factory=dict)

    def set_hook(self, log: LogPort, hook: Callable[[str], None]) -> None:
        """Fault injection at the commit's boundaries (both logs call it with the same names)."""
        setattr(log, "hook", hook)  # noqa: B010 - not a port method: each log's fault hook


def stock_moto() -> None:
    """Fail unless moto's DynamoDB classes are as moto ships them (no method defined elsewhere)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType, Item
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler

    for cls in (DynamoDBBackend, DynamoHandler, Item, DynamoType, Table):
        for name, member in vars(cls).items():
            if inspect.isfunction(member) and not member.__module__.startswith("moto."):
                pytest.fail(f"moto's {cls.__name__}.{name} comes from {member.__module__}: not stock moto")


def _moto(signer: LocalEd25519Signer) -> Iterator[Backend]:
    import boto3
    from moto import mock_aws

    from acx.adapters.catalog import Catalog
    from acx.adapters.idempotency import IdempotencyStore
    from acx.adapters.jobs import JobStore
    from acx.adapters.log_store import LogStore
    from acx.local.resources import create_tables_named

    stock_moto()
    settings = Settings.model_validate({})
    notes = NoteSigner("acx-test-log", signer)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        fields = ("records_table", "receipts_table", "heads_table", "jobs_table", "idempotency_table")
        create_tables_named(
            client, {Settings.model_fields[f].alias or f: getattr(settings, f) for f in fields}
        )

        def new_log(clock: Callable[[], float] | None = None) -> LogPort:
            if clock is None:
                fake = FakeClock()
                return LogStore(
                    client, settings, notes.sign, notes.verifier_key, clock=fake, sleep=fake.sleep
                )
            return LogStore(client, settings, notes.sign, notes.verifier_key, clock=clock)

        yield Backend(
            "moto",
            new_log(),
            JobStore(client, settings.jobs_table),
            IdempotencyStore(client, settings.idempotency_table),
            Catalog(client, settings.heads_table, settings.records_table),
            new_log,
            notes,
            {"client": client},
        )


def _embedded(signer: LocalEd25519Signer, path: Path) -> Iterator[Backend]:
    from acx.local.embedded.db import Database
    from acx.local.embedded.log import SqliteLog
    from acx.local.embedded.tables import SqliteCatalog, SqliteIdempotency, SqliteJobs

    notes = NoteSigner("acx-test-log", signer)
    db = Database(path / "acx.sqlite")

    def new_log(clock: Callable[[], float] | None = None) -> LogPort:
        if clock is None:
            return SqliteLog(db, notes.sign, notes.verifier_key(), PUBLISHER)
        return SqliteLog(db, notes.sign, notes.verifier_key(), PUBLISHER, clock=clock)

    try:
        yield Backend(
            "embedded",
            new_log(),
            SqliteJobs(db),
            SqliteIdempotency(db),
            SqliteCatalog(db),
            new_log,
            notes,
            {"db": db},
        )
    finally:
        db.close()


@pytest.fixture(scope="session")
def signer() -> LocalEd25519Signer:
    return LocalEd25519Signer()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, signer: LocalEd25519Signer, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "moto":
        yield from _moto(signer)
    else:
        yield from _embedded(signer, tmp_path)


def record(i: int, text: str = "", *, portable: bool = True, tags: list[str] | None = None) -> dict[str, Any]:
    """A small memory record (shape only: the log stores what the use cases validated)."""
    return {
        "id": f"m-{i:05d}",
        "title": f"lesson {i}",
        "summary": text or f"summary of lesson {i}: retry with jittered backoff",
        "portable": portable,
        "codebaseFingerprint": None if portable else "cbf1_" + "a" * 40,
        "tags": tags if tags is not None else ["ops", f"t{i % 3}"],
        "impact": "neutral",
        "xpAwarded": i,
    }


def write_of(rec: dict[str, Any], **kwargs: Any) -> RecordWrite:
    """The write of a record, its slot derived from its text and id (distinct per record)."""
    return RecordWrite(rec, sha256_hex({"slotOf": rec["summary"], "id": rec["id"]}), **kwargs)


@pytest.fixture
def both(signer: LocalEd25519Signer, tmp_path: Path) -> Iterator[tuple[Backend, Backend]]:
    """The two backends at once, their logs on clocks that read the same instant: the same operations
    then make byte-identical entries and checkpoints."""
    moto, embedded = _moto(signer), _embedded(signer, tmp_path)
    try:
        a, b = next(moto), next(embedded)
        a.log, b.log = a.new_log(clock=FakeClock()), b.new_log(clock=FakeClock())
        yield a, b
    finally:
        moto.close()
        embedded.close()
