"""moto's Query in O(page): a kept sort order per partition, and the response written as JSON directly.

Two costs made a full listing of a 100,000-record package take minutes on the local stack (AWS reads
only the page); both measured with cProfile on a paged listing (docs/LISTING.md):

- moto 5's ``Table.query`` builds its candidates from ``Table.all_items()``, which collects and sorts
  every item of every partition of the table, then walks the sorted list up to ``ExclusiveStartKey``:
  each page cost O(all items in the table). Here ``query`` is handed only the queried partition's
  items, from the first one the page can contain (after ``ExclusiveStartKey`` for a forward query,
  at or after a ``begins_with``/lower bound), in range-key order. The order is kept per partition
  (:class:`Partition`, a dict that counts changes to its key set) and re-sorted only after a key was
  added or removed, not once per page. moto's own code then applies key conditions, ``Limit``, the
  1 MB page limit, ``LastEvaluatedKey``, filters and projections unchanged.
- moto 5.2 serialises every response by walking botocore's output shape for each attribute value
  (``moto.core.serialize``: ~80% of a listing's CPU). DynamoDB's JSON protocol needs one conversion
  on the way out, binaries to base64, so a Query answer is written with ``orjson`` and that one
  conversion (tests/integration/test_moto_query.py pins it equal to moto's own serialiser).

Queries on an index, backwards, without a string range key, or on a table created before
:func:`install` keep moto's own path for candidates (still served by the fast writer).

Local stand-in only (tests and the local stack); never imported by the service. ``install()`` is
idempotent; ``uninstall()`` restores moto (tests compare both).

One module: it replaces one moto entry point (``Table.query`` with its
page walk, sizes, projection and answer writing), and each piece is pinned equal to stock moto by
the same test file.
"""

from __future__ import annotations

import base64
import bisect
import threading
from collections import defaultdict
from typing import Any

import orjson

_HINT = threading.local()
_RAW = threading.local()
_ORIGINAL: dict[str, Any] = {}


