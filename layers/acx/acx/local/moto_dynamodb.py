"""moto's DynamoDB, made fast enough for the local stack: TransactWriteItems without a deep copy of
every table it touches, requests parsed with ``json.loads`` and items built without a quadratic size
check.

moto 5 backs up each table a transaction names with ``copy.deepcopy`` before applying it, so every
transaction costs O(all items in those tables): on the local stack an append to a log of a few
thousand entries took seconds and grew without bound (AWS does no such thing). This replacement keeps
AWS's all-or-nothing semantics differently: it evaluates every condition first and writes nothing
when any fails (TransactionCanceledException with one reason per item, as AWS reports them), then
applies the writes under one lock, restoring only the touched items if a write itself raises.

Limits enforced as the DynamoDB API reference documents them for TransactWriteItems (pinned one by
one in tests/integration/test_moto_dynamodb.py): at most 100 actions and no item named twice
(ValidationException); an aggregate size over 4 MB (ValidationException, which stock moto does not
check); an item over 400 KB after the write (TransactionCanceledException with a ``ValidationError``
reason for that item, ``None`` for the others). The aggregate is counted over what the request
carries (Put items; keys and expression values of the other actions): AWS documents no finer rule.

Two more costs measured with py-spy on a 10,000-record presigned ingest (docs/LOCAL.md):

- moto 5 parses every request body by walking botocore's shape model (``parse_parameters``: ~10% of
  the whole ingest). DynamoDB's JSON protocol needs only one conversion, base64 ``B``/``BS``
  attribute values to bytes, so :func:`_parse_parameters` does ``json.loads`` with that conversion
  as its object hook, and gives the same dict (pinned by tests/integration/test_moto_dynamodb.py).
- ``LimitedSizeDict.__setitem__`` re-sums the size of the whole item for every attribute it sets
  (quadratic in the attribute count); :func:`_item_init` sums once and raises the same
  ``ItemSizeTooLarge`` past the same 405,000 bytes.

Local stand-in only (tests and the local stack); never imported by the service. ``install()`` is
idempotent.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import zlib
from typing import Any

_LOCK = threading.RLock()
_INSTALLED = False
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024  # "The aggregate size of the items ... cannot exceed 4 MB"
MAX_ITEM_BYTES = 400 * 1024  # "The maximum item size in DynamoDB is 400 KB" (names + values)
MAX_BATCH_WRITE = 25  # BatchWriteItem: "up to 25 item put or delete operations"


def install() -> None:
    """Replace ``DynamoDBBackend.transact_write_items`` in this process's moto."""
    global _INSTALLED
    if _INSTALLED:
        return
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.responses import DynamoHandler

    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    DynamoHandler.parse_parameters = _parse_parameters  # type: ignore[method-assign]
    DynamoHandler.batch_write_item = _batch_write_item  # type: ignore[method-assign]
    DynamoHandler._contains_duplicates = _contains_duplicates  # type: ignore[method-assign]
    Item.__init__ = _item_init  # type: ignore[method-assign]
    from moto.dynamodb.models.dynamo_type import DynamoType

    _STOCK.update(hash=DynamoType.__hash__, eq=DynamoType.__eq__)
    DynamoType.__hash__ = _dynamo_hash  # type: ignore[method-assign,assignment]
    DynamoType.__eq__ = _dynamo_eq  # type: ignore[method-assign,assignment]
    from acx.local import moto_batch_get, moto_query

    moto_query.install()  # paged Query in O(page), not O(table): acx/local/moto_query.py
    moto_batch_get.install()  # BatchGetItem answered as JSON directly: acx/local/moto_batch_get.py
    global _ACTIONS
    _ACTIONS = _actions()
    _INSTALLED = True


#: Types whose ``DynamoType.cast_value`` is the value itself (the property tests N, the sets, L, M
#: and NULL before it returns ``self.value``).
_SELF_CAST = frozenset(("S", "B", "BOOL"))
_STOCK: dict[str, Any] = {}


def _dynamo_hash(self: Any) -> int:
    """``DynamoType.__hash__`` (``hash((type, cast_value))``), the same number, without the property's
    five type tests for a string, binary or bool: moto hashes a key ``DynamoType`` for every item it
    stores or looks up (py-spy, 20,000-record presigned ingest: ``cast_value`` and ``__hash__`` ~4% of
    moto's share; 400,000 hashes)."""
    t = self.type
    if t in _SELF_CAST:
        return hash((t, self.value))
    return int(_STOCK["hash"](self))


