"""Strict JSON parsing and RFC 8785 canonical JSON.

Every hash in the service (content hashes, log entries, object ids, manifests) is taken over the bytes
produced here, so two implementations that agree on RFC 8785 agree on every hash.

Parsing is strict where plain ``json.loads`` is lenient: duplicate object keys, lone surrogates,
NaN/Infinity and numbers that overflow to infinity are refused with a :class:`CanonicalError` naming
the JSON path, because each of them makes "the same document" hash differently in different parsers.

Integer literals outside +/-(2^53-1) (RFC 8785 §3.2.2.3: JSON numbers are IEEE-754 doubles):

- by default (memory records, bundles, cartridge payloads) they are refused, naming the JSON path:
  ``9007199254740993`` would silently become ``9007199254740992``, so a record would not hash as its
  author wrote it;
- with ``ieee_numbers=True`` (``acx canon``) they are read as the nearest double, as RFC 8785 and
  ECMAScript ``JSON.parse`` do: ``295147905179352830000`` (Appendix B) stays itself, ``1e16`` is
  written ``10000000000000000`` and reads back, so ``canon(canon(x)) == canon(x)``.

One module: the strict parser, the locator that names the JSON path of a refusal
and the canonical writer (with its fast path) must agree on every number and string rule.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

import orjson
import rfc8785

MAX_SAFE_INTEGER = 2**53 - 1


class CanonicalError(ValueError):
    """A document that cannot be parsed or canonicalized; ``path`` is a JSON path like ``$.records[2].id``."""

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(f"{path}: {message}")
        self.message = message
        self.path = path


class _Refused(Exception):
    def __init__(self, message: str, needle: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.needle = needle


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused("duplicate object key", needle=key)
            seen.add(key)
    return obj


def _constant(name: str) -> Any:
    raise _Refused(f"non-finite number {name} is not JSON")


_MAX_SAFE_DIGITS = len(str(MAX_SAFE_INTEGER))


def _int(text: str) -> int:
    # Longer literals are out of range anyway; int() of a huge one is slow and limited to 4300 digits.
    if len(text.lstrip("-")) <= _MAX_SAFE_DIGITS:
        value = int(text)
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
    raise _Refused("integer outside +/-(2^53-1) cannot be represented exactly")


def _int_ieee(text: str) -> int | float:
    try:
        return _int(text)
    except _Refused:
        return _float(text)  # correctly rounded to the nearest double, as RFC 8785 reads it


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused("number overflows to infinity")
    return value


def loads(data: bytes | bytearray | memoryview | str, *, ieee_numbers: bool = False) -> Any:
    """Parse a JSON document strictly; raise :class:`CanonicalError` naming the JSON path.

    ``ieee_numbers``: read integers beyond +/-(2^53-1) as IEEE doubles instead of refusing them.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CanonicalError(f"invalid UTF-8 at byte offset {exc.start}") from None
    else:
        text = data
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_int=_int_ieee if ieee_numbers else _int,
            parse_float=_float,
        )
    except _Refused as exc:
        raise CanonicalError(exc.message, _locate(text, exc, ieee_numbers)) from None
    except json.JSONDecodeError as exc:
        raise CanonicalError(
            f"invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})", path_at(text, exc.pos)
        ) from None
    except RecursionError:
        raise CanonicalError("nesting too deep") from None
    escaped = "\\u" in text and _has_lone_surrogate_escape(text)
    if escaped or (isinstance(data, str) and _has_surrogate_char(text)):
        path = find_lone_surrogate(value)
        if path is not None:
            raise CanonicalError("lone surrogate in string", path)
    return value


