"""Shared fixtures: the interop vectors and a fresh AWS-free environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VECTORS = Path(os.environ.get("ACX_VECTORS_DIR", ROOT.parent / "shared" / "vectors"))

# Never let a test reach a real AWS account.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "AcxMemoryTest")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    if not VECTORS.is_dir():
        pytest.skip(f"interop vectors not found at {VECTORS}")
    return VECTORS


@pytest.fixture(scope="session")
def load_vector(vectors_dir: Path):
    def _load(name: str):
        return json.loads((vectors_dir / name).read_text(encoding="utf-8"))

    return _load


@pytest.fixture(autouse=True)
def _no_local_stack_endpoint(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the e2e tests, boto3 must talk to mock_aws, never to a local stack's moto server."""
    if "e2e" not in request.node.nodeid.split("/"):
        monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
