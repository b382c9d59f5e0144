"""botocore's DynamoDB client-side checks and serialiser, with a fast path for attribute values.

py-spy of a 20,000-record presigned ingest on the local stack (main, 2026-12-01, docs/LOCAL.md):
botocore's ``ParamValidator`` and ``JSONSerializer`` were 22% of the ingest thread, nearly all of it
walking DynamoDB attribute values (a row of ~15 attributes, 25 rows a BatchWriteItem): for every
value the validator and the serialiser each dispatch on its shape through several Python calls.

An attribute value made only of the plain forms (one of ``S``/``N`` str, ``B`` bytes, ``BOOL``/
``NULL`` bool, ``SS``/``NS`` lists of str, ``BS`` list of bytes, ``M`` dict of str to plain values,
``L`` list of plain values) is one botocore always accepts: none of those shapes carries a
constraint botocore checks client side (``AttributeValue`` is not a tagged union, and no ``min``
on any of its member shapes; ``max`` is never checked client side). For those the validator here
skips the walk, and the serialiser hands the value to ``json.dumps`` as it is, bytes written as
botocore writes a blob (standard base64). Anything else (a bytearray, a str for ``B``, a set, an
unknown or a second tag, a subclass of dict or str, a map or list shape with a ``min``) goes through
botocore's own code, so its ``ParamValidationError`` is botocore's, word for word.
tests/integration/test_moto_botocore_fast.py pins both: the same request as stock botocore (the same
bytes; for a request :func:`request_check` accepts, the same JSON value, written by orjson) on the
service's requests and on every value form, and the same error report on bad values.

Local stand-in only: installed on the boto3 session of a local stack (``install``), it changes the
DynamoDB clients created after it in this process; the service on Lambda keeps stock botocore.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from typing import Any

import orjson
from botocore.serialize import JSONSerializer
from botocore.validate import ParamValidationDecorator, ParamValidator

HANDLER_ID = "acx-local-botocore-fast"
_EVENT = "creating-client-class.dynamodb"
_CACHE = "_acx_plain_av_eligible"

#: AttributeValue's members as this code knows them; another botocore's model falls back.
_AV_MEMBERS = {
    "S": "string",
    "N": "string",
    "B": "blob",
    "SS": "list",
    "NS": "list",
    "BS": "list",
    "M": "map",
    "L": "list",
    "NULL": "boolean",
    "BOOL": "boolean",
}


def plain(av: Any) -> bool:
    """True when ``av`` is an attribute value in the plain forms (module docstring)."""
    if type(av) is not dict or len(av) != 1:
        return False
    ((tag, v),) = av.items()
    t = type(v)
    if tag == "S" or tag == "N":
        return t is str
    if tag == "B":
        return t is bytes
    if tag == "M":
        return t is dict and all(type(k) is str and plain(x) for k, x in v.items())
    if tag == "L":
        return t is list and all(plain(x) for x in v)
    if tag == "BOOL" or tag == "NULL":
        return t is bool
    if tag == "SS" or tag == "NS":
        return t is list and all(type(x) is str for x in v)
    if tag == "BS":
        return t is list and all(type(x) is bytes for x in v)
    return False


def _plain_map(value: Any) -> bool:
    return type(value) is dict and all(type(k) is str and plain(v) for k, v in value.items())


def _plain_list(value: Any) -> bool:
    return type(value) is list and all(plain(v) for v in value)


def _av_shape_known(shape: Any) -> bool:
    members = getattr(shape, "members", None)
    if shape.name != "AttributeValue" or shape.metadata or members is None:
        return False
    if {k: m.type_name for k, m in members.items()} != _AV_MEMBERS:
        return False
    for m in members.values():
        if m.metadata or m.serialization:
            return False
        inner = getattr(m, "member", None) or getattr(m, "value", None)
        if inner is not None and inner.metadata:
            return False
    return bool(members["M"].key.metadata.keys() <= {"max"})


def eligible(shape: Any) -> bool:
    """A map of attribute values with no checked key constraint, or a list of attribute values with no
    ``min``: the shapes whose plain values skip botocore's walk (cached on the shape object)."""
    known = shape.__dict__.get(_CACHE)
    if known is None:
        if shape.type_name == "map":
            key = shape.key
            known = (
                _av_shape_known(shape.value)
                and "min" not in key.metadata
                and not key.serialization.get("hostLabel")
                and not shape.serialization
            )
        elif shape.type_name == "list":
            known = _av_shape_known(shape.member) and "min" not in shape.metadata and not shape.serialization
        else:
            known = False
        shape.__dict__[_CACHE] = known
    return bool(known)


Check = Callable[[Any], bool]
_CHECKS = "_acx_request_check"


def _never(value: Any) -> bool:
    return False


