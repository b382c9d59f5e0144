"""`acx merge FILE [FILE ...]`: merge the memory records of bundle files, offline.

Whole-process time is measured on 50k-record bundles, so this module imports nothing heavy at module
level, parses with orjson when a cheap check proves the strict parser would agree (falling back to
:func:`acx.core.canonical.loads` otherwise), and writes the output with orjson. One big bundle is
merged on two cores (:func:`_merge_halves`): the text is cut between two records, each process
parses, checks and hashes its half, the parent links the records of both from their ids and slot
keys, and then the child writes its lone records in the output's order while the parent folds the
linked ones. The process ends with ``os._exit`` once the output is flushed, instead of freeing the
merge's objects one by one.

One module: the cut, the child's protocol and the serial fallback are one protocol
whose two halves must agree byte for byte with the serial path.
"""

from __future__ import annotations

import argparse
import mmap
import re
import sys
from typing import Any, BinaryIO, NoReturn

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

# canonical.MAX_SAFE_INTEGER, written again: importing canonical here costs every `acx` command
# 30-40 ms of CPU at start-up (measured), and this module loads for all of them.
_MAX_SAFE = 2**53 - 1
Text = bytes | bytearray | mmap.mmap  # a bundle's bytes; a big one is mapped, not read (see _map)

EXIT_INVALID = 2
_WS_BEFORE_COLON = re.compile(rb'"[ \t\r\n]+:')  # re is loaded by argparse anyway
_WS_COLON = re.compile(rb":(?<=[ \t\r\n]:)")


