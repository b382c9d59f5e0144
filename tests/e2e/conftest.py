"""End-to-end fixtures: one LocalStack (embedded backend + gateway + pumps) per test package."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="package")
def local_stack() -> Iterator[Any]:
    """The running local stack on a temporary data directory, for the e2e package only (it sets the
    process's ``deps()`` to its backend until it stops). The scheduled verification is off: tests call
    ``run_verification_now()`` when they want it."""
    from acx.local.stack import LocalStack

    with LocalStack(port=0, verify_interval=None, retry_delay=1) as stack:
        yield stack


@pytest.fixture()
def acx_config(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A private CLI config file for one test (ACX_CONFIG)."""
    path = tmp_path / "acx-config.json"
    monkeypatch.setenv("ACX_CONFIG", str(path))
    monkeypatch.delenv("ACX_ENDPOINT", raising=False)
    monkeypatch.delenv("ACX_TOKEN", raising=False)
    return path
