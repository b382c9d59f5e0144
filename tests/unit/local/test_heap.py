"""acx/local/heap.py: the local stack keeps moto's stored items out of the cyclic collector, and still
reclaims the reference cycles a freeze caught."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from acx.local.heap import StoreFreezer


class _Node:
    def __init__(self) -> None:
        self.me: Any = self  # a reference cycle: only the collector frees it


def test_a_request_freezes_what_is_alive_and_close_hands_it_back() -> None:
    freezer = StoreFreezer(first_refresh=1000)
    kept = [_Node() for _ in range(50)]
    before = gc.get_freeze_count()
    try:
        freezer.after_request()
        assert gc.get_freeze_count() >= before + 50
    finally:
        freezer.close()
    assert gc.get_freeze_count() == 0
    freezer.after_request()  # closed: no longer freezes
    assert gc.get_freeze_count() == 0
    assert kept


def test_cycles_caught_by_a_freeze_are_reclaimed_when_the_requests_double() -> None:
    freezer = StoreFreezer(first_refresh=4)
    try:
        node = _Node()
        gone = weakref.ref(node)
        freezer.after_request()  # the cycle is frozen while alive
        del node
        gc.collect()
        assert gone() is not None  # frozen garbage: the collector no longer sees it
        freezer.after_request()
        freezer.after_request()
        assert gone() is not None and freezer.refreshes == 0
        freezer.after_request()  # the 4th request: unfreeze, collect, freeze again
        assert gone() is None
        assert freezer.refreshes == 1 and freezer.next_refresh == 8
        assert gc.get_freeze_count() > 0
    finally:
        freezer.close()


def test_the_local_stack_freezes_after_its_dynamodb_requests(tmp_path: Any) -> None:
    import boto3

    from acx.local.stack import LocalStack

    with LocalStack(port=0, quiet=True, verify_interval=None, data_dir=tmp_path / "data") as stack:
        heap = stack._heap
        assert heap is not None
        start = heap.requests
        client = boto3.client("dynamodb", region_name=stack.region, endpoint_url=stack._moto_endpoint)
        client.list_tables()
        assert heap.requests == start + 1
        assert gc.get_freeze_count() > 0
    assert stack._heap is None
    assert gc.get_freeze_count() == 0
