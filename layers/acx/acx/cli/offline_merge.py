"""`acx merge FILE [FILE ...]`: merge the memory records of bundle files, offline.

Whole-process time is measured on 50k-record bundles, so this module imports nothing heavy at module
level, parses with orjson when a cheap check proves the strict parser would agree (falling back to
:func:`acx.core.canonical.loads` otherwise), and writes the output with orjson. A big bundle is
checked on two cores (:func:`load_and_check`), the second process then folds the linked records
while the first normalises the others, and the process ends with ``os._exit`` once the output is
flushed, instead of freeing the merge's objects one by one.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, NoReturn

EXIT_INVALID = 2
_MAX_SAFE = 2**53 - 1
_WS_BEFORE_COLON = re.compile(rb'"[ \t\r\n]+:')  # re is loaded by argparse anyway
_WS_COLON = re.compile(rb":(?<=[ \t\r\n]:)")


def register(subparsers: Any) -> None:
    """Add the ``merge`` command to the ``acx`` parser."""
    parser = subparsers.add_parser(
        "merge",
        help="merge memory bundles (JSON arrays of records) into one, deduplicated, sorted by id",
        description=(
            "Merge the records of every FILE (each a JSON array of memory records): dedupe by id, then by "
            "content slot, never across tiers or codebases. Prints the merged records as a JSON array "
            "sorted by id. Exit 2 on an invalid record or a tier/codebase conflict."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="bundle file (JSON array of records)")
    parser.set_defaults(func=run)


def _fast_parse_agrees(data: bytes, value: Any) -> bool:
    """True when orjson's parse of a bundle provably equals the strict parser's.

    orjson differs from :func:`acx.core.canonical.loads` in two ways only: it keeps the last of
    duplicate keys, and it reads integer literals beyond 64 bits as floats. Both are ruled out here:
    every key token in the text ends with ``":`` (a quote inside a string is always escaped, so
    ``\\":`` is the only lookalike, and whitespace before a colon is detected), so the text's key
    count must equal the parsed key count; and a number the strict parser would refuse shows up as an
    integer or float beyond 2^53. Anything unusual (nested objects, lookalikes) returns False: the
    caller then takes the strict path, which is always right, only slower.
    """
    if type(value) is not list or (b"\\" in data and b'\\":' in data):  # memchr first: 10x cheaper
        return False
    keys = 0
    for item in value:  # one pass: fetching 50k scattered records from memory is the cost
        if type(item) is not dict:
            return False
        keys += len(item)
        # validate_record bounds integers; a float this large may be a huge integer literal: go strict.
        xp, similarity = item.get("xpAwarded"), item.get("similarity")
        if (type(xp) is float and not -_MAX_SAFE <= xp <= _MAX_SAFE) or (
            type(similarity) is float and not -_MAX_SAFE <= similarity <= _MAX_SAFE
        ):
            return False
    if keys != data.count(b'":'):
        return False
    # Whitespace right before any colon is a cheap superset (the regex skips from colon to colon).
    return _WS_COLON.search(data) is None or _WS_BEFORE_COLON.search(data) is None


def load_bundle(data: bytes) -> Any:
    """Parse a bundle exactly as :func:`acx.core.canonical.loads` would, fast when it can prove it."""
    import orjson

    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = None
    else:
        if _fast_parse_agrees(data, value):
            return value
    from acx.core.canonical import loads

    return loads(data)


# Below this size a second process costs more than it saves (a fork, a second parse).
_PARALLEL_MIN_BYTES = 4_000_000
# The parent's share of the records: the child also proves the fast parse (a scan of the text).
_PARENT_SHARE = 0.65
# The child's share of the groups to fold: the parent first normalises every lone record.
_PARTNER_FOLDS = 0.85


def _check(records: list[Any], start: int, stop: int) -> tuple[int, list[str]]:
    """(index of the first invalid record in ``records[start:stop]`` or -1, and when all are valid
    their slot keys, which the merge needs next)."""
    from acx.core.merge import slot_keys
    from acx.core.records import RecordError, validate_record

    index = start
    try:
        for index in range(start, stop):
            validate_record(records[index])
    except RecordError:
        return index, []
    return -1, slot_keys(records[start:stop])


def _send(pipe: BinaryIO, message: Any) -> None:
    import orjson

    payload = orjson.dumps(message)
    pipe.write(len(payload).to_bytes(8, "big") + payload)
    pipe.flush()


def _receive(pipe: BinaryIO) -> Any:
    """The next message, or None at the end of the pipe (the other side is gone)."""
    import orjson

    head = pipe.read(8)
    if len(head) < 8:
        return None
    size = int.from_bytes(head, "big")
    payload = pipe.read(size)
    return orjson.loads(payload) if len(payload) == size else None


class _Partner:
    """A forked child working on the same bundle bytes: it parses them itself (its own heap, so no
    page is shared with the parent and copied on write), sends unasked its check of the records after
    the parent's share (:func:`_partner`), then folds the groups of records the parent asks for, one
    length-prefixed orjson message each way, until the parent closes the request pipe. Any failure
    shows as a None reply: the parent then does that work itself."""

    def __init__(self, data: bytes) -> None:
        import os

        request_in, request_out = os.pipe()
        reply_in, reply_out = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child never returns
            code = 1
            try:
                os.close(request_out)
                os.close(reply_in)
                for fd in (0, 1, 2):  # a reader of the parent's output must not wait for this child
                    os.close(fd)
                with open(request_in, "rb") as requests, open(reply_out, "wb") as replies:
                    _partner(data, requests, replies)
                code = 0
            finally:
                os._exit(code)
        os.close(request_in)
        os.close(reply_out)
        self.requests: BinaryIO = open(request_out, "wb")
        self.replies: BinaryIO = open(reply_in, "rb")

    def ask(self, message: Any) -> bool:
        try:
            _send(self.requests, message)
        except OSError:  # the child is gone
            return False
        return True

    def close(self) -> None:
        """Close the pipes (the child then exits) and reap the child."""
        import os

        for pipe in (self.requests, self.replies):
            try:
                pipe.close()
            except OSError:
                pass
        os.waitpid(self.pid, 0)

    def folder(self, groups: list[list[int]]) -> tuple[int, Callable[[], list[tuple[Any, str]] | None]]:
        """:data:`acx.core.merge.Folder`: ask the child to fold most of ``groups`` (the parent folds
        the rest after the lone records, and then waits about as long as the child takes)."""
        taken = int(len(groups) * _PARTNER_FOLDS)
        asked = self.ask(groups[:taken])

        def folded() -> list[tuple[Any, str]] | None:
            reply = _receive(self.replies) if asked else None
            return None if reply is None else [(out, slot) for out, slot in reply]

        return taken, folded


def _partner(data: bytes, requests: BinaryIO, replies: BinaryIO) -> NoReturn:
    """The child's work: ``[agrees, first invalid index or -1, slot keys]`` for the records after the
    parent's share, then :func:`acx.core.merge.fold_groups` for each request (None on a conflict).
    Ends the process with os._exit while its parse is still referenced: freeing 50k records one by
    one would keep a core busy for a second after the parent is done."""
    import os

    import orjson

    from acx.core.merge import MergeConflict, fold_groups

    value = orjson.loads(data)
    agrees = _fast_parse_agrees(data, value)
    first, slots = _check(value, int(len(value) * _PARENT_SHARE), len(value)) if agrees else (-1, [])
    _send(replies, [agrees, first, slots])
    while agrees and first < 0 and (groups := _receive(requests)) is not None:
        try:
            folded: Any = fold_groups(value, groups)
        except MergeConflict:
            folded = None  # the parent folds them again and raises the same refusal
        _send(replies, folded)
    os._exit(0)


def load_and_check(data: bytes) -> tuple[Any, int, list[str], _Partner | None]:
    """``(load_bundle(data), first invalid record index or -1, slot keys, partner)``: the keys only
    when the value is a list of valid records, the partner (to close) only when a second process
    holds the same records and can fold them. Raises CanonicalError as :func:`load_bundle` does.

    A big bundle is split over two processes: the child parses it too and checks the records after
    the parent's share, while the parent checks the ones before. The answer is the serial one: the
    fast parse is used only when the child proved it exact, and the first invalid record of the
    parent's share comes before any of the child's.
    """
    import os

    import orjson

    if len(data) >= _PARALLEL_MIN_BYTES and hasattr(os, "fork"):
        partner = _Partner(data)
        kept = False
        try:
            try:
                value = orjson.loads(data)
            except orjson.JSONDecodeError:
                value = None
            mine: tuple[int, list[str]] = (-1, [])
            if type(value) is list:
                mine = _check(value, 0, int(len(value) * _PARENT_SHARE))
            theirs = _receive(partner.replies)
            if theirs is not None and theirs[0]:
                first = mine[0] if mine[0] >= 0 else theirs[1]
                kept = first < 0
                return value, first, (mine[1] + theirs[2] if kept else []), (partner if kept else None)
        finally:
            if not kept:
                partner.close()
    value = load_bundle(data)  # serial: no fork, a failed child, or a parse the child could not prove
    if type(value) is not list:
        return value, -1, [], None
    return value, *_check(value, 0, len(value)), None


def write_array(out: BinaryIO, items: list[Any], chunk: int = 2000) -> None:
    """Write ``orjson.dumps(items) + b"\\n"`` a slice of items at a time: a 70 MB result built whole
    is faulted in page by page, while slices reuse the same memory (~0.07 s less on 50k records)."""
    import orjson

    out.write(b"[")
    for start in range(0, len(items), chunk):
        if start:
            out.write(b",")
        out.write(memoryview(orjson.dumps(items[start : start + chunk]))[1:-1])
    out.write(b"]\n")


def _finish(args: argparse.Namespace, code: int) -> int:
    """End the process right away when it is the ``acx`` command: the heap then holds ~1M objects
    of the merge, and freeing them one by one only delays the exit (~0.15 s for 50k records).
    Called in-process (tests, ``main([...])``) it just returns the code."""
    if getattr(args, "process_exit", False):
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def run(args: argparse.Namespace) -> int:
    """Merge the given files and print the result; exit 2 naming file and JSON path on bad input."""
    import gc

    gc.disable()  # a short-lived process allocating ~1M objects: collection cycles only cost time
    partners: list[_Partner] = []
    try:
        return _merge_files(args, partners)
    finally:
        for partner in partners:
            partner.close()


def _merge_files(args: argparse.Namespace, partners: list[_Partner]) -> int:
    from acx.core.canonical import CanonicalError
    from acx.core.merge import MergeConflict, merge_records
    from acx.core.records import RecordError, validate_record

    records: list[dict[str, Any]] = []
    slots: list[str] = []
    for name in args.files:
        try:
            with open(name, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            print(f"acx merge: {name}: cannot read ({exc.strerror})", file=sys.stderr)
            return _finish(args, EXIT_INVALID)
        try:
            value, first, keys, partner = load_and_check(data)
        except CanonicalError as exc:
            print(f"acx merge: {name}: {exc.path}: {exc.message}", file=sys.stderr)
            return _finish(args, EXIT_INVALID)
        if partner is not None:  # it holds this bundle's records: of use with one file only
            if len(args.files) == 1:
                partners.append(partner)  # run() closes it
            else:
                partner.close()
        del data
        if type(value) is not list:
            print(f"acx merge: {name}: $: a bundle must be a JSON array of records", file=sys.stderr)
            return _finish(args, EXIT_INVALID)
        if first >= 0:
            try:  # again, with the record's index in the path (kept off the hot loop)
                validate_record(value[first], f"$[{first}]")
            except RecordError as exc:
                print(f"acx merge: {name}: {exc.path}: {exc.message}", file=sys.stderr)
                return _finish(args, EXIT_INVALID)
        records.extend(value)
        slots.extend(keys)
    folder = partners[0].folder if partners else None
    try:
        merged = merge_records(records, slots, folder)
    except MergeConflict as exc:
        print(f"acx merge: {exc}", file=sys.stderr)
        return _finish(args, EXIT_INVALID)
    out = sys.stdout.buffer
    write_array(out, merged)
    out.flush()
    return _finish(args, 0)
