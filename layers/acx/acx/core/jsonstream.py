"""Split one JSON object into its members as bytes arrive, and one array member into its elements.

Ingest reads a presigned upload of up to 100 MiB from S3. Parsing it whole costs several times its size
in memory; this splitter holds only the element being cut out, so memory grows with what the caller
keeps, not with the raw document. It does not parse values: it finds where each one ends (strings
skipped, brackets counted) and hands the raw bytes to the strict parser
(:func:`acx.core.canonical.loads`), which refuses anything malformed inside a span. The splitter itself
checks what lies between spans: the object's braces, keys, colons and commas, and that nothing
follows the object.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from acx.core.canonical import CanonicalError, child_path, loads

_WS = re.compile(rb"[ \t\r\n]*")
# A complete string, a bracket, or a lone quote (a string cut by the end of the buffer).
_TOKEN = re.compile(rb'"[^"\\]*(?:\\[\s\S][^"\\]*)*"|[{}\[\]]|"')
_SCALAR_END = re.compile(rb"[,\]}\s]")
# Everything up to the next bracket or lone quote: bytes that are neither, and complete strings. A
# container is cut with one match per bracket instead of one per string (a record has ~26 strings
# and 4 brackets); the pattern cannot backtrack past a match (nothing follows the star).
_SKIP = re.compile(rb'(?:[^"{}\[\]]+|"[^"\\]*(?:\\[\s\S][^"\\]*)*")*')


class StreamError(ValueError):
    """Malformed structure between values; ``path`` names where (``$``, ``$.records[3]``...)."""

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(f"{path}: {message}")
        self.message = message
        self.path = path


class ValueTooLarge(StreamError):
    """One member or element is larger than the caller allows (checked before it is held whole)."""

    def __init__(self, limit: int, path: str) -> None:
        super().__init__(f"value larger than {limit} bytes", path)
        self.limit = limit


@dataclass(frozen=True)
class Part:
    """A member with its raw value; or, for the streamed array, first a start marker (``streamed``,
    ``index`` None, no bytes) then each element (``index`` 0, 1, ...)."""

    key: str
    index: int | None
    raw: bytes
    streamed: bool = False


class _Buffer:
    """Bytes read so far but not consumed; refilled from the chunk iterator."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self.data = bytearray()
        self.pos = 0
        self.eof = False

    def more(self) -> bool:
        """Append the next non-empty chunk (dropping what was consumed); False at the end."""
        for chunk in self._chunks:
            if chunk:
                del self.data[: self.pos]  # O(1) in CPython: a bytearray drops its head in place
                self.data += chunk
                self.pos = 0
                return True
        self.eof = True
        return False

    def skip_ws(self) -> None:
        while True:
            end = _WS.match(self.data, self.pos).end()  # type: ignore[union-attr]
            self.pos = end
            if end < len(self.data) or not self.more():
                return

    def peek(self) -> int | None:
        """The next non-whitespace byte, or None at the end of input."""
        self.skip_ws()
        return self.data[self.pos] if self.pos < len(self.data) else None

    def value(self, limit: int, path: str) -> bytes:
        """Cut out the raw bytes of the value starting here (after whitespace)."""
        first = self.peek()
        if first is None:
            raise StreamError("unexpected end of input: a value is missing", path)
        start = self.pos
        if first in b"{[":
            return self._container(start, limit, path)
        if first == ord('"'):
            return self._string(start, limit, path)
        while True:  # a number, true, false or null: ends at a delimiter
            match = _SCALAR_END.search(self.data, start)
            if match is not None or self.eof:
                end = match.start() if match is not None else len(self.data)
                self.pos = end
                return bytes(self.data[start:end])
            if len(self.data) - start > limit:
                raise ValueTooLarge(limit, path)
            start_offset = start - self.pos
            self.more()
            start = self.pos + start_offset

    def _string(self, start: int, limit: int, path: str) -> bytes:
        while True:
            token = _TOKEN.match(self.data, start)
            if token is not None and token.end() - token.start() > 1:
                self.pos = token.end()
                return bytes(self.data[start : self.pos])
            if len(self.data) - start > limit:
                raise ValueTooLarge(limit, path)
            offset = start - self.pos
            if not self.more():
                raise StreamError("unexpected end of input inside a string", path)
            start = self.pos + offset

    def _container(self, start: int, limit: int, path: str) -> bytes:
        depth = 0
        scan = start
        skip = _SKIP.match
        while True:
            data = self.data
            size = len(data)
            while True:
                scan = skip(data, scan).end()  # type: ignore[union-attr]
                if scan >= size:
                    break
                char = data[scan]
                if char == 34:  # '"': a string cut by the end of the buffer: read on, rescan it
                    break
                scan += 1
                if char == 123 or char == 91:  # '{' '['
                    depth += 1
                    continue
                depth -= 1  # '}' or ']'
                if depth == 0:
                    self.pos = scan
                    if scan - start > limit:
                        raise ValueTooLarge(limit, path)
                    return bytes(data[start:scan])
            if scan - start > limit or size - start > limit:
                raise ValueTooLarge(limit, path)
            offsets = (start - self.pos, scan - self.pos)
            if not self.more():
                raise StreamError("unexpected end of input: an object or array is not closed", path)
            start, scan = self.pos + offsets[0], self.pos + offsets[1]

    def expect(self, char: bytes, what: str, path: str) -> None:
        if self.peek() != char[0]:
            raise StreamError(f"invalid JSON: expected {what}", path)
        self.pos += 1


def split_object(
    chunks: Iterable[bytes],
    stream_key: str,
    *,
    max_member_bytes: int,
    max_element_bytes: int,
) -> Iterator[Part]:
    """Yield the members of the JSON object in ``chunks`` in document order; when the member named
    ``stream_key`` holds an array, yield its elements one by one instead (``index`` 0, 1, ...).

    Keys are decoded strictly (a key that is not a valid JSON string raises); duplicate keys are for
    the caller to refuse, since it sees every key. Raises :class:`StreamError` on malformed structure
    and :class:`ValueTooLarge` before holding a value over its limit.
    """
    buf = _Buffer(chunks)
    buf.expect(b"{", "a JSON object", "$")
    if buf.peek() == ord("}"):
        buf.pos += 1
    else:
        while True:
            if buf.peek() != ord('"'):
                raise StreamError("invalid JSON: expected a member name (a string)", "$")
            raw_key = buf.value(1024, "$")
            try:
                key = loads(raw_key)
            except CanonicalError as exc:
                raise StreamError(f"invalid member name: {exc.message}", "$") from None
            path = child_path("$", key[:64])
            buf.expect(b":", "':' after a member name", path)
            if key == stream_key and buf.peek() == ord("["):
                yield Part(key, None, b"", streamed=True)
                yield from _elements(buf, key, path, max_element_bytes)
            else:
                yield Part(key, None, buf.value(max_member_bytes, path))
            if buf.peek() == ord(","):
                buf.pos += 1
                continue
            buf.expect(b"}", "',' or '}' after a member", path)
            break
    if buf.peek() is not None:
        raise StreamError("invalid JSON: data after the end of the object", "$")


def _elements(buf: _Buffer, key: str, path: str, limit: int) -> Iterator[Part]:
    buf.pos += 1  # '['
    if buf.peek() == ord("]"):
        buf.pos += 1
        return
    index = 0
    while True:
        where = f"{path}[{index}]"
        yield Part(key, index, buf.value(limit, where), streamed=True)
        nxt = buf.peek()
        if nxt == ord(","):
            buf.pos += 1
            index += 1
            continue
        buf.expect(b"]", "',' or ']' after an array element", where)
        return
