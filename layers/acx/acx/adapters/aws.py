"""boto3 clients, created lazily once per process (cold start: nothing AWS is imported at module load)."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def client(service: str) -> Any:
    """A boto3 client for ``service``; honours AWS_ENDPOINT_URL (moto locally) like every boto3 client."""
    import boto3
    from botocore.config import Config

    from acx.config import settings

    cfg = Config(
        signature_version="s3v4" if service == "s3" else None,
        retries={"mode": "standard", "max_attempts": 5},
        s3={"addressing_style": "path"} if service == "s3" else None,
    )
    return boto3.client(service, region_name=settings().region, config=cfg)


def reset() -> None:
    """Forget cached clients (tests that switch endpoints or moto contexts)."""
    client.cache_clear()
