"""moto's BatchGetItem, answered without moto's response serialiser or its projection round trip.

A search on the local stack reads its hits' rows with one BatchGetItem of about ten keys (state and
body only). cProfile of 224 warm searches on a 2,000-record package (bench/search.py's service rows):
of 40 s, moto spent 17 s serialising the answers (``moto.core.serialize`` walks botocore's output
shape for every attribute value) and 6.4 s projecting the items (``Item.project`` converts the
whole item to plain JSON and back to keep two attributes); the ranking was 3.6 s. DynamoDB's JSON
protocol needs one conversion on the way out, binaries to base64, so the answer is written with
``moto_query.dumps`` (the Query stand-in's writer), and a projection of top-level attribute names
(the service's only kind) picks those attributes from the stored item.

Keys are looked up in the table directly (``_finder``: moto 5.2's ``get_item`` resolution, 4.99 -> 2.55 us per
key). Everything else is moto's, in moto's order: at most 100 keys per table and in all, duplicate keys,
the projection parser and its unused-name check, ``AttributesToGet``, the 16 MB answer limit (keys
past it go to ``UnprocessedKeys``), ``ConsumedCapacity``. A projection with a nested path or a list
index keeps ``Item.project``. tests/integration/test_moto_batch_get.py pins every answer equal to
stock moto's on the same requests.

Local stand-in only (tests and the local stack); never imported by the service. ``install()`` is
idempotent; ``uninstall()`` restores moto (tests compare both).
"""

from __future__ import annotations

from typing import Any

MAX_KEYS = 100  # BatchGetItem: "up to 100 items"
MAX_RESULT_BYTES = 16 * 1024 * 1024  # "A single operation can retrieve up to 16 MB of data"
_ORIGINAL: dict[str, Any] = {}
_KEY_TYPES = frozenset(("S", "N", "B"))


def _top_level(projection: list[list[str]]) -> list[str] | None:
    """The attribute names of a projection made of top-level names only, else None."""
    names = []
    for path in projection:
        if len(path) != 1 or "[" in path[0]:
            return None
        names.append(path[0])
    return names


def _finder(table: Any) -> Any:
    """``key -> stored Item or None`` for one table: ``DynamoDBBackend.get_item`` without projection,
    as moto 5.2 resolves it (``get_keys_value`` then ``Table.get_item``), looking the item up without
    re-finding the table or adding an empty partition to ``table.items`` for an absent hash key.

    py-spy of the 100,000-record presigned ingest: ``get_item`` was 23% of the BatchGetItem path
    (the merge's reads and the under-lease check read every row key), ``DynamoType.__init__`` a third
    of it."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.models.dynamo_type import DynamoType

    hash_attr, range_attr, items = table.hash_key_attr, table.range_key_attr, table.items
    ranged = bool(table.has_range_key)
    new = DynamoType.__new__

    def typed(av: Any) -> Any:
        # A key value is S, N or B (the only key types), so DynamoType.__init__'s list and map
        # conversions never apply: built directly it is the same object; anything else goes to moto.
        if type(av) is dict and len(av) == 1:
            ((tag, value),) = av.items()
            if tag in _KEY_TYPES:
                out = new(DynamoType)
                out.type = tag
                out.value = value
                return out
        return DynamoType(av)

    def find(key: dict[str, Any]) -> Any:
        if hash_attr not in key or (ranged and range_attr not in key):
            raise MockValidationException("Validation Exception")
        hash_key = typed(key[hash_attr])
        if range_attr:
            partition = items.get(hash_key)  # .get: a defaultdict adds nothing
            return partition.get(typed(key[range_attr])) if partition else None
        return items.get(hash_key)

    return find


def _batch_get_item(self: Any) -> Any:
    """``DynamoHandler.batch_get_item`` as moto 5.2 writes it, answered as JSON directly."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.models.utilities import bytesize
    from moto.dynamodb.responses import ProjectionExpressionParser, validate_attributes_used

    from acx.local.moto_query import dumps

    table_batches = self.body["RequestItems"]
    results: dict[str, Any] = {"ConsumedCapacity": [], "Responses": {}, "UnprocessedKeys": {}}
    for table_name, table_request in table_batches.items():
        if len(table_request["Keys"]) > MAX_KEYS:
            raise MockValidationException(
                "1 validation error detected: Value at 'requestItems."
                + table_name
                + ".member.keys' failed to satisfy constraint: "
                "Member must have length less than or equal to 100"
            )
    if sum(len(req["Keys"]) for req in table_batches.values()) > MAX_KEYS:
        raise MockValidationException("Too many items requested for the BatchGetItem call")
    backend = self.dynamodb_backend
    result_size = 0
    for table_name, table_request in table_batches.items():
        keys = table_request["Keys"]
        if self._contains_duplicates(keys):
            raise MockValidationException("Provided list of item keys contains duplicates")
        attributes_to_get = table_request.get("AttributesToGet")
        names = table_request.get("ExpressionAttributeNames", {})
        parser = ProjectionExpressionParser(table_request.get("ProjectionExpression"), names)
        projection = parser.parse()
        validate_attributes_used(names, parser.expr_attr_names_found, validation_error_prefix=False)
        picked = _top_level(projection) if projection else None
        found: list[Any] = []
        results["Responses"][table_name] = found
        find = _finder(backend.get_table(table_name)) if keys else None
        for key in keys:
            stored = find(key)  # type: ignore[misc]
            if not stored:
                continue
            if picked is None:
                item = stored.project(projection) if projection else stored
                size = item.size()
                attrs = item.describe_attrs(attributes_to_get)["Item"]
            else:
                attrs = {n: stored.attrs[n] for n in picked if n in stored.attrs}
                size = sum(bytesize(n) + v.size() for n, v in attrs.items())
                if attributes_to_get:
                    attrs = {n: v for n, v in attrs.items() if n in attributes_to_get}
            if result_size + size > MAX_RESULT_BYTES:
                results["UnprocessedKeys"].setdefault(table_name, {"Keys": []})["Keys"].append(key)
            else:
                found.append(attrs)
                result_size += size
        results["ConsumedCapacity"].append({"CapacityUnits": len(keys), "TableName": table_name})
    return dumps(results), {"Content-Type": "application/x-amz-json-1.0"}


def install() -> None:
    """Replace ``DynamoHandler.batch_get_item`` in this process's moto."""
    if _ORIGINAL:
        return
    from moto.dynamodb.responses import DynamoHandler

    _ORIGINAL["batch_get_item"] = DynamoHandler.batch_get_item
    DynamoHandler.batch_get_item = _batch_get_item  # type: ignore[method-assign]


def uninstall() -> None:
    """Restore moto's own BatchGetItem (tests compare the two)."""
    if not _ORIGINAL:
        return
    from moto.dynamodb.responses import DynamoHandler

    DynamoHandler.batch_get_item = _ORIGINAL.pop("batch_get_item")  # type: ignore[method-assign]
