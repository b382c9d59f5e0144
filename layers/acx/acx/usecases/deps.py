"""Composition root: builds the adapters once per process from the environment."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar, cast

from acx.adapters.alarms import AlarmTopic
from acx.adapters.aws import client
from acx.adapters.aws import reset as reset_clients
from acx.adapters.catalog import Catalog
from acx.adapters.forget_key import KmsMacKeyer
from acx.adapters.jobs import JobStore
from acx.adapters.log_store import LogStore
from acx.adapters.objects import ObjectStore
from acx.adapters.queues import MessageQueue
from acx.config import Settings, settings
from acx.core.checkpoint import NoteSigner
from acx.core.forgetting import Keyer, NearPolicy, StaticKeyer
from acx.core.signing import Signer
from acx.usecases.ports import (
    AlarmsPort,
    CatalogPort,
    IdempotencyPort,
    IndexHooks,
    JobsPort,
    LogPort,
    ObjectsPort,
    QueuePort,
    SearchIndexPort,
)

__all__ = ["DEV_FORGET_KEY", "Deps", "IndexHooks", "OnFirstUse", "deps", "lazy_client", "reset", "use"]

T = TypeVar("T")

# Tombstone key when no FORGET_KEY_ID is configured (unit tests, hand-built Deps): NOT secret, so a
# reader of such a deployment's tombstones can confirm guessed text. template.yaml always sets one.
DEV_FORGET_KEY = StaticKeyer(b"acx-dev-forget-key: not a secret, set FORGET_KEY_ID")


@dataclass
class Deps:
    """What the use cases are given, each part typed with its port (:mod:`acx.usecases.ports`)."""

    settings: Settings
    log: LogPort
    data: ObjectsPort
    uploads: ObjectsPort
    cartridges: ObjectsPort
    jobs: JobsPort
    signer: Signer
    forget_keys: Keyer = field(default=DEV_FORGET_KEY)

    index_hooks: IndexHooks | None = None
    # Built on first use from the settings (no client for a function that never sends); tests may set
    # them. The powertools idempotency and search modules are imported only there (~25 and ~75 ms CPU).
    queue: QueuePort | None = None
    alarm_topic: AlarmsPort | None = None
    idempotency_store: IdempotencyPort | None = None
    catalog_reader: CatalogPort | None = None
    index_store: SearchIndexPort | None = None

    def index(self) -> IndexHooks:
        """The search index hooks (built on first use; tests may set ``index_hooks``)."""
        if self.index_hooks is None:
            from acx.usecases.search import SearchIndexer  # lazy: see the fields above

            self.index_hooks = SearchIndexer(self)
        return self.index_hooks

    def search_index(self) -> SearchIndexPort:
        """The search indexes beside the canonical JSON in the data bucket (built on first use; tests
        may set ``index_store``)."""
        if self.index_store is None:
            from acx.adapters.search_index import SearchIndexStore  # lazy: see the fields above

            if not isinstance(self.data, ObjectStore):  # it makes conditional S3 calls of its own
                raise TypeError("the S3 search index needs the S3 data bucket: set index_store")
            self.index_store = SearchIndexStore(self.data)
        return self.index_store

    def export_queue(self) -> QueuePort:
        """The queue the export function reads (``EXPORT_QUEUE_URL``; unset: not configured)."""
        if self.queue is None:
            self.queue = MessageQueue(client("sqs"), self.settings.export_queue_url)
        return self.queue

    def alarms(self) -> AlarmsPort:
        """The operators' alarm topic (``ALARM_TOPIC_ARN``; unset: not configured)."""
        if self.alarm_topic is None:
            self.alarm_topic = AlarmTopic(client("sns"), self.settings.alarm_topic_arn)
        return self.alarm_topic

    def idempotency(self) -> IdempotencyPort:
        """Powertools' idempotency store on ``IDEMPOTENCY_TABLE``."""
        if self.idempotency_store is None:
            from acx.adapters.idempotency import IdempotencyStore  # lazy: see the fields above

            self.idempotency_store = IdempotencyStore(client("dynamodb"), self.settings.idempotency_table)
        return self.idempotency_store

    def catalog(self) -> CatalogPort:
        """Read-only listings (packages of a tenant, record counts): ``acx.adapters.catalog``."""
        if self.catalog_reader is None:
            self.catalog_reader = Catalog(
                client("dynamodb"), self.settings.heads_table, self.settings.records_table
            )
        return self.catalog_reader

    @property
    def near(self) -> NearPolicy:
        return NearPolicy(self.settings.forget_near_policy, self.settings.forget_near_threshold)


