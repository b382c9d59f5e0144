"""The local stack's snapshot is written and read with Python's cyclic collector paused.

Pickling and unpickling moto's whole store set off full collections over it (acx/local/snapshot.py
has the figures); both run paused, and the collector is back on after, also after an error.
"""

from __future__ import annotations

import gc
import io
import pickle
from typing import Any

import pytest

from acx.local import snapshot

SEEN: list[bool] = []


@pytest.fixture(autouse=True)
def _collector_on() -> Any:
    """Each test starts with the collector on (another test in the worker may have left it off) and
    leaves it as it found it."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _rebuilt() -> list[Any]:
    SEEN.append(gc.isenabled())
    return []  # no backends: load has nothing to put back


class _Probe:
    def __reduce__(self) -> Any:
        SEEN.append(gc.isenabled())
        return (_rebuilt, ())


def test_dump_and_load_run_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    SEEN.clear()
    monkeypatch.setattr(snapshot, "_backends", _Probe)  # pickled as itself, read back as []
    buf = io.BytesIO()
    assert gc.isenabled()
    snapshot.dump(buf)
    assert gc.isenabled()
    assert snapshot.load(buf.getvalue()) == 0
    assert gc.isenabled()
    assert SEEN == [False, False]  # pickled paused, unpickled paused


def test_the_collector_is_back_on_after_a_failed_load() -> None:
    with pytest.raises(pickle.UnpicklingError):
        snapshot.load(b"not a pickle")
    assert gc.isenabled()