def request_check(shape: Any) -> Check:
    """For an operation's input shape: a check that is True only for parameters botocore's validator
    accepts *and* its JSON serialiser would copy unchanged (blobs aside, which ``_blob`` writes as it
    does), so the whole request needs neither walk (cached on the shape object).

    py-spy of a 20,000-record presigned ingest (docs/LOCAL.md): after the attribute values' fast path,
    the validator and serialiser still walked every ``WriteRequest``/``PutRequest`` structure and key
    around them (~14% of the ingest thread). The check accepts, per shape type: a structure as a
    ``dict`` with its required members and only known ones (no tagged union, no document, no member
    with a serialisation trait), a ``list`` at or over its ``min`` length, a ``dict`` map whose keys
    are ``str`` at or over the key's ``min``, a ``str`` at or over its ``min``, an ``int`` (not a bool)
    at or over its ``min``, a ``bool``, ``bytes`` for a blob, and attribute values by :func:`plain`.
    That is a subset of what botocore's ``ParamValidator`` accepts (it checks no ``max``, no enum, no
    pattern, and no ``min`` on a map), and for each of those botocore's ``_serialize`` copies the value
    as it is. Anything else (a float, a timestamp, a tuple, a bytearray, a str blob, an unknown or
    missing member) is False: the request takes botocore's own validator and serialiser, so a refusal
    is botocore's word for word."""
    known = shape.__dict__.get(_CHECKS)
    if known is None:
        known = shape.__dict__[_CHECKS] = _compile(shape, {})
    return known  # type: ignore[no-any-return]


def _compile(shape: Any, memo: dict[str, Check]) -> Check:
    """The check of one shape; ``memo`` (by shape name) ends recursion (a map of maps of ...)."""
    name = shape.name
    if name in memo:
        return memo[name]
    cell: list[Check] = []
    memo[name] = lambda value: cell[0](value)  # a recursive shape's inner references
    check = _build(shape, memo)
    cell.append(check)
    memo[name] = check
    return check


def _build(shape: Any, memo: dict[str, Check]) -> Check:
    kind = shape.type_name
    low = shape.metadata.get("min")
    if shape.serialization or shape.metadata.get("document") or shape.metadata.get("union"):
        return _never
    if kind == "structure":
        if _av_shape_known(shape):
            return plain
        if shape.is_document_type or shape.is_tagged_union:
            return _never
        members = {k: (_never if m.serialization else _compile(m, memo)) for k, m in shape.members.items()}
        required = tuple(shape.metadata.get("required", ()))

        def structure(value: Any) -> bool:
            if type(value) is not dict:
                return False
            for r in required:
                if r not in value:
                    return False
            for k, v in value.items():
                check = members.get(k)
                if check is None or not check(v):
                    return False
            return True

        return structure
    if kind == "list":
        if eligible(shape):
            return _plain_list_at_least(low)
        member = _compile(shape.member, memo)
        return lambda v: type(v) is list and (low is None or len(v) >= low) and all(member(x) for x in v)
    if kind == "map":
        if eligible(shape):
            return _plain_map
        key = shape.key
        if key.type_name != "string" or key.serialization:
            return _never
        key_low = key.metadata.get("min") or 0
        value = _compile(shape.value, memo)
        return lambda v: (
            type(v) is dict and all(type(k) is str and len(k) >= key_low and value(x) for k, x in v.items())
        )
    if kind == "string":
        return lambda v: type(v) is str and (low is None or len(v) >= low)
    if kind in ("integer", "long"):
        return lambda v: type(v) is int and (low is None or v >= low)
    if kind == "boolean":
        return lambda v: type(v) is bool
    if kind == "blob":
        return lambda v: type(v) is bytes
    return _never  # float, double, timestamp: botocore converts them


def _plain_list_at_least(low: int | None) -> Check:
    if low is None:
        return _plain_list
    return lambda v: _plain_list(v) and len(v) >= low


class _Checked(threading.local):
    """The attribute-value maps and lists one request's validation found plain, by ``id`` (the
    objects are held too, so no id is reused while the request is serialised), per thread."""

    values: dict[int, Any] | None = None

    def seen(self, value: Any) -> bool:
        values = self.values
        return values is not None and values.get(id(value)) is value


class FastValidator(ParamValidator):
    """botocore's validator; plain attribute-value maps and lists are accepted without the walk."""

    def __init__(self) -> None:
        super().__init__()
        self.checked = _Checked()

    def _validate_map(self, param: Any, shape: Any, errors: Any, name: str) -> None:
        if eligible(shape) and _plain_map(param):
            self._note(param)
            return
        super()._validate_map(param, shape, errors, name)

    def _validate_list(self, param: Any, shape: Any, errors: Any, name: str) -> None:
        if eligible(shape) and _plain_list(param):
            self._note(param)
            return
        super()._validate_list(param, shape, errors, name)

    def _note(self, param: Any) -> None:
        values = self.checked.values
        if values is not None:
            values[id(param)] = param


class FastValidationDecorator(ParamValidationDecorator):
    """botocore's validate-then-serialise; the serialiser does not walk again a map or list the
    validator has just found plain in the same request (py-spy, 20,000-record ingest: the two walks
    were 5.6% of the ingest thread). Nothing runs between the two steps, so the objects are unchanged."""

    def serialize_to_request(self, parameters: Any, operation_model: Any) -> Any:
        shape = operation_model.input_shape
        if shape is not None and request_check(shape)(parameters):
            return self._serializer.serialize_as_is(parameters, operation_model)
        checked = self._param_validator.checked
        checked.values = {}
        try:
            return super().serialize_to_request(parameters, operation_model)
        finally:
            checked.values = None