def _has_surrogate_char(text: str) -> bool:
    """A ``str`` caller can hand over surrogate code points as characters (bytes cannot: UTF-8
    decoding refuses them); JSON text must be Unicode scalar values, so they are refused too."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _has_lone_surrogate_escape(text: str) -> bool:
    lowered = text.lower()
    return any(f"\\u{p}" in lowered for p in ("d8", "d9", "da", "db", "dc", "dd", "de", "df"))


def find_lone_surrogate(value: Any, path: str = "$") -> str | None:
    """Return the JSON path of the first string (key or value) holding a lone surrogate, else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            sub = child_path(path, key)
            if find_lone_surrogate(key) is not None:
                return sub
            found = find_lone_surrogate(item, sub)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = find_lone_surrogate(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def child_path(path: str, key: str) -> str:
    """JSON path of ``key`` under ``path``: dotted for identifiers, bracketed and quoted otherwise."""
    if key.isidentifier() and key.isascii():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _locate(text: str, exc: _Refused, ieee_numbers: bool = False) -> str:
    # The stdlib hooks do not know where they are; re-scan to name the path. Only on the error path.
    scanner = _Scanner(text)
    scanner.parse_int = _int_ieee if ieee_numbers else _int
    return scanner.find(exc)


def path_at(text: str, offset: int) -> str:
    """JSON path of the value being parsed at character ``offset`` (best effort, for error messages)."""
    scanner = _Scanner(text)
    scanner.stop_at = offset
    try:
        scanner.scan()
    except _Stop:
        pass
    except Exception:  # noqa: S110 - a malformed document: report the deepest path reached
        pass
    return scanner.current_path()


class _Stop(Exception):
    pass


class _Scanner:
    """A tiny JSON tokenizer that tracks the path, used only to name where an error is."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.stack: list[list[Any]] = []  # [kind, key_or_index, keys_seen]
        self.stop_at = -1
        self.target: _Refused | None = None
        self.found: str | None = None
        self.parse_int: Callable[[str], Any] = _int

    def current_path(self) -> str:
        path = "$"
        for kind, key, _ in self.stack:
            if key is None:
                continue
            path = child_path(path, key) if kind == "obj" else f"{path}[{key}]"
        return path

    def find(self, exc: _Refused) -> str:
        self.target = exc
        try:
            self.scan()
        except _Stop:
            return self.found or "$"
        except Exception:  # noqa: S110
            pass
        return self.found or "$"

    def _ws(self) -> None:
        t, n = self.text, len(self.text)
        while self.pos < n and t[self.pos] in " \t\r\n":
            self.pos += 1
        if 0 <= self.stop_at <= self.pos:
            raise _Stop

    def scan(self) -> None:
        self._value()

    def _value(self) -> None:
        self._ws()
        c = self.text[self.pos]
        if c == "{":
            self._object()
        elif c == "[":
            self._array()
        elif c == '"':
            self._string()
        else:
            start = self.pos
            while self.pos < len(self.text) and self.text[self.pos] not in ",]} \t\r\n":
                self.pos += 1
            self._check_scalar(self.text[start : self.pos])

    def _check_scalar(self, token: str) -> None:
        if self.target is None:
            return
        if token in ("NaN", "Infinity", "-Infinity"):
            self._hit()
        try:
            if token.lstrip("-").isdigit():
                self.parse_int(token)
            elif token not in ("true", "false", "null"):
                _float(token)
        except _Refused:
            self._hit()
        except ValueError:
            pass

    def _hit(self) -> None:
        self.found = self.current_path()
        raise _Stop

    def _string(self) -> str:
        start = self.pos
        self.pos += 1
        t = self.text
        while t[self.pos] != '"':
            self.pos += 2 if t[self.pos] == "\\" else 1
        self.pos += 1
        return json.loads(t[start : self.pos])  # type: ignore[no-any-return]

    def _object(self) -> None:
        self.pos += 1
        frame: list[Any] = ["obj", None, set()]
        self.stack.append(frame)
        self._ws()
        if self.text[self.pos] == "}":
            self.pos += 1
            self.stack.pop()
            return
        while True:
            self._ws()
            key = self._string()
            frame[1] = key
            if key in frame[2] and self.target is not None and self.target.needle == key:
                self._hit()
            frame[2].add(key)
            self._ws()
            self.pos += 1  # ':'
            self._value()
            self._ws()
            c = self.text[self.pos]
            self.pos += 1
            if c == "}":
                break
        self.stack.pop()

    def _array(self) -> None:
        self.pos += 1
        frame: list[Any] = ["arr", None, None]
        self.stack.append(frame)
        self._ws()
        if self.text[self.pos] == "]":
            self.pos += 1
            self.stack.pop()
            return
        index = 0
        while True:
            frame[1] = index
            self._value()
            self._ws()
            c = self.text[self.pos]
            self.pos += 1
            if c == "]":
                break
            index += 1
        self.stack.pop()


def dumps(value: Any) -> bytes:
    """RFC 8785 canonical bytes of ``value``."""
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalError(str(exc)) from None


def sha256_hex(value: Any) -> str:
    """Hex sha256 of the canonical bytes of ``value`` (the service's content hash).

    Through ``dumps_record``: byte-identical to ``rfc8785.dumps`` (property-tested), ~6x faster on
    record-shaped objects, and it falls back to ``rfc8785`` for anything it does not handle.
    """
    return hashlib.sha256(dumps_record(value)).hexdigest()


# --- Fast path --------------------------------------------------------------------------------------
# orjson with sorted keys writes the same bytes as RFC 8785 for a well-understood subset: ASCII keys
# (UTF-8 byte order = UTF-16 code unit order), integers within +/-(2^53-1), integral floats written as
# integers, non-integral floats in [1e-5, 1e15) (both use shortest round-trip digits in plain notation
# there), and strings (identical escaping: short forms for \b\t\n\f\r, lowercase \u00xx for the other
# C0 controls, everything else literal, U+2028/U+2029 included). Anything else goes to rfc8785.

_SORT = orjson.OPT_SORT_KEYS


class _Unsafe(Exception):
    pass


def _fast_float(value: float) -> float | int:
    if value.is_integer():
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return int(value)  # also turns -0.0 into 0, as RFC 8785 writes it
        raise _Unsafe
    if 1e-5 <= abs(value) < 1e15:
        return value
    raise _Unsafe


_PLAIN = frozenset({str, bool, type(None)})


def _fast_value(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
        raise _Unsafe
    if kind is float:
        return _fast_float(value)
    if kind is dict:
        try:
            if not "".join(value).isascii():
                raise _Unsafe
        except TypeError:  # a non-str key
            raise _Unsafe from None
        out: dict[str, Any] | None = None
        for key, item in value.items():
            if type(item) in _PLAIN:
                continue
            new = _fast_value(item)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if kind is list:
        items: list[Any] | None = None
        for index, item in enumerate(value):
            if type(item) in _PLAIN:
                continue
            new = _fast_value(item)
            if new is not item:
                if items is None:
                    items = list(value)
                items[index] = new
        return value if items is None else items
    raise _Unsafe


def dumps_record(value: Any) -> bytes:
    """RFC 8785 bytes of ``value``, byte-identical to :func:`dumps` but several times faster on records.

    Records are hashed and stored one by one, so this is on the hot path of ingest and merge.
    """
    try:
        return orjson.dumps(_fast_value(value), option=_SORT)
    except (_Unsafe, TypeError, orjson.JSONEncodeError, RecursionError):
        return dumps(value)
