"""boto3 clients, created lazily once per process (cold start: nothing AWS is imported at module load)."""

from __future__ import annotations

import sys
import threading
from functools import cache
from typing import Any

_OWN: list[Any] = []  # the botocore session of this process when boto3 has no default session
_OWN_LOCK = threading.Lock()


def session() -> Any:
    """The botocore session the service's clients are made from.

    boto3's default session's when the process has one (the local stack and tests hook theirs; a
    client made with ``boto3.client`` comes from it too), else a plain botocore session of the
    process's own. Why not always boto3's: ``import boto3`` imports s3transfer, and an S3 client made
    by a boto3 session imports boto3's transfer layer for its ``upload_file`` methods: about 0.1 s of
    CPU of a cold search, for routes that never upload a file (``ObjectStore`` calls boto3's transfer
    functions itself, with either kind of client). botocore builds, signs, retries and parses a
    request the same way for both.
    """
    boto3 = sys.modules.get("boto3")
    default = getattr(boto3, "DEFAULT_SESSION", None) if boto3 is not None else None
    if default is not None:
        return default._session
    with _OWN_LOCK:
        if not _OWN:
            import botocore.session

            _OWN.append(botocore.session.get_session())
        return _OWN[0]


@cache
def client(service: str) -> Any:
    """A client for ``service``; honours AWS_ENDPOINT_URL (moto locally) like every boto3 client."""
    from botocore.config import Config

    from acx.adapters.service_models import install
    from acx.config import settings

    source = session()
    install(source)  # orjson parses the service models (acx/adapters/service_models.py)
    extra: dict[str, Any] = {}
    if service == "s3" and "response_checksum_validation" in Config.OPTION_DEFAULTS:
        # Responses are checked where the request asks (ChecksumMode=ENABLED): every GetObject but
        # the search index's segments (acx.adapters.objects.VERIFY_CHECKSUM). A botocore older than
        # 1.36 has no such option and checks only such requests anyway.
        extra["response_checksum_validation"] = "when_required"
    cfg = Config(
        signature_version="s3v4" if service == "s3" else None,
        retries={"mode": "standard", "max_attempts": 5},
        s3={"addressing_style": "path"} if service == "s3" else None,
        **extra,
    )
    return source.create_client(service, region_name=settings().region, config=cfg)


def reset() -> None:
    """Forget cached clients and this process's own session (tests that switch endpoints or moto
    contexts)."""
    client.cache_clear()
    with _OWN_LOCK:
        _OWN.clear()
