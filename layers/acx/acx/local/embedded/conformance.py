"""mypy's check that the embedded backend implements the ports the use cases are written against."""

from __future__ import annotations

from acx.local.embedded.log import SqliteLog
from acx.local.embedded.tables import SqliteCatalog, SqliteIdempotency, SqliteJobs
from acx.usecases.ports import CatalogPort, IdempotencyPort, JobsPort, LogPort


def _conformance(
    log: SqliteLog, jobs: SqliteJobs, idempotency: SqliteIdempotency, catalog: SqliteCatalog
) -> None:
    """Never called: each assignment fails the type check when a class drifts from its port."""
    _log: LogPort = log
    _jobs: JobsPort = jobs
    _idempotency: IdempotencyPort = idempotency
    _catalog: CatalogPort = catalog