class Partition(dict):  # type: ignore[type-arg]
    """A table partition (range key -> Item) that keeps its keys' sort order between changes.

    ``version`` counts changes to the key set (an overwrite of an existing key keeps the order, so it
    does not count); the order is rebuilt lazily by :meth:`ordered`, at most once per change run, so
    a bulk write pays nothing and a listing after it sorts once.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.version = 0
        self._built = -1
        self._keys: list[Any] = []
        self._values: list[str] = []
        self._strings = True

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in self:
            self.version += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.version += 1

    def pop(self, *args: Any) -> Any:
        self.version += 1
        return super().pop(*args)

    def popitem(self) -> Any:
        self.version += 1
        return super().popitem()

    def clear(self) -> None:
        self.version += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.version += 1
        super().update(*args, **kwargs)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self.version += 1
        return super().setdefault(key, default)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by value (the local stack's snapshot): the cached order is rebuilt on first use."""
        return (Partition, (dict(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> Partition:
        import copy

        out = Partition()
        memo[id(self)] = out
        for k, v in self.items():
            dict.__setitem__(out, copy.deepcopy(k, memo), copy.deepcopy(v, memo))
        return out

    def ordered(self) -> tuple[list[Any], list[str]] | None:
        """(keys, their string values) in code-point order, or None when a range key is not a string.

        Code-point order of the values is DynamoDB's UTF-8 byte order for S keys. Built from a snapshot
        of the keys (``list(dict)`` runs without releasing the GIL), so a concurrent write at worst
        leaves this order one change behind, to be rebuilt by the next query.
        """
        version = self.version
        if self._built != version:
            keys = list(self)
            strings = all(k.type == "S" for k in keys)
            keys.sort(key=lambda k: k.value if strings else "")
            self._keys, self._values = keys, [k.value for k in keys] if strings else []
            self._strings, self._built = strings, version
        return (self._keys, self._values) if self._strings else None


#: Key conditions (moto's spelling: KeyConditionExpression operators, KeyConditions names) whose first
#: value is the run's lower bound.
_LOWER_BOUNDED = frozenset({"BEGINS_WITH", "BETWEEN", "=", ">=", ">", "EQ", "GE", "GT"})


def _run_end(comparison: Any, objs: Any) -> Any:
    """A test that a sorted string range key is still inside the key condition's run."""
    if objs and all(getattr(o, "type", None) == "S" for o in objs):
        if comparison == "BEGINS_WITH":
            prefix = objs[0].value
            return lambda v: v.startswith(prefix)
        if comparison == "BETWEEN" and len(objs) > 1:
            upper = objs[1].value
            return lambda v: v <= upper
        if comparison in ("=", "<=", "EQ", "LE"):
            bound = objs[0].value
            return lambda v: v <= bound
        if comparison in ("<", "LT"):
            bound = objs[0].value
            return lambda v: v < bound
    return lambda v: True


_BOUNDS = {
    "=": lambda v, o: (bisect.bisect_left(v, o[0]), bisect.bisect_right(v, o[0])),
    "<": lambda v, o: (0, bisect.bisect_left(v, o[0])),
    "<=": lambda v, o: (0, bisect.bisect_right(v, o[0])),
    ">": lambda v, o: (bisect.bisect_right(v, o[0]), len(v)),
    ">=": lambda v, o: (bisect.bisect_left(v, o[0]), len(v)),
    "BETWEEN": lambda v, o: (bisect.bisect_left(v, o[0]), bisect.bisect_right(v, o[1])),
    "BEGINS_WITH": lambda v, o: (bisect.bisect_left(v, o[0]), _prefix_end(v, o[0])),
}


def _prefix_end(values: list[str], prefix: str) -> int:
    """Index of the first value past every value that starts with ``prefix`` (code-point order)."""
    while prefix and ord(prefix[-1]) == 0x10FFFF:
        prefix = prefix[:-1]
    if not prefix:
        return len(values)
    return bisect.bisect_left(values, prefix[:-1] + chr(ord(prefix[-1]) + 1))


def _bind(original: Any, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
    """The call's arguments by name when the fast page can serve it (a table query on one partition
    with at most one string range condition and no legacy QueryFilter), else None."""
    import inspect

    sig = _SIGNATURE.get(id(original))
    if sig is None:
        sig = _SIGNATURE[id(original)] = inspect.signature(original)
    try:
        call = sig.bind(*args, **kwargs).arguments
    except TypeError:
        return None
    table = call["self"]
    conditions = call.get("range_key_conditions") or []
    objs = call.get("range_objs") or []
    if (
        call.get("index_name")
        or call.get("hash_key") is None
        or not table.range_key_attr
        or call.get("filter_kwargs")
        or len(conditions) > 1
        or (conditions and conditions[0][0] != table.range_key_attr)
        or (call.get("range_comparison") and call["range_comparison"] not in _BOUNDS)
        or any(getattr(o, "type", None) != "S" for o in objs)
    ):
        return None
    return call


_SIGNATURE: dict[int, Any] = {}


def _page(
    table: Any,
    partition: Partition | None,
    order: tuple[list[Any], list[str]] | None,
    call: dict[str, Any],
    size_limit: int,
) -> tuple[list[Any], int, dict[str, Any] | None]:
    """One Query page read from the kept order, as moto's ``Table.query`` answers it.

    DynamoDB's rules (developer guide, Query): items in sort-key order (reversed when
    ``ScanIndexForward`` is false) from after ``ExclusiveStartKey``; evaluation stops at ``Limit`` items
    or before the item that would take the page past 1 MB, and ``LastEvaluatedKey`` names the last
    evaluated item; the filter runs after that (``ScannedCount`` counts items evaluated before it),
    then the projection. Like moto, a page that stops exactly at the end of the key condition's run
    reports ``LastEvaluatedKey`` when another item of the partition follows. Items are not copied:
    nothing below mutates them (a projection builds new items).
    """
    if partition is None or order is None:
        return [], 0, None
    keys, values = order
    comparison = call.get("range_comparison")
    objs = [o.value for o in call.get("range_objs") or []]
    lo, hi = _BOUNDS[comparison](values, objs) if comparison else (0, len(values))
    forward = call.get("scan_index_forward", True) is not False
    start = (call.get("exclusive_start_key") or {}).get(table.range_key_attr)
    if isinstance(start, dict) and isinstance(start.get("S"), str):
        if forward:
            lo = max(lo, bisect.bisect_right(values, start["S"]))
        else:
            hi = min(hi, bisect.bisect_left(values, start["S"]))
    limit = call.get("limit")
    run = range(lo, hi) if forward else range(hi - 1, lo - 1, -1)
    after = range(hi, len(keys)) if forward else range(lo - 1, -1, -1)
    results: list[Any] = []
    size = 0
    last = None
    for i in run:
        item = partition.get(keys[i])
        if item is None:  # removed since the order was built
            continue
        item_size = item_bytes(item)
        if len(results) == limit or size + item_size > size_limit:
            last = results[-1]
            break
        results.append(item)
        size += item_size
    else:
        for i in after:  # the candidate after the run, as moto evaluates it
            item = partition.get(keys[i])
            if item is None:
                continue
            if results and (len(results) == limit or size + item_bytes(item) > size_limit):
                last = results[-1]
            break
    scanned = len(results)
    filter_expression = call.get("filter_expression")
    if filter_expression is not None:
        results = [item for item in results if filter_expression.expr(item)]
    projection = call.get("projection_expressions")
    if projection:
        results = [_project(item, projection) for item in results]
    lek = table._get_last_evaluated_key(last, None) if last is not None else None
    return results, scanned, lek


def item_bytes(item: Any) -> int:
    """moto's ``Item.size()`` (the byte count its 1 MB page limit adds up: UTF-8 attribute names plus
    values), computed without building a ``DynamoType`` per map value or set member, with strings and
    binaries (nearly every attribute of a row) counted inline: a page sizes every item it reads, and
    moto's recursion was a seventh of a listing's CPU."""
    total = 0
    for name, value in item.attrs.items():
        size = _NAME_BYTES.get(name)
        if size is None:
            size = len(name.encode("utf-8"))
            if len(_NAME_BYTES) < 4096:
                _NAME_BYTES[name] = size
        kind, v = value.type, value.value
        if kind == "S":
            total += size + (len(v) if v.isascii() else len(v.encode("utf-8")))
        elif kind == "B" and isinstance(v, bytes):
            total += size + len(v)
        elif kind == "L" and all(x.type == "S" for x in v):  # a row's tags and history lists
            total += size + sum(
                len(x.value) if x.value.isascii() else len(x.value.encode("utf-8")) for x in v
            )
        else:
            total += size + _value_bytes(value)
    return total


_NAME_BYTES: dict[str, int] = {}  # attribute name -> its UTF-8 length (names repeat on every item)


def _value_bytes(value: Any) -> int:
    """``DynamoType.size()``, branch for branch."""
    kind, v = value.type, value.value
    if kind == "N":
        return len(str(v))
    if kind in ("SS", "NS", "BS"):
        if kind == "NS":
            return sum(len(str(x)) for x in v)
        return sum(len(x if isinstance(x, bytes) else x.encode("utf-8")) for x in v)
    if kind == "L":
        return sum(_value_bytes(x) for x in v)
    if kind == "M":
        return sum(len(k.encode("utf-8")) + _value_bytes(x) for k, x in v.items())
    if isinstance(v, bool):
        return 1
    return len(v if isinstance(v, bytes) else v.encode("utf-8"))


def _project(item: Any, projection: list[list[str]]) -> Any:
    """``Item.project``: top-level attribute names are picked by reference (values are never mutated
    on the way out); a nested document path keeps moto's own projection."""
    if any(len(path) != 1 for path in projection):
        return item.project(projection)
    from moto.dynamodb.models.dynamo_type import Item

    out: Any = Item.__new__(Item)
    out.hash_key, out.range_key = item.hash_key, item.range_key
    attrs = item.attrs
    out.attrs = {path[0]: attrs[path[0]] for path in projection if path[0] in attrs}
    return out


def _encode(value: Any) -> Any:
    """JSON for what ``json`` cannot write: moto's attribute values (``{type: value}``, nested values
    encoded by this same hook) and binaries (B and BS values, base64 text: the JSON protocol's one
    conversion). A B value moto still holds as base64 text is written as it is."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    if isinstance(value, DynamoType):
        return {value.type: value.value}
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot serialise {type(value).__name__}")


def dumps(result: dict[str, Any]) -> bytes:
    """A DynamoDB JSON-protocol response body for ``result`` (plain types or moto attribute values),
    UTF-8 bytes written by orjson (the service's JSON library already; a page took 8% of a listing's
    CPU in the stdlib encoder). Bytes also keep moto's per-response ``RequestId`` substitution, a
    regular expression meant for XML bodies, from scanning every JSON answer (it skips bytes)."""
    return orjson.dumps(result, default=_encode)


def install() -> None:
    """Patch moto's Table (partitions, query candidates) and DynamoHandler.query in this process."""
    if _ORIGINAL:
        return
    from moto.core.responses import ActionResult
    from moto.dynamodb.models.table import RESULT_SIZE_LIMIT, Table
    from moto.dynamodb.responses import DynamoHandler

    original_init = Table.__init__
    original_query = Table.query
    original_all_items = Table.all_items
    original_handler_query = DynamoHandler.query
    from moto.dynamodb import responses

    original_result = responses.DynamoResult

    class QueryResult(original_result):  # type: ignore[misc, valid-type]
        """moto's DynamoResult, left unconverted while a Query answer is built (``dumps`` writes the
        attribute values directly; moto's ``dynamo_to_dict`` pass was a quarter of a page's CPU)."""

        def __init__(self, result: object) -> None:
            if getattr(_RAW, "value", False):
                ActionResult.__init__(self, result)
            else:
                super().__init__(result)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if self.range_key_attr:
            self.items = defaultdict(Partition)

    def query(
        self: Any,
        hash_key: Any,
        range_comparison: Any,
        range_objs: Any,
        limit: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        call = _bind(original_query, self, hash_key, range_comparison, range_objs, limit, *args, **kwargs)
        if call is not None:
            partition = self.items.get(hash_key)
            order = partition.ordered() if isinstance(partition, Partition) else None
            if partition is None or order is not None:
                return _page(self, partition, order, call, RESULT_SIZE_LIMIT)
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
        partition = self.items.get(hash_key)
        if partition is None:
            return []
        order = partition.ordered() if isinstance(partition, Partition) else None
        if order is None:
            return [item for item in original_all_items(self) if item.hash_key == hash_key]
        keys, values = order
        lo = 0
        if comparison in _LOWER_BOUNDED and objs and objs[0].type == "S":
            lo = bisect.bisect_left(values, objs[0].value)
        start = (exclusive or {}).get(self.range_key_attr)
        if isinstance(start, dict) and isinstance(start.get("S"), str):
            lo = max(lo, bisect.bisect_right(values, start["S"]))
        # Key conditions select one contiguous run of sorted keys, so the page is within the next
        # ``limit`` keys of that run, never past the 1 MB a page may hold, plus one more candidate:
        # moto reports LastEvaluatedKey only when a candidate follows a full page.
        end = _run_end(comparison, objs)
        out: list[Any] = []
        size = 0
        for i in range(lo, len(keys)):
            item = partition.get(keys[i])
            if item is None:  # removed since the order was built
                continue
            out.append(item)
            size += item.size()
            if (limit and len(out) > limit) or size > RESULT_SIZE_LIMIT or not end(values[i]):
                break
        return out

    def handler_query(self: Any) -> Any:
        _RAW.value = True
        try:
            result = original_handler_query(self)
        finally:
            _RAW.value = False
        if not isinstance(result, ActionResult) or not isinstance(result.result, dict):
            return result  # an error result: moto's serialiser shapes it
        return dumps(result.result), {"Content-Type": "application/x-amz-json-1.0"}

    responses.DynamoResult = QueryResult  # type: ignore[misc]
    _ORIGINAL.update(
        result=original_result,
        init=original_init,
        query=original_query,
        all_items=original_all_items,
        handler_query=original_handler_query,
    )
    Table.__init__ = init  # type: ignore[method-assign]
    Table.query = query  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]
    DynamoHandler.query = handler_query  # type: ignore[method-assign]


def uninstall() -> None:
    """Restore moto's own Table and Query handler (tests compare the two)."""
    if not _ORIGINAL:
        return
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler

    Table.__init__ = _ORIGINAL["init"]  # type: ignore[method-assign]
    Table.query = _ORIGINAL["query"]  # type: ignore[method-assign]
    Table.all_items = _ORIGINAL["all_items"]  # type: ignore[method-assign]
    DynamoHandler.query = _ORIGINAL["handler_query"]  # type: ignore[method-assign]
    from moto.dynamodb import responses

    responses.DynamoResult = _ORIGINAL["result"]  # type: ignore[misc]
    _ORIGINAL.clear()