def _blob(value: Any) -> str:
    """``json.dumps`` default: a blob as botocore writes it (``Serializer._get_base64``)."""
    if type(value) is bytes:
        return base64.b64encode(value).strip().decode("utf-8")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dumps_checked(parameters: Any) -> bytes:
    """The JSON body of parameters :func:`request_check` accepted, written by ``orjson`` (a 25-item
    BatchWriteItem: ~130 us, ``json.dumps`` with the blob default ~670 us). Not botocore's bytes (no
    space after separators, non-ASCII as UTF-8, not ``\\u`` escapes) but the same JSON value, which is
    all moto and the journal's replay read (both parse it). What ``orjson`` refuses (an int past 64
    bits, a str with a lone surrogate) is written by ``json.dumps`` as botocore writes it."""
    try:
        return orjson.dumps(parameters, default=_blob)
    except orjson.JSONEncodeError:
        return json.dumps(parameters, default=_blob).encode("utf-8")


class FastJSONSerializer(JSONSerializer):
    """botocore's JSON serialiser; plain attribute-value maps and lists are written by ``json.dumps``."""

    #: Set by :func:`fast_serializer` when a validator runs first: what it already found plain.
    checked: _Checked | None = None

    def _known_plain(self, value: Any) -> bool:
        return self.checked is not None and self.checked.seen(value)

    def serialize_as_is(self, parameters: Any, operation_model: Any) -> Any:
        """The request for ``parameters`` that :func:`request_check` accepted: its serialised body is
        the parameters themselves (``_serialize`` would copy them unchanged), blobs by ``_blob``."""
        return self.serialize_to_request(parameters, operation_model, as_is=True)

    def serialize_to_request(self, parameters: Any, operation_model: Any, as_is: bool = False) -> Any:
        # JSONSerializer.serialize_to_request (botocore 1.44), with a default for the raw bytes.
        target = "{}.{}".format(operation_model.metadata["targetPrefix"], operation_model.name)
        json_version = operation_model.metadata["jsonVersion"]
        serialized = self._create_default_request()
        serialized["method"] = operation_model.http.get("method", self.DEFAULT_METHOD)
        serialized["headers"] = {
            "X-Amz-Target": target,
            "Content-Type": f"application/x-amz-json-{json_version}",
        }
        self._handle_query_compatible_trait(operation_model, serialized)
        body = self.MAP_TYPE()
        input_shape = operation_model.input_shape
        if as_is:
            serialized["body"] = _dumps_checked(parameters)
        else:
            if input_shape is not None:
                self._serialize(body, parameters, input_shape)
            serialized["body"] = json.dumps(body, default=_blob).encode(self.DEFAULT_ENCODING)
        host_prefix = self._expand_host_prefix(parameters, operation_model)
        if host_prefix is not None:
            serialized["host_prefix"] = host_prefix
        return serialized

    def _serialize_type_map(self, serialized: Any, value: Any, shape: Any, key: Any) -> None:
        if eligible(shape) and (self._known_plain(value) or _plain_map(value)):
            serialized[key] = value
            return
        super()._serialize_type_map(serialized, value, shape, key)

    def _serialize_type_list(self, serialized: Any, value: Any, shape: Any, key: Any) -> None:
        if eligible(shape) and (self._known_plain(value) or _plain_list(value)):
            serialized[key] = value
            return
        super()._serialize_type_list(serialized, value, shape, key)


def fast_serializer(stock: Any) -> Any:
    """The fast equivalent of a client's ``_serializer`` (validating iff the stock one validates), or
    ``stock`` itself when it is not botocore's plain JSON serialiser."""
    inner = stock._serializer if isinstance(stock, ParamValidationDecorator) else stock
    if type(inner) is not JSONSerializer:
        return stock
    fast = FastJSONSerializer(timestamp_precision=inner._timestamp_precision)
    if isinstance(stock, ParamValidationDecorator):
        if type(stock._param_validator) is not ParamValidator:
            return stock
        validator = FastValidator()
        fast.checked = validator.checked
        return FastValidationDecorator(validator, fast)
    return fast


class _FastClient:
    """Mixin put first in a DynamoDB client class's bases: swaps in the fast serialiser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._serializer = fast_serializer(self._serializer)  # type: ignore[has-type]


def _add_mixin(base_classes: list[type], **_: Any) -> None:
    if _FastClient not in base_classes:
        base_classes.insert(0, _FastClient)


def install(events: Any) -> None:
    """DynamoDB clients created from now on by the session owning ``events`` use the fast path."""
    events.register(_EVENT, _add_mixin, unique_id=HANDLER_ID)


def uninstall(events: Any) -> None:
    events.unregister(_EVENT, unique_id=HANDLER_ID)
