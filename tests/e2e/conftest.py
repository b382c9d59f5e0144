"""End-to-end fixtures: one LocalStack (moto + gateway + pumps) per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="package")
def local_stack() -> Iterator[Any]:
    """The running local stack, for the e2e package only: it points this process's AWS environment
    at its moto server, so it must be gone before `mock_aws` tests run (make test uses
    ``--dist loadfile``). moto runs in a child process so `mock_aws` tests elsewhere cannot reset its
    state. The scheduled verification is off: tests call ``run_verification_now()`` when they want it."""
    from acx.local.stack import LocalStack

    isolated = os.environ.get("ACX_E2E_INPROCESS_MOTO") != "1"
    with LocalStack(port=0, verify_interval=None, isolated_moto=isolated, retry_delay=1) as stack:
        yield stack


@pytest.fixture()
def acx_config(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A private CLI config file for one test (ACX_CONFIG)."""
    path = tmp_path / "acx-config.json"
    monkeypatch.setenv("ACX_CONFIG", str(path))
    monkeypatch.delenv("ACX_ENDPOINT", raising=False)
    monkeypatch.delenv("ACX_TOKEN", raising=False)
    return path
