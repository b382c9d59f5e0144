"""Environment of the functions, as one pydantic model (names match template.yaml's Environment)."""

from __future__ import annotations

import os
from functools import lru_cache

from pydantic import BaseModel, Field


class Settings(BaseModel):
    """Every resource name a function may need; read once per process."""

    records_table: str = Field(default="acx-records", alias="RECORDS_TABLE")
    receipts_table: str = Field(default="acx-receipts", alias="RECEIPTS_TABLE")
    heads_table: str = Field(default="acx-heads", alias="HEADS_TABLE")
    jobs_table: str = Field(default="acx-jobs", alias="JOBS_TABLE")
    idempotency_table: str = Field(default="acx-idempotency", alias="IDEMPOTENCY_TABLE")
    uploads_bucket: str = Field(default="acx-uploads", alias="UPLOADS_BUCKET")
    data_bucket: str = Field(default="acx-data", alias="DATA_BUCKET")
    cartridges_bucket: str = Field(default="acx-cartridges", alias="CARTRIDGES_BUCKET")
    signing_key_id: str = Field(default="", alias="SIGNING_KEY_ID")
    forget_key_id: str = Field(default="", alias="FORGET_KEY_ID")  # KMS HMAC key keying tombstones
    forget_near_policy: str = Field(default="refuse", alias="FORGET_NEAR_POLICY", pattern="^(refuse|off)$")
    forget_near_threshold: float = Field(default=0.5, alias="FORGET_NEAR_THRESHOLD", gt=0.0, le=1.0)
    alarm_topic_arn: str = Field(default="", alias="ALARM_TOPIC_ARN")
    export_queue_url: str = Field(default="", alias="EXPORT_QUEUE_URL")
    publisher_id: str = Field(default="dev.acx.local", alias="PUBLISHER_ID")
    namespace_txt_record: str = Field(default="", alias="NAMESPACE_TXT_RECORD")
    upload_url_ttl: int = Field(default=900, alias="UPLOAD_URL_TTL", ge=1, le=900)
    download_url_ttl: int = Field(default=300, alias="DOWNLOAD_URL_TTL", ge=1, le=300)
    # Identity provider (template parameters ScopePrefix, ScopesClaim, TenantClaim; docs/IDENTITY.md).
    scope_prefix: str = Field(default="", alias="SCOPE_PREFIX", max_length=128)
    scopes_claim: str = Field(default="scope", alias="SCOPES_CLAIM", min_length=1, max_length=128)
    tenant_claim: str = Field(default="tenant", alias="TENANT_CLAIM", min_length=1, max_length=128)
    agent_claim: str = Field(default="agent_id", alias="AGENT_CLAIM", min_length=1, max_length=128)
    search_engine: str = Field(default="local-hash-128", alias="SEARCH_ENGINE")
    search_embed_dim: int = Field(default=256, alias="SEARCH_EMBED_DIM")
    aws_endpoint_url: str | None = Field(default=None, alias="AWS_ENDPOINT_URL")
    region: str = Field(default="us-east-1", alias="AWS_REGION")


@lru_cache(maxsize=1)
def settings() -> Settings:
    env = dict(os.environ)
    env.setdefault("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    return Settings.model_validate(env)
