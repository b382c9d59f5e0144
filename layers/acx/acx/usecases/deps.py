"""Composition root: builds the adapters once per process from the environment."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from acx.config import Settings, settings

if TYPE_CHECKING:
    from acx.adapters.jobs import JobStore
    from acx.adapters.log_store import LogStore
    from acx.adapters.objects import ObjectStore


@dataclass
class Deps:
    settings: Settings
    log: LogStore
    data: ObjectStore
    uploads: ObjectStore
    cartridges: ObjectStore
    jobs: JobStore
    signer: Any

    def sqs(self) -> Any:
        from acx.adapters.aws import client

        return client("sqs")

    def catalog(self) -> Any:
        """Read-only listings (packages of a tenant, record counts): ``acx.adapters.catalog``."""
        from acx.adapters.aws import client
        from acx.adapters.catalog import Catalog

        return Catalog(client("dynamodb"), self.settings.heads_table, self.settings.records_table)


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
