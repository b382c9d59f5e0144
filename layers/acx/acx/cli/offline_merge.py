"""`acx merge FILE [FILE ...]`: merge the memory records of bundle files, offline.

Whole-process time is measured on 50k-record bundles, so this module imports nothing heavy at module
level, parses with orjson when a cheap check proves the strict parser would agree (falling back to
:func:`acx.core.canonical.loads` otherwise), and writes the output with orjson. A big bundle is
checked on two cores (:func:`load_and_check`), and the process ends with ``os._exit`` once the
output is flushed, instead of freeing the merge's objects one by one.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

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


def _in_child(work: Callable[[], Any]) -> Callable[[], Any] | None:
    """Run ``work()`` in a forked child; returns a function that waits for it and gives its result
    (anything orjson can encode), or None when the child failed. None when there is no fork (Windows):
    the caller then does the work itself."""
    import os

    import orjson

    if not hasattr(os, "fork"):
        return None
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns: its exit status says whether the pipe holds a result
        code = 1
        try:
            os.close(read_fd)
            payload = orjson.dumps(work())
            with open(write_fd, "wb") as pipe:
                pipe.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)

    def join() -> Any:
        with open(read_fd, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(pid, 0)
        return orjson.loads(payload) if os.waitstatus_to_exitcode(status) == 0 else None

    return join


def _child_part(data: bytes) -> list[Any]:
    """In the child: its own parse of the same bytes (so no page of the parent's heap is shared and
    copied), the proof that the fast parse is exact, then the parent's :func:`_check` of the records
    after the parent's share. Returns ``[agrees, first invalid index or -1, slot keys]``."""
    import orjson

    value = orjson.loads(data)
    if not _fast_parse_agrees(data, value):
        return [False, -1, []]
    return [True, *_check(value, int(len(value) * _PARENT_SHARE), len(value))]


def load_and_check(data: bytes) -> tuple[Any, int, list[str]]:
    """``(load_bundle(data), first invalid record index or -1, slot keys)``, the keys only when the
    value is a list of valid records; raises CanonicalError as :func:`load_bundle` does.

    A big bundle is split over two processes: the child parses it too and checks the records after
    the parent's share, while the parent checks the ones before. The answer is the serial one: the
    fast parse is used only when the child proved it exact, and the first invalid record of the
    parent's share comes before any of the child's.
    """
    import orjson

    join = _in_child(lambda: _child_part(data)) if len(data) >= _PARALLEL_MIN_BYTES else None
    if join is not None:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = None
        mine: tuple[int, list[str]] = (-1, [])
        if type(value) is list:
            mine = _check(value, 0, int(len(value) * _PARENT_SHARE))
        theirs = join()
        if theirs is not None and theirs[0]:
            first = mine[0] if mine[0] >= 0 else theirs[1]
            return value, first, (mine[1] + theirs[2] if first < 0 else [])
    value = load_bundle(data)  # serial: no fork, a failed child, or a parse the child could not prove
    if type(value) is not list:
        return value, -1, []
    return value, *_check(value, 0, len(value))


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

    from acx.core.canonical import CanonicalError
    from acx.core.merge import MergeConflict, merge_records
    from acx.core.records import RecordError, validate_record

    gc.disable()  # a short-lived process allocating ~1M objects: collection cycles only cost time
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
            value, first, keys = load_and_check(data)
        except CanonicalError as exc:
            print(f"acx merge: {name}: {exc.path}: {exc.message}", file=sys.stderr)
            return _finish(args, EXIT_INVALID)
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
    try:
        merged = merge_records(records, slots)
    except MergeConflict as exc:
        print(f"acx merge: {exc}", file=sys.stderr)
        return _finish(args, EXIT_INVALID)
    out = sys.stdout.buffer
    write_array(out, merged)
    out.flush()
    return _finish(args, 0)
