"""boto3 clients, created lazily once per process (cold start: nothing AWS is imported at module load)."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def client(service: str) -> Any:
    """A boto3 client for ``service``; honours AWS_ENDPOINT_URL (moto locally) like every boto3 client."""
    import boto3
    from botocore.config import Config

    from acx.adapters.service_models import install
    from acx.config import settings

    session = boto3._get_default_session()  # what boto3.client uses (the local stack hooks it too)
    install(session._session)  # orjson parses the service models (acx/adapters/service_models.py)

    cfg = Config(
        signature_version="s3v4" if service == "s3" else None,
        retries={"mode": "standard", "max_attempts": 5},
        s3={"addressing_style": "path"} if service == "s3" else None,
    )
    return session.client(service, region_name=settings().region, config=cfg)


def reset() -> None:
    """Forget cached clients (tests that switch endpoints or moto contexts)."""
    client.cache_clear()
