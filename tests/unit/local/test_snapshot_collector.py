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


def test_a_message_in_flight_at_the_snapshot_is_visible_after_the_load() -> None:
    """A queue pump that received a message and was stopped before deleting it is gone with the
    process: the restarted stack sees the message at once, not after its visibility timeout."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="ingest", Attributes={"VisibilityTimeout": "43200"})["QueueUrl"]
        for body in ("in-flight", "waiting"):
            sqs.send_message(QueueUrl=url, MessageBody=body)
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
        assert [m["Body"] for m in got] == ["in-flight"]
        data = snapshot.dumps()
        snapshot.load(data)
        bodies = {
            m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        }
        assert bodies == {"in-flight", "waiting"}
        # the control: without the load, the in-flight message stays hidden for its timeout
        sqs.send_message(QueueUrl=url, MessageBody="later")
        again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        assert [m["Body"] for m in again] == ["later"]