def register(subparsers: Any) -> None:
    """Add the ``merge`` command to the ``acx`` parser."""
    parser = subparsers.add_parser(
        "merge",
        help="merge records arrays, bundles or package directories into one array, deduplicated",
        description=(
            "Merge the records of every FILE (each a records array, a bundle or a package directory): "
            "dedupe by id, then by content slot, never across tiers or codebases. Prints the merged "
            "records as a JSON array sorted by id. Exit 2 on an invalid record or a tier/codebase conflict."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="bundle file (JSON array of records)")
    parser.set_defaults(func=run)


def _fast_parse_agrees(data: Text, value: Any, start: int = 0, stop: int | None = None) -> bool:
    """True when orjson's parse of ``data[start:stop]`` (a bundle, or a half of one cut between two
    records) provably equals the strict parser's.

    orjson differs from :func:`acx.core.canonical.loads` in two ways only: it keeps the last of
    duplicate keys, and it reads integer literals beyond 64 bits as floats. Both are ruled out here:
    every key token in the text ends with ``":`` (a quote inside a string is always escaped, so
    ``\\":`` is the only lookalike, and whitespace before a colon is detected), so the text's key
    count must equal the parsed key count; and a number the strict parser would refuse shows up as an
    integer or float beyond 2^53. Anything unusual (nested objects, lookalikes) returns False: the
    caller then takes the strict path, which is always right, only slower.
    """
    stop = len(data) if stop is None else stop
    if type(value) is not list or (
        data.find(b"\\", start, stop) >= 0 and data.find(b'\\":', start, stop) >= 0
    ):
        return False  # memchr first: 10x cheaper
    keys = 0
    for item in value:  # one pass: fetching 25k scattered records from memory is the cost
        if type(item) is not dict:
            return False
        keys += len(item)
        # validate_record bounds integers; a float this large may be a huge integer literal: go strict.
        xp, similarity = item.get("xpAwarded"), item.get("similarity")
        if (type(xp) is float and not -_MAX_SAFE <= xp <= _MAX_SAFE) or (
            type(similarity) is float and not -_MAX_SAFE <= similarity <= _MAX_SAFE
        ):
            return False
    if keys != _count(data, b'":', start, stop):
        return False
    # Whitespace right before any colon is a cheap superset (the regex skips from colon to colon).
    return _WS_COLON.search(data, start, stop) is None or _WS_BEFORE_COLON.search(data, start, stop) is None


def _count(data: Text, token: bytes, start: int, stop: int) -> int:
    """``data[start:stop].count(token)``; an mmap has no ``count``, so it is counted 64 KiB at a time
    (slices below malloc's mmap threshold reuse the same memory instead of faulting in new pages)."""
    if not isinstance(data, mmap.mmap):
        return data.count(token, start, stop)
    step, overlap = 1 << 16, len(token) - 1  # a token across two slices is counted in the first only
    return sum(data[at : min(at + step + overlap, stop)].count(token) for at in range(start, stop, step))


def load_bundle(data: bytes | bytearray) -> Any:
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


# Below this size a second process costs more than it saves (a fork, two pipes).
_PARALLEL_MIN_BYTES = 4_000_000
# Where the text is cut, as a share of its length (tests move it).
_CUT = 0.5
_RECORD_GAP = re.compile(rb"\}[ \t\r\n]*,")


def _cut(data: Text) -> int | None:
    """Index of the comma of the first ``},`` from :data:`_CUT` on: where the text is cut in two.

    A cut inside a string is harmless: the first half, closed with ``]``, then fails to parse and
    the merge goes serial. When both halves parse, the cut was between two elements of the top-level
    array: parsing is left to right, so the first half ends where the whole text is after a value at
    depth one, outside any string, and the second half starts where the whole text expects the next.
    """
    found = _RECORD_GAP.search(data, int(len(data) * _CUT))
    return None if found is None else found.end() - 1


def _check(records: list[Any], prefix: str = "$") -> tuple[tuple[int, str, str] | None, list[str]]:
    """``(first invalid record as (index, JSON path below it, message), [])`` or, when every record is
    valid, ``(None, their slot keys)``: the merge needs the keys next."""
    from acx.core.merge import slot_keys
    from acx.core.records import RecordError, validate_record

    index = 0
    try:
        for index in range(len(records)):
            validate_record(records[index])
    except RecordError:
        try:  # again, with the path (kept off the hot loop)
            validate_record(records[index], prefix)
        except RecordError as exc:
            return (index, exc.path[len(prefix) :], exc.message), []
    return None, slot_keys(records)


def _parse_half(data: mmap.mmap | bytearray, comma: int, first: bool) -> Any:
    """orjson's value of the records before (``first``) or after the ``,`` at ``comma``, or None when
    that half does not parse or may parse differently from the strict parser.

    The half is made a whole array in place, with ``]`` or ``[`` written over the comma for the
    parse (after the fork, in a private mapping: each process writes its own copy of that page), not
    by copying 35 MB.
    """
    import orjson

    start, stop = (0, comma + 1) if first else (comma, len(data))
    data[comma] = ord("]" if first else "[")
    try:
        value = orjson.loads(memoryview(data)[start:stop])
    except orjson.JSONDecodeError:
        return None
    finally:
        data[comma] = ord(",")
    return value if _fast_parse_agrees(data, value, start, stop) else None


def _send(pipe: BinaryIO, message: Any, raw: bytes = b"") -> None:
    """One message: orjson of ``message``, then ``raw`` bytes, each length-prefixed."""
    import orjson

    payload = orjson.dumps(message)
    pipe.write(len(payload).to_bytes(8, "big") + payload + len(raw).to_bytes(8, "big"))
    pipe.write(raw)
    pipe.flush()


def _receive(pipe: BinaryIO) -> tuple[Any, bytes] | None:
    """The next message and its raw bytes, or None at the end of the pipe (the other side is gone)."""
    import orjson

    parts = []
    for _ in range(2):
        head = pipe.read(8)
        size = int.from_bytes(head, "big") if len(head) == 8 else -1
        part = pipe.read(size) if size >= 0 else b""
        if len(part) != size:
            return None
        parts.append(part)
    return orjson.loads(parts[0]), parts[1]


class _Child:
    """A forked process merging the second half of the text (:func:`_second_half`), spoken to with
    :func:`_send`/:func:`_receive`. The child closes its standard streams at once (a reader of the
    parent's output must not wait for it) and ends with ``os._exit``; any failure on its side shows
    as a None from :meth:`receive`, and the parent then merges serially."""

    def __init__(self, data: mmap.mmap, comma: int) -> None:
        import os

        request_in, request_out = os.pipe()
        reply_in, reply_out = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child never returns
            try:
                os.close(request_out)
                os.close(reply_in)
                for fd in (0, 1, 2):
                    os.close(fd)
                with open(request_in, "rb") as requests, open(reply_out, "wb") as replies:
                    _second_half(data, comma, requests, replies)
            finally:
                os._exit(1)
        os.close(request_in)
        os.close(reply_out)
        self.requests: BinaryIO = open(request_out, "wb")
        self.replies: BinaryIO = open(reply_in, "rb")

    def send(self, message: Any) -> bool:
        try:
            _send(self.requests, message)
        except OSError:  # the child is gone
            return False
        return True

    def receive(self) -> tuple[Any, bytes] | None:
        return _receive(self.replies)

    def close(self) -> None:
        """Close the pipes (the child then exits) and reap the child."""
        import os

        for pipe in (self.requests, self.replies):
            try:
                pipe.close()
            except OSError:
                pass
        os.waitpid(self.pid, 0)


def _second_half(data: mmap.mmap, comma: int, requests: BinaryIO, replies: BinaryIO) -> NoReturn:
    """The child's side of :func:`_merge_halves`, on the records after the ``,`` at ``comma``:

    1. parse and check them; send ``[parsed, first invalid or None, ids, slot keys]``;
    2. normalise them all while the parent links (most are linked to no other record);
    3. receive ``[n, linked, runs, lent]``: the parent's record count (indices below are global:
       the child's records start at n), the child's records that the parent folds, the child's
       stretches of the output, each a list of items (an index: a lone record; a list of indices: a
       group to fold), and ``[index, record]`` of the parent's records in those groups; send the
       linked records;
    4. send ``[slot of every survivor, run byte lengths]`` and the runs' JSON (each without
       brackets) as raw bytes.

    It ends with ``os._exit`` while its records are still referenced: freeing 25k records one by one
    would keep a core busy after the parent is done."""
    import os

    import orjson

    from acx.core.merge import fold_groups, normalise

    value = _parse_half(data, comma, first=False)
    invalid, slots = _check(value) if value is not None else (None, [])
    ids = [record["id"] for record in value] if value is not None and invalid is None else []
    _send(replies, [value is not None, invalid, ids, slots])
    if value is not None and invalid is None:
        lone = normalise(value, slots)
        plan = _receive(requests)
        if plan is not None:
            n, linked, runs, lent = plan[0]
            _send(replies, [value[i] for i in linked])
            pool: list[Any] = [None] * n + value
            for i, record in lent:
                pool[i] = record
            groups = [item for run in runs for item in run if type(item) is list]
            folded = iter(fold_groups(pool, groups))
            survivors = [
                [lone[item - n] if type(item) is int else next(folded) for item in run] for run in runs
            ]
            pieces = [orjson.dumps([out for out, _ in run])[1:-1] for run in survivors]
            every = [slot for run in survivors for _, slot in run]
            _send(replies, [every, [len(piece) for piece in pieces]], b"".join(pieces))
    os._exit(0)


def _merge_halves(name: str, data: mmap.mmap, out: BinaryIO) -> tuple[int, str] | None:
    """The merge of one big bundle on two cores, byte for byte the serial one: ``(0, "")`` once the
    output is written to ``out``, ``(2, error message)`` for an invalid record or a refusal (nothing
    written), or None when the serial path must decide: a half that does not parse or may parse
    differently, a failed child, or a fold landing on another survivor's slot (rare: the serial
    merge folds again until no two survivors share a slot)."""
    comma = _cut(data)
    if comma is None:
        return None
    child = _Child(data, comma)
    try:
        result = _lead(name, data, comma, child)
        if result is None or result[0]:
            return result
        write_pieces(out, result[1])  # before reaping the child, which is still unmapping its heap
        out.flush()
        return 0, ""
    finally:
        child.close()


def _lead(name: str, data: mmap.mmap, comma: int, child: _Child) -> tuple[int, Any] | None:
    """The parent's side of :func:`_merge_halves` (the child's is :func:`_second_half`): check its
    half, link the records of both from their ids and slot keys, give the child its share of the
    output in the output's order (its lone records and about half the groups, with the members it
    lacks), and fold the other groups, asking the child for the members it holds."""
    import orjson

    from acx.core.merge import MergeConflict, fold_groups, link, normalise, utf16_key

    mine = _parse_half(data, comma, first=True)
    invalid, slots = _check(mine) if mine is not None else (None, [])
    lone = normalise(mine, slots) if mine is not None and invalid is None else []  # while the child works
    reply = child.receive()
    if mine is None or reply is None or not reply[0][0]:
        return None
    _, their_invalid, their_ids, their_slots = reply[0]
    n = len(mine)
    if invalid is not None or their_invalid is not None:
        index, path, message = invalid if invalid is not None else their_invalid
        return 2, f"{name}: $[{index + (0 if invalid is not None else n)}]{path}: {message}"
    ids = [record["id"] for record in mine] + their_ids
    slots += their_slots
    try:
        groups = link(ids, slots)
    except MergeConflict as exc:
        return 2, str(exc)
    grouped = {i for group in groups for i in group}
    # The output's order (by id, UTF-16 order as the serial sort): a lone record is its index, a group
    # -1 - its number, sorted by the smallest id in it (the survivor's id).
    key: Any = ids.__getitem__ if "".join(ids).isascii() else (lambda i: utf16_key(ids[i]))
    order = [(key(i), i) for i in range(len(ids)) if i not in grouped]
    order += [(min(map(key, group)), -1 - g) for g, group in enumerate(groups)]
    order.sort()
    # A group wholly in one half is folded there; those across the cut go to whichever process has
    # fewer so far (members ascend: the first and last say where a group lies).
    folds = [sum(1 for group in groups if group[-1] < n), sum(1 for group in groups if group[0] >= n)]
    theirs_group: list[bool] = []
    for group in groups:
        theirs = group[0] >= n or (group[-1] >= n and folds[1] < folds[0])
        folds[theirs] += group[0] < n <= group[-1]
        theirs_group.append(theirs)
    layout: list[tuple[bool, list[int]]] = []  # stretches of the output: (the child's?, references)
    for _, ref in order:
        theirs = ref >= n if ref >= 0 else theirs_group[-1 - ref]
        if layout and layout[-1][0] is theirs:
            layout[-1][1].append(ref)
        else:
            layout.append((theirs, [ref]))
    runs = [[ref if ref >= 0 else groups[-1 - ref] for ref in refs] for theirs, refs in layout if theirs]
    here = [g for g, theirs in enumerate(theirs_group) if not theirs]
    their_linked = [i - n for g in here for i in groups[g] if i >= n]
    lent = [[i, mine[i]] for g, theirs in enumerate(theirs_group) if theirs for i in groups[g] if i < n]
    if not child.send([n, their_linked, runs, lent]):
        return None
    reply = child.receive()
    if reply is None or len(reply[0]) != len(their_linked):
        return None
    pool: list[Any] = mine + [None] * (len(ids) - n)
    for i, record in zip(their_linked, reply[0], strict=True):
        pool[n + i] = record
    folded = dict(zip(here, fold_groups(pool, [groups[g] for g in here]), strict=True))
    own = iter(  # the parent's stretches of the output, made while the child makes its own
        [
            orjson.dumps([lone[ref][0] if ref >= 0 else folded[-1 - ref][0] for ref in refs])[1:-1]
            for theirs, refs in layout
            if not theirs
        ]
    )
    reply = child.receive()
    if reply is None:
        return None
    (every, lengths), blob = reply
    every += [lone[i][1] for i in range(n) if i not in grouped]
    every += [slot for _, slot in folded.values()]
    if len(set(every)) != len(every):
        return None
    pieces: list[Any] = []
    view, at = memoryview(blob), 0
    theirs_json = iter(lengths)
    for theirs, _ in layout:
        if theirs:
            size = next(theirs_json)
            pieces.append(view[at : at + size])
            at += size
        else:
            pieces.append(next(own))
    return 0, pieces


def write_array(out: BinaryIO, items: list[Any], chunk: int = 2000) -> None:
    """Write ``orjson.dumps(items) + b"\\n"`` a slice of items at a time: a 70 MB result built whole
    is faulted in page by page, while slices reuse the same memory (~0.07 s less on 50k records)."""
    import orjson

    write_pieces(
        out,
        [
            memoryview(orjson.dumps(items[start : start + chunk]))[1:-1]
            for start in range(0, len(items), chunk)
        ],
    )


def write_pieces(out: BinaryIO, pieces: list[Any]) -> None:
    """Write a JSON array whose elements' JSON is ``pieces`` (each one or more elements, comma-joined)."""
    out.write(b"[")
    for k, piece in enumerate(pieces):
        if k:
            out.write(b",")
        out.write(piece)
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
    """Merge the given files and print the result; exit 2 naming file and JSON path on bad input.

    With the cyclic collector paused (~1M objects allocated, no cycles among them: collections only
    cost time), and switched back on after when called in-process (tests, ``main([...])``); it used
    to be left off for the rest of such a process."""
    from acx.core.merge import collector_paused

    return collector_paused(lambda: _finish(args, _merge_files(args.files)))()


def _read(name: str) -> bytes | None:
    """The bytes of a records array or bundle file, or of an agent-package directory's records file."""
    import os

    if os.path.isdir(name):
        name = os.path.join(name, "memory-records.json")
    try:
        with open(name, "rb") as handle:
            return handle.read()
    except OSError as exc:
        print(f"acx merge: {name}: cannot read ({exc.strerror})", file=sys.stderr)
        return None


def _map(name: str) -> mmap.mmap | None:
    """A private, writable mapping of a bundle big enough for :func:`_merge_halves` (None: too small,
    no fork, or not mappable: the serial path reads it and reports any error). Mapped, the text costs
    no memory of its own, and each process's in-place edit copies one page."""
    import os

    if not hasattr(os, "fork"):
        return None
    try:
        with open(name, "rb") as handle:
            if os.fstat(handle.fileno()).st_size < _PARALLEL_MIN_BYTES:
                return None
            return mmap.mmap(
                handle.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE
            )
    except (OSError, ValueError):
        return None


def _merge_files(names: list[str]) -> int:
    from acx.core.canonical import CanonicalError
    from acx.core.merge import MergeConflict, merge_records

    mapped = _map(names[0]) if len(names) == 1 else None
    if mapped is not None:
        with mapped:
            result = _merge_halves(names[0], mapped, sys.stdout.buffer)
        if result is not None:
            code, message = result
            if code:
                print(f"acx merge: {message}", file=sys.stderr)
            return code
    records: list[dict[str, Any]] = []
    slots: list[str] = []
    for name in names:
        data = _read(name)
        if data is None:
            return EXIT_INVALID
        try:
            value = load_bundle(data)
        except CanonicalError as exc:
            print(f"acx merge: {name}: {exc.path}: {exc.message}", file=sys.stderr)
            return EXIT_INVALID
        where = "$"
        if type(value) is dict and type(value.get("records")) is list:  # a bundle {schemaVersion, records}
            value, where = value["records"], "$.records"
        if type(value) is not list:
            print(
                f"acx merge: {name}: $: expected a records array, a bundle {{schemaVersion, records}}"
                " or a package directory (docs/FORMATS.md)",
                file=sys.stderr,
            )
            return EXIT_INVALID
        invalid, keys = _check(value)
        if invalid is not None:
            index, path, message = invalid
            print(f"acx merge: {name}: {where}[{index}]{path}: {message}", file=sys.stderr)
            return EXIT_INVALID
        records.extend(value)
        slots.extend(keys)
        del data
    try:
        merged = merge_records(records, slots)
    except MergeConflict as exc:
        print(f"acx merge: {exc}", file=sys.stderr)
        return EXIT_INVALID
    out = sys.stdout.buffer
    write_array(out, merged)
    out.flush()
    return 0
