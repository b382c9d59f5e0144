"""Keep the in-process moto's stored items out of Python's cyclic garbage collector.

With moto in the stack's process, every DynamoDB item the service writes lives on as a tree of
moto objects (``Item``, ``LimitedSizeDict``, one ``DynamoType`` per attribute value, the receipts'
entry lists): about 40 objects per ingested record. The collector's full collections walk all of
them each time the heap has grown by a quarter, so their cost grows with everything ever stored:
gc callbacks on a 20,000-record presigned ingest counted 10.4 s of 39.6 s CPU in collections (8.1 s
in 8 full ones over a heap of 0.83 M objects). None of this exists on AWS, where the items are in
DynamoDB, not in the function's heap: a cost of the stand-in.

:class:`StoreFreezer` calls ``gc.freeze()`` after each DynamoDB request moto answers in this process
(O(1): CPython splices its generation lists onto the permanent one), so what is stored is never
walked again. Frozen objects are still freed by reference counting when moto drops them (an
overwrite, a delete). What freezing does NOT free: reference cycles that were alive at a freeze
and became garbage afterwards (on that ingest 13,704 objects, 1.6% of the heap). So every time the
count of requests since the last time doubles (from ``first_refresh``), the freezer unfreezes, runs
one full collection and freezes again: the cycles are reclaimed, at the cost of one full walk per
doubling (a bounded fraction of the walks the collector would have made itself).

Side effect, stated because it is not the stand-in's: the freeze also covers whatever the handlers
hold at that moment (an ingest's parsed upload), which the collector then no longer walks either;
on Lambda it would. docs/LOCAL.md gives the collector's share with moto in its own process (the
service alone) next to the in-process figure.

Local stand-in only (the local stack's in-process transport); the service never imports it.
"""

from __future__ import annotations

import gc
import threading


class StoreFreezer:
    """``after_request()`` after each in-process moto DynamoDB request; ``close()`` when the stack stops."""

    def __init__(self, first_refresh: int = 8192) -> None:
        self.requests = 0
        self.refreshes = 0
        self.next_refresh = first_refresh
        self._lock = threading.Lock()
        self._active = True

    def after_request(self) -> None:
        if not self._active:
            return
        gc.freeze()
        self.requests += 1
        if self.requests >= self.next_refresh and self._lock.acquire(blocking=False):
            try:
                gc.unfreeze()
                gc.collect()
                gc.freeze()
                self.refreshes += 1
                self.next_refresh = self.requests * 2
            finally:
                self._lock.release()

    def close(self) -> None:
        """Hand what was frozen back to the collector (a test process outlives its stacks)."""
        if self._active:
            self._active = False
            gc.unfreeze()
