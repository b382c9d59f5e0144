"""Shared fixtures: the interop vectors and a fresh AWS-free environment; the mark for tests that
run the semantic engine."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from acx.core.embedding import ModelUnavailable, minilm_files

ROOT = Path(__file__).resolve().parent.parent

# CI shares two cores with parallel test workers: a stalled core must not fail a property test for
# "slow data generation". Only that health check and the per-example deadline are relaxed; every
# property still runs its examples and every assertion still holds.
settings.register_profile("shared-cores", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("shared-cores")
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


@pytest.fixture
def reference_copy(vectors_dir: Path, tmp_path: Path) -> Path:
    """A writable copy of the ACX reference's cartridge (tests edit it to tamper)."""
    dst = tmp_path / "reference-cartridge.acx"
    shutil.copyfile(vectors_dir / dst.name, dst)
    dst.chmod(0o644)
    return dst


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


def _minilm_installed() -> bool:
    """Whether the semantic extra (onnxruntime, tokenizers) and the pinned model files are here."""
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("tokenizers") is None:
        return False
    try:
        return all(os.path.exists(p) for p in minilm_files())
    except ModelUnavailable:
        return False


# Imported by the tests that run the MiniLM engine itself (``from tests.conftest import needs_minilm``).
needs_minilm = pytest.mark.skipif(
    not _minilm_installed(), reason="the semantic extra and its files are not installed"
)
