"""moto's Query without sorting the whole table on every call.

moto 5's ``Table.query`` builds its candidates from ``Table.all_items()``, which collects and sorts
every item of every partition of the table, then walks the sorted list up to ``ExclusiveStartKey``:
each page of a paged Query costs O(all items in the table), so reading a 100,000-record package page
by page took minutes on the local stack (AWS reads only the page). This patch hands ``query`` only the
queried partition's items, from the first one the page can contain (after ``ExclusiveStartKey`` for a
forward query, at or after a ``begins_with`` prefix), in range-key order; moto's own code then applies
conditions, limits, filters and projections unchanged. Queries on an index, or backwards, keep moto's
path untouched.

Local stand-in only (tests and the local stack); never imported by the service. ``install()`` is
idempotent.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any

_HINT = threading.local()
_INSTALLED = False


def install() -> None:
    """Patch ``moto.dynamodb.models.table.Table`` in this process."""
    global _INSTALLED
    if _INSTALLED:
        return
    from moto.dynamodb.models.table import RESULT_SIZE_LIMIT, Table

    original_query = Table.query
    original_all_items = Table.all_items

    def query(
        self: Any,
        hash_key: Any,
        range_comparison: Any,
        range_objs: Any,
        limit: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        exclusive = kwargs.get("exclusive_start_key", args[0] if args else None)
        forward = kwargs.get("scan_index_forward", args[1] if len(args) > 1 else True)
        index_name = kwargs.get("index_name", args[3] if len(args) > 3 else None)
        if index_name or forward is False or hash_key is None or not self.range_key_attr:
            return original_query(self, hash_key, range_comparison, range_objs, limit, *args, **kwargs)
        _HINT.value = (self, hash_key, exclusive, range_comparison, range_objs, limit)
        try:
            return original_query(self, hash_key, range_comparison, range_objs, limit, *args, **kwargs)
        finally:
            _HINT.value = None

    def all_items(self: Any) -> list[Any]:
        hint = getattr(_HINT, "value", None)
        if hint is None or hint[0] is not self:
            return original_all_items(self)  # type: ignore[no-any-return]
        _HINT.value = None  # once: moto calls all_items once per query
        _, hash_key, exclusive, comparison, objs, limit = hint
        partition = self.items.get(hash_key) or {}
        if any(k.type != "S" for k in partition):
            return [item for item in original_all_items(self) if item.hash_key == hash_key]
        # String range keys sort by their value (DynamoType's __lt__ costs ~40 us a comparison);
        # code-point order is DynamoDB's UTF-8 byte order.
        keys = sorted(partition, key=lambda k: k.value)
        values = [k.value for k in keys]
        lo = 0
        if comparison in ("BEGINS_WITH", "BETWEEN", "GE", "GT", "EQ") and objs and objs[0].type == "S":
            lo = bisect.bisect_left(values, objs[0].value)
        start = (exclusive or {}).get(self.range_key_attr)
        if isinstance(start, dict) and isinstance(start.get("S"), str):
            lo = max(lo, bisect.bisect_right(values, start["S"]))
        # Key conditions select one contiguous run of sorted keys, so the page is within the next
        # ``limit`` + 1 keys (moto needs the one after the page to report LastEvaluatedKey), and never
        # past the 1 MB a page may hold.
        out: list[Any] = []
        size = 0
        for key in keys[lo:]:
            item = partition[key]
            out.append(item)
            size += item.size()
            if (limit and len(out) > limit) or size > RESULT_SIZE_LIMIT:
                break
        return out

    Table.query = query  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]
    _INSTALLED = True