def _dynamo_eq(self: Any, other: Any) -> bool:
    """``DynamoType.__eq__`` (``type == other.type and cast_value == other.cast_value``), the same
    answer: once both types are equal and self-cast, both cast values are the values."""
    t = self.type
    if t in _SELF_CAST:
        return bool(t == other.type and self.value == other.value)
    return bool(_STOCK["eq"](self, other))


def _binary(value: dict[str, Any]) -> Any:
    """``json.loads`` object hook: base64 ``B``/``BS`` attribute values to bytes, as botocore's shape
    parser does, one object at a time from inside the C decoder (2-3x less CPU than walking the
    parsed tree afterwards, measured on 25-row batches and 100-key reads)."""
    if len(value) == 1:
        inner = value.get("B")
        if isinstance(inner, str):
            return {"B": base64.b64decode(inner)}
        inner = value.get("BS")
        if isinstance(inner, list) and all(isinstance(v, str) for v in inner):
            return {"BS": [base64.b64decode(v) for v in inner]}
    return value


def _loads(body: bytes | str) -> Any:
    """A DynamoDB JSON request body as moto's shape parser gives it (base64 binaries decoded)."""
    return json.loads(body, object_hook=_binary)


def _parse_parameters(self: Any, request: Any) -> None:
    body = request.data
    if not body:
        self.params = {}
        return
    self.params = _loads(body)


def _contains_duplicates(self: Any, keys: list[Any]) -> bool:
    """moto's check compares each key with every one before it (quadratic: 3% of an ingest in
    BatchGetItem); the same answer from one pass over canonical JSON."""
    seen: set[Any] = set()
    for k in keys:
        marker = _key_marker(k)
        if marker in seen:
            return True
        seen.add(marker)
    return False


def _key_marker(key: Any) -> Any:
    """A hashable value equal for equal keys: (name, type, value) triples sorted by name for the usual
    scalar keys, else canonical JSON.

    One pass, and the two-attribute key (the service's ``pk``/``sk``) ordered by one comparison
    instead of ``sorted``: ~3x less CPU for the ~100,000 markers of a 20,000-record ingest (BatchGetItem
    duplicate checks and BatchWriteItem's). The same marker as the generator and ``sorted`` form it
    replaces (tests/unit/local/test_key_marker.py compares them on every key form)."""
    if isinstance(key, dict):
        parts = []
        for name, av in key.items():
            if not isinstance(av, dict) or len(av) != 1:
                break
            for tag, value in av.items():
                parts.append((name, tag, value))
        else:
            if len(parts) == 2:
                a, b = parts
                marker: Any = (b, a) if b < a else (a, b)  # what sorted() gives for two
            else:
                parts.sort()
                marker = tuple(parts)
            try:
                hash(marker)
                return marker
            except TypeError:
                pass
    return json.dumps(key, sort_keys=True, default=repr) if not isinstance(key, str) else key


