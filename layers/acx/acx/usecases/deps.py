"""Composition root: builds the adapters once per process from the environment."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from acx.config import Settings, settings

if TYPE_CHECKING:
    from acx.adapters.jobs import JobStore
    from acx.adapters.log_store import LogStore
    from acx.adapters.objects import ObjectStore


class IndexHooks(Protocol):
    """What ingest and forget tell the search index (``usecases.search.SearchIndexer``)."""

    def indexed(
        self,
        tenant: str,
        package: str,
        records: list[dict[str, Any]],
        absorbed: dict[str, list[str]],
        *,
        new_package: bool,
    ) -> None: ...

    def forgotten(self, tenant: str, package: str, record_id: str) -> int: ...

    def drop_index(self, tenant: str, package: str) -> None: ...


@dataclass
class Deps:
    settings: Settings
    log: LogStore
    data: ObjectStore
    uploads: ObjectStore
    cartridges: ObjectStore
    jobs: JobStore
    signer: Any
    index_hooks: IndexHooks | None = None

    def index(self) -> IndexHooks:
        """The search index hooks (built on first use; tests may set ``index_hooks``)."""
        if self.index_hooks is None:
            from acx.usecases.search import SearchIndexer

            self.index_hooks = SearchIndexer(self)
        return self.index_hooks

    def sqs(self) -> Any:
        from acx.adapters.aws import client

        return client("sqs")


@lru_cache(maxsize=1)
def deps() -> Deps:
    """The service's adapters, created lazily on first use (not at import: cold start)."""
    from acx.adapters.aws import client
    from acx.adapters.jobs import JobStore
    from acx.adapters.kms import KmsSigner
    from acx.adapters.log_store import LogStore
    from acx.adapters.objects import ObjectStore

    cfg = settings()
    signer = KmsSigner(client("kms"), cfg.signing_key_id)
    s3 = client("s3")
    return Deps(
        settings=cfg,
        log=LogStore(client("dynamodb"), cfg, signer, cfg.publisher_id),
        data=ObjectStore(s3, cfg.data_bucket),
        uploads=ObjectStore(s3, cfg.uploads_bucket),
        cartridges=ObjectStore(s3, cfg.cartridges_bucket),
        jobs=JobStore(client("dynamodb"), cfg.jobs_table),
        signer=signer,
    )


def reset() -> None:
    """Drop cached adapters and settings (tests and the local stack switch environments)."""
    from acx.adapters.aws import reset as reset_clients

    deps.cache_clear()
    settings.cache_clear()
    reset_clients()