class OnFirstUse:
    """Stands in for the object ``build`` returns, built at the first attribute read; every read
    after that goes to the same object (so a warm function reuses it, as it would an eager one).

    Why: a cold start pays for what ``deps()`` builds, and most routes use a few of its parts. A
    boto3 client costs 40-80 ms of CPU to create (botocore loads and parses its service model) and
    the KMS signer calls DescribeKey in its constructor; a search uses neither KMS part. What it does
    NOT do: check anything early. A misconfigured key now fails the first route that signs, not
    every route.
    """

    __slots__ = ("_build", "_lock", "_target")

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._target: Any = None

    def resolve(self) -> Any:
        """The object itself (built now if it was not yet; once, whatever the threads)."""
        if self._target is None:
            with self._lock:
                if self._target is None:
                    self._target = self._build()
        return self._target

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)


def lazy_client(service: str) -> Any:
    """``aws.client(service)``, created at its first use (then the process's one client)."""
    return OnFirstUse(lambda: client(service))


def on_first_use(build: Callable[[], T]) -> T:
    """``build()``'s object, built at its first use (:class:`OnFirstUse`), typed as what it stands in
    for: every attribute read goes to that object."""
    return cast(T, OnFirstUse(build))


def _kms_signer(key_id: str) -> Signer:
    from acx.adapters.kms import KmsSigner  # lazy: only routes that sign (or publish the key) need it

    return KmsSigner(client("kms"), key_id)


_override: Deps | None = None


def use(d: Deps | None) -> Deps | None:
    """Make ``deps()`` return ``d`` (None: the AWS adapters again); returns the Deps it replaces. The
    local stack runs the unchanged handlers on its embedded backend this way; the handlers only ever
    call ``deps()``."""
    global _override
    previous, _override = _override, d
    return previous


def deps() -> Deps:
    """The Deps set by :func:`use`, else the AWS adapters built from the environment (:func:`_aws_deps`)."""
    return _override if _override is not None else _aws_deps()


@lru_cache(maxsize=1)
def _aws_deps() -> Deps:
    """The service's adapters, created on first use; each boto3 client (and the KMS signer, which
    calls DescribeKey) is made at its first call, not here (``OnFirstUse``)."""
    cfg = settings()
    signer = on_first_use(lambda: _kms_signer(cfg.signing_key_id))
    notes = NoteSigner(cfg.publisher_id, signer)
    s3, ddb = lazy_client("s3"), lazy_client("dynamodb")
    keyer = KmsMacKeyer(lazy_client("kms"), cfg.forget_key_id) if cfg.forget_key_id else DEV_FORGET_KEY
    return Deps(
        settings=cfg,
        log=LogStore(ddb, cfg, notes.sign, notes.verifier_key),
        data=ObjectStore(s3, cfg.data_bucket),
        uploads=ObjectStore(s3, cfg.uploads_bucket),
        cartridges=ObjectStore(s3, cfg.cartridges_bucket),
        jobs=JobStore(ddb, cfg.jobs_table),
        signer=signer,
        forget_keys=keyer,
    )


def reset() -> None:
    """Drop cached adapters and settings (tests and the local stack switch environments)."""
    _aws_deps.cache_clear()
    settings.cache_clear()
    reset_clients()