def _batch_write_item(self: Any) -> Any:
    """BatchWriteItem with the refusals the API reference lists, checked before anything is written
    (stock moto takes any number of requests, writes the puts before an oversized one, and only
    refuses duplicates that are equal whole items):

    - more than 25 put/delete requests in all, or none, a request with neither or both kinds:
      ValidationException;
    - an item over 400 KB: ValidationException (25 items of at most 400 KB stay under the 16 MB a
      request may carry, so that limit cannot be reached on its own);
    - a table that does not exist: ResourceNotFoundException;
    - a key missing from an item or a Key, or two requests on one item: ValidationException.
    The writes themselves, and the answer, are moto's.
    """
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.responses import validate_put_has_empty_keys

    table_batches = self.body.get("RequestItems") or {}
    requests = [(name, req) for name, reqs in table_batches.items() for req in reqs]
    if not requests or len(requests) > MAX_BATCH_WRITE:
        raise MockValidationException(
            "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_BATCH_WRITE}"
        )
    puts: list[tuple[Any, dict[str, Any], int, dict[str, Any] | None]] = []
    deletes: list[tuple[Any, dict[str, Any]]] = []
    seen: set[tuple[str, str]] = set()
    for table_name, request in requests:
        table = self.dynamodb_backend.get_table(table_name)  # ResourceNotFoundException
        if len(request) != 1 or next(iter(request)) not in ("PutRequest", "DeleteRequest"):
            raise MockValidationException("A WriteRequest must hold exactly one PutRequest or DeleteRequest")
        kind, body = next(iter(request.items()))
        attrs = body.get("Item") if kind == "PutRequest" else body.get("Key")
        if not isinstance(attrs, dict):
            raise MockValidationException(
                f"One or more parameter values were invalid: {kind} without its item"
            )
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        if any(n not in attrs for n in names):
            raise MockValidationException("The provided key element does not match the schema")
        converted = _plain_item(attrs) if kind == "PutRequest" else None
        if kind == "PutRequest" and (converted is None or _empty_key_value(table, attrs)):
            validate_put_has_empty_keys(
                attrs,
                table,
                custom_error_msg="One or more parameter values are not valid. The AttributeValue for a key "
                "attribute cannot contain an empty string value. Key: {}",
            )
        size = _attributes_size(attrs) if converted is None else converted[1]
        if kind == "PutRequest" and size > MAX_ITEM_BYTES:
            raise MockValidationException(_ITEM_TOO_LARGE)
        marker = (table_name, _key_marker({n: attrs[n] for n in names}))
        if marker in seen:
            raise MockValidationException("Provided list of item keys contains duplicates")
        seen.add(marker)
        if kind == "PutRequest":
            puts.append((table, attrs, size, None if converted is None else converted[0]))
        else:
            deletes.append((table, attrs))
    with _LOCK:
        for table, item, size, values in puts:
            _put(table, item, size, values)
        for table, key in deletes:
            self.dynamodb_backend.delete_item(table.name, key)
    # What moto's serialiser writes for this answer (key order and all), without walking the shape.
    consumed = [
        {"TableName": name, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}} for name in table_batches
    ]
    body = {"UnprocessedItems": {}, "ItemCollectionMetrics": {}, "ConsumedCapacity": consumed}
    return json.dumps(body), {"Content-Type": "application/x-amz-json-1.0"}


def _put(table: Any, attrs: dict[str, Any], size: int, values: dict[str, Any] | None = None) -> None:
    """``Table.put_item(attrs)`` without a condition, as moto 5.2 writes it, with the item's size
    (``_attributes_size``, already summed by the caller) not summed again and no no-op condition
    parsed: the same checks in the same order (key types, ``_validate_item_types``, key sizes, the
    405,000-byte item limit), the same store (``table.items``, a ``Partition`` under moto_query), the
    same stream record. Pinned against moto's ``put_item`` in tests/integration/test_moto_dynamodb.py."""
    from moto.dynamodb.exceptions import InvalidAttributeTypeError, ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

    hash_value = _dynamo_type(attrs[table.hash_key_attr], DynamoType)
    range_value = None
    if table.range_key_attr is not None:
        range_value = _dynamo_type(attrs[table.range_key_attr], DynamoType)
    if hash_value.type != table.hash_key_type:
        raise InvalidAttributeTypeError(
            table.hash_key_attr, expected_type=table.hash_key_type, actual_type=hash_value.type
        )
    if range_value and range_value.type != table.range_key_type:
        raise InvalidAttributeTypeError(
            table.range_key_attr, expected_type=table.range_key_type, actual_type=range_value.type
        )
    if values is None:
        table._validate_item_types(attrs)
    _validate_key_sizes(table, attrs)
    current = None
    if values is None or table.stream_shard is not None or size > 405000:
        # As moto: it also makes an empty partition (only visible when the size check below raises;
        # otherwise the store just below makes it anyway).
        current = table.get_item(hash_value, range_value)
    if size > 405000:
        raise ItemSizeTooLarge
    if values is None:
        values = {key: _dynamo_type(value, DynamoType) for key, value in attrs.items()}
    item: Any = Item.__new__(Item)
    item.hash_key = hash_value
    item.range_key = range_value
    item.attrs = LimitedSizeDict(values)
    if range_value:
        table.items[hash_value][range_value] = item
    else:
        table.items[hash_value] = item
    if table.stream_shard is not None:
        table.stream_shard.add(current, item)


def _validate_key_sizes(table: Any, attrs: dict[str, Any]) -> None:
    """``Table._validate_key_sizes`` (moto 5.2) with each key's size from the JSON (``_value_size``)
    instead of a ``DynamoType`` built for it."""
    from moto.dynamodb.exceptions import HashKeyTooLong, RangeKeyTooLong
    from moto.dynamodb.limits import HASH_KEY_MAX_LENGTH, RANGE_KEY_MAX_LENGTH

    for name in table.hash_key_names:
        value = attrs.get(name)
        if value and _value_size(value) > HASH_KEY_MAX_LENGTH:
            raise HashKeyTooLong
    for name in table.range_key_names:
        value = attrs.get(name)
        if value and _value_size(value) > RANGE_KEY_MAX_LENGTH:
            raise RangeKeyTooLong


def _item_init(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    self.hash_key = hash_key
    self.range_key = range_key
    size = sum(
        bytesize(key) + (_value_size(value) if isinstance(value, dict) else DynamoType(value).size())
        for key, value in attrs.items()
    )
    if size > 405000:
        raise ItemSizeTooLarge
    values = {key: _dynamo_type(value, DynamoType) for key, value in attrs.items()}
    self.attrs = LimitedSizeDict(values)  # dict.update: no per-key re-sum


def _dynamo_type(value: Any, cls: Any) -> Any:
    """``DynamoType(value)`` for a one-key dict, without its two list copies per node (``type`` and
    ``value`` set as ``DynamoType.__init__`` sets them; lists and maps converted member by member).
    Anything else goes to ``DynamoType`` itself (pinned equal in tests/integration/test_moto_dynamodb.py)."""
    if type(value) is not dict or len(value) != 1:
        return cls(value)
    ((tag, inner),) = value.items()
    if tag == "L":
        if type(inner) is not list:
            return cls(value)
        inner = [_dynamo_type(v, cls) for v in inner]
    elif tag == "M":
        if type(inner) is not dict:
            return cls(value)
        inner = {k: _dynamo_type(v, cls) for k, v in inner.items()}
    t = cls.__new__(cls)
    t.type = tag
    t.value = inner
    return t


#: Map member and attribute names that moto's ``Table._validate_item_types`` reads as type tags (it
#: does not tell names from tags); an item naming one goes to moto's own checks.
_TAG_NAMES = frozenset(("N", "S", "NULL"))


def _plain_item(attrs: dict[str, Any]) -> tuple[dict[str, Any], int] | None:
    """The stored attribute values (``_dynamo_type`` of each) and the item size
    (``_attributes_size``) of an item in plain forms, in one walk; None for anything else.

    py-spy of a 20,000-record presigned ingest (docs/LOCAL.md): moto's BatchWriteItem was a quarter
    of the ingest thread, each put walking the item four times (empty-key check, size, moto's
    ``_validate_item_types``, the DynamoType conversion). Plain forms: ``S`` str, ``B`` bytes, ``N``
    ASCII digits only (at most 38: a number moto's ``_validate_number_type`` always accepts),
    ``BOOL`` bool, ``NULL`` True, ``SS`` str list, ``BS`` bytes list, ``L`` and ``M`` of plain
    values; no attribute or member named ``N``, ``S`` or ``NULL``. moto's type checks accept every
    such item, so skipping them changes no answer; anything else (a signed or decimal number, ``NS``,
    a bad value) returns None and goes through moto's checks, so a refusal is moto's word for word
    (tests/integration/test_moto_batch_write.py)."""
    return _plain_members(attrs)


def _plain_members(attrs: dict[str, Any]) -> tuple[dict[str, Any], int] | None:
    """An item's attributes or a map's members: converted values and summed size (names included)."""
    values: dict[str, Any] = {}
    size = 0
    for name, av in attrs.items():
        if type(name) is not str or name in _TAG_NAMES:
            return None
        converted = _plain_value(av)
        if converted is None:
            return None
        values[name] = converted[0]
        size += (len(name) if name.isascii() else len(name.encode("utf-8"))) + converted[1]
    return values, size


def _plain_value(av: Any) -> tuple[Any, int] | None:
    """(``_dynamo_type(av)``, ``_value_size(av)``) for a plain attribute value, else None."""
    if type(av) is not dict or len(av) != 1:
        return None
    ((tag, inner),) = av.items()
    kind = type(inner)
    if tag == "S":
        if kind is not str:
            return None
        size = len(inner) if inner.isascii() else len(inner.encode("utf-8"))
    elif tag == "B":
        if kind is not bytes:
            return None
        size = len(inner)
    elif tag == "N":
        if kind is not str or not (inner.isascii() and inner.isdigit()) or len(inner) > 38:
            return None
        size = len(inner)
    elif tag == "M":
        members = _plain_members(inner) if kind is dict else None
        if members is None:
            return None
        inner, size = members
    elif tag == "L":
        if kind is not list:
            return None
        elements: list[Any] = []
        size = 0
        for value in inner:
            converted = _plain_value(value)
            if converted is None:
                return None
            elements.append(converted[0])
            size += converted[1]
        inner = elements
    elif tag == "SS":
        if kind is not list or any(type(v) is not str for v in inner):
            return None
        size = sum(len(v) if v.isascii() else len(v.encode("utf-8")) for v in inner)
    elif tag == "BS":
        if kind is not list or any(type(v) is not bytes for v in inner):
            return None
        size = sum(len(v) for v in inner)
    elif tag == "BOOL":
        if kind is not bool:
            return None
        size = 1
    elif tag == "NULL":
        if inner is not True:
            return None
        size = 1
    else:
        return None
    t = _new_dynamo_type()
    t.type = tag
    t.value = inner
    return t, size


def _new_dynamo_type() -> Any:
    """An empty ``DynamoType`` (its class looked up once: moto is imported lazily here)."""
    global _new_dynamo_type
    from moto.dynamodb.models.dynamo_type import DynamoType

    def new() -> Any:
        return DynamoType.__new__(DynamoType)

    _new_dynamo_type = new
    return new()


def _empty_key_value(table: Any, attrs: dict[str, Any]) -> bool:
    """Whether moto's ``validate_put_has_empty_keys`` can refuse this item of plain values: some key
    attribute of the table or an index holds the empty string (a ``B`` is bytes by then, and moto
    compares with ``""``, so only ``S`` can)."""
    names = table.attribute_keys
    for index in table.global_indexes:
        names = names + list(index.schema_key_attrs)
    return any(attrs.get(name) == {"S": ""} for name in names)


def _key_of(backend: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    if op_type != "Put":
        return dict(op["Key"])
    table = backend.get_table(op["TableName"])
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    _check_transaction_size(transact_items)
    with _LOCK:
        plan: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        seen: set[tuple[str, str]] = set()
        errors: list[tuple[Any, Any, Any]] = []
        for item in transact_items:
            if len(item) > 1:
                raise TransactWriteSingleOpException
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            key = _key_of(self, op_type, op)
            marker = (str(op["TableName"]), str(dict(sorted(key.items()))))
            if marker in seen:
                raise MultipleTransactionsException()
            seen.add(marker)
            plan.append((op_type, op, key))
            errors.append(
                _put_too_large(op_type, op) or _condition_error(self, op, key, ConditionalCheckFailed)
            )
        if any(code is not None for code, _, _ in errors):
            raise TransactionCanceledException(errors)
        backups = [
            (op["TableName"], key, copy.deepcopy(self.get_item(op["TableName"], key))) for _, op, key in plan
        ]
        done = 0
        try:
            for op_type, op, key in plan:
                _apply(self, op_type, op, key)
                done += 1
        except Exception as exc:
            for table_name, key, old in backups:
                if old is None:
                    self.delete_item(table_name, key)
                else:
                    self.put_item(table_name, old.to_json()["Attributes"])
            reasons = _item_size_reasons(exc, done, len(plan))
            if reasons is not None:
                raise TransactionCanceledException(reasons) from None
            raise


def _attributes_size(attributes: dict[str, Any] | None) -> int:
    """DynamoDB's item size: UTF-8 bytes of each attribute name plus its value's size."""
    return sum(len(name.encode("utf-8")) + _value_size(value) for name, value in (attributes or {}).items())


def _value_size(value: Any) -> int:
    """``DynamoType(value).size()`` computed on the JSON form, without building the DynamoType tree
    (BatchWriteItem sized every item twice that way: once here, once when moto stores it)."""
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "N":
            return len(str(inner))
        if tag in ("SS", "NS", "BS") and isinstance(inner, list):
            return sum(_value_size({tag[0]: v}) for v in inner)
        if tag == "L" and isinstance(inner, list):
            return sum(_value_size(v) for v in inner)
        if tag == "M" and isinstance(inner, dict):
            return sum(len(k.encode("utf-8")) + _value_size(v) for k, v in inner.items())
        if isinstance(inner, bool):
            return 1
        if isinstance(inner, bytes):
            return len(inner)
        if isinstance(inner, str):
            return len(inner.encode("utf-8"))
    from moto.dynamodb.models.dynamo_type import DynamoType

    return int(DynamoType(value).size())  # anything else: moto's own answer (or its error)


def _transaction_size(transact_items: list[dict[str, Any]]) -> int:
    """What a TransactWriteItems request carries: Put items, and the keys and expression values of
    Update, Delete and ConditionCheck actions."""
    total = 0
    for item in transact_items:
        for op_type, op in item.items():
            if op_type == "Put":
                total += _attributes_size(op.get("Item"))
            else:
                total += _attributes_size(op.get("Key")) + _attributes_size(
                    op.get("ExpressionAttributeValues")
                )
    return total


def _check_transaction_size(transact_items: list[dict[str, Any]]) -> None:
    """ValidationException over 4 MB, before any condition is read (AWS refuses the request)."""
    from moto.dynamodb.exceptions import MockValidationException

    if _transaction_size(transact_items) > MAX_TRANSACTION_BYTES:
        raise MockValidationException("Transaction request cannot be larger than 4 MB")


_ITEM_TOO_LARGE = "Item size has exceeded the maximum allowed size"


def _put_too_large(op_type: str, op: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """A Put whose item is over 400 KB: that item's cancellation reason (ValidationError)."""
    if op_type == "Put" and _attributes_size(op.get("Item")) > MAX_ITEM_BYTES:
        return ("ValidationError", _ITEM_TOO_LARGE, None)
    return None


def _item_size_reasons(exc: Exception, index: int, count: int) -> list[tuple[Any, Any, Any]] | None:
    """moto's own item-size refusal while applying action ``index`` (an Update that grew the item
    past its limit) as AWS reports it: a cancellation with ValidationError for that action."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge, ItemSizeToUpdateTooLarge

    if not isinstance(exc, ItemSizeTooLarge | ItemSizeToUpdateTooLarge):
        return None
    reasons: list[tuple[Any, Any, Any]] = [(None, None, None)] * count
    reasons[index] = ("ValidationError", _ITEM_TOO_LARGE, None)
    return reasons


def _condition_error(
    backend: Any, op: dict[str, Any], key: dict[str, Any], failed: type
) -> tuple[Any, Any, Any]:
    from moto.dynamodb.comparisons import get_filter_expression

    expression = op.get("ConditionExpression")
    if expression is None:
        return (None, None, None)
    current = backend.get_item(op["TableName"], key)
    condition = get_filter_expression(
        expression, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
    )
    if condition.expr(current):
        return (None, None, None)
    old = None
    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
        old = current.to_json()["Attributes"]
    return ("ConditionalCheckFailed", str(failed(item=old).message), old)


def _apply(backend: Any, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> None:
    # Conditions were checked above under the same lock; they are not evaluated twice.
    names = op.get("ExpressionAttributeNames")
    values = op.get("ExpressionAttributeValues")
    if op_type == "Put":
        backend.put_item(op["TableName"], op["Item"])
    elif op_type == "Delete":
        backend.delete_item(op["TableName"], key)
    elif op_type == "Update":
        backend.update_item(
            op["TableName"],
            key,
            update_expression=op["UpdateExpression"],
            expression_attribute_names=names,
            expression_attribute_values=values,
        )


# --------------------------------------------------------------------------- direct dispatch

TARGET_PREFIX = "DynamoDB_20120810."


def call(headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """One DynamoDB JSON request, answered by moto's own ``DynamoHandler`` action, without Flask.

    moto's server path spends more on the way to the handler than in it (py-spy on a presigned
    ingest: werkzeug + Flask request contexts, the domain dispatcher listing moto's package directory
    on disk for every request, ``setup_class``'s query-string and form parsing, ``inspect.getmembers``
    of the handler class per call: about a third of the ingest's CPU). DynamoDB's protocol needs none
    of it: the action is the ``X-Amz-Target`` header, the parameters are the JSON body (parsed by
    :func:`_parse_parameters`), the account comes from the access key and the region from the
    signature's credential scope, as moto derives them. The action method, its validation, its
    ``ServiceException`` answers (400 with ``__type``) and moto's response serialiser are moto's, so
    the answers are the server's (pinned against the WSGI path in tests/integration/test_moto_dynamodb.py).

    ``headers``: lower-case names. The caller serialises state-changing calls (the journal's lock).
    """
    from moto.core.exceptions import ServiceException
    from moto.core.responses import ActionResult
    from moto.core.utils import camelcase_to_underscores
    from moto.utilities.aws_headers import gen_amz_crc32
    from werkzeug.exceptions import HTTPException

    target = headers.get("x-amz-target", "")
    action = target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else ""
    handler = _handler_class()()
    handler.headers = {
        "Authorization": headers.get("authorization", ""),
        "X-Amz-Target": target,
        "x-amz-target": target,
    }
    handler.querystring = {}
    handler.uri_match = {}
    handler.method = "POST"
    handler.response_headers = {"server": "amazon.com"}
    auth = headers.get("authorization", "")
    scope = auth.split("Credential=", 1)[1].split(",", 1)[0].split("/") if "Credential=" in auth else []
    handler.region = scope[2] if len(scope) >= 5 else "us-east-1"
    handler.current_account = handler.get_current_account()
    handler.partition = "aws"
    method = getattr(handler, camelcase_to_underscores(action), None) if action else None
    if not action or method is None or action not in _ACTIONS:
        raise NotImplementedError(f"The {action or target!r} action has not been implemented")
    try:
        params = _loads(body) if body else {}
    except ValueError:
        params = None
    if not isinstance(params, dict):
        data = json.dumps({"__type": "com.amazon.coral.service#SerializationException"}).encode()
        return 400, {"content-type": "application/x-amz-json-1.0", "x-amz-crc32": str(zlib.crc32(data))}, data
    handler.params = params
    handler.body = params
    out_headers: dict[str, Any] = handler.response_headers
    try:
        response = method()
    except ServiceException as exc:
        status, se_headers, content = handler.serialized(ActionResult(exc))
        se_headers["status"] = status
        response = content, se_headers
    except HTTPException as exc:
        response = exc.description, {**dict(exc.get_headers() or []), "status": exc.code}
    if isinstance(response, ActionResult):
        status, out_headers, content = handler.serialized(response)
    elif isinstance(response, str):
        status, content = 200, response
    else:
        status, out_headers, content = handler._transform_response(out_headers, response)
    out_headers, content = handler._enrich_response(out_headers, content)
    data = content if isinstance(content, bytes) else str(content).encode("utf-8")
    gen_amz_crc32(data, out_headers)
    out_headers.pop("status", None)
    return int(status), {str(k): str(v) for k, v in out_headers.items()}, data


_HANDLER: Any = None


def _handler_class() -> Any:
    """DynamoHandler whose backend is looked up once per request, not once per key of a batch
    (``dynamodb_backend`` is a property that walks moto's account and region dicts each time)."""
    global _HANDLER
    if _HANDLER is None:
        from moto.dynamodb.models import dynamodb_backends
        from moto.dynamodb.responses import DynamoHandler

        class Handler(DynamoHandler):
            @property
            def dynamodb_backend(self) -> Any:
                backend = self.__dict__.get("_backend")
                if backend is None:
                    backend = self.__dict__["_backend"] = dynamodb_backends[self.current_account][self.region]
                return backend

        _HANDLER = Handler
    return _HANDLER


#: The DynamoDB actions moto implements (method names of DynamoHandler), computed once.
_ACTIONS: frozenset[str] = frozenset()


def _actions() -> frozenset[str]:
    from moto.core.utils import camelcase_to_underscores, get_service_model
    from moto.dynamodb.responses import DynamoHandler

    # The API's operations that DynamoHandler implements (not its helpers, such as setup_class).
    operations = get_service_model("dynamodb").operation_names
    return frozenset(
        op for op in operations if callable(getattr(DynamoHandler, camelcase_to_underscores(op), None))
    )
