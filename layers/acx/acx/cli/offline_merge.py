"""`acx merge FILE [FILE ...]`: merge the memory records of bundle files, offline.

Whole-process time is measured on 50k-record bundles, so this module imports nothing heavy at module
level, parses with orjson when a cheap check proves the strict parser would agree (falling back to
:func:`acx.core.canonical.loads` otherwise), and writes the output with orjson.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

EXIT_INVALID = 2
_MAX_SAFE = 2**53 - 1
_WS_BEFORE_COLON = re.compile(rb'"[ \t\r\n]+:')  # re is loaded by argparse anyway


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
    if type(value) is not list or b'\\":' in data:
        return False
    if not all(type(item) is dict for item in value):
        return False
    keys = sum(map(len, value))
    # validate_record bounds integers; a float this large may be a huge integer literal: go strict.
    for name in ("xpAwarded", "similarity"):
        for number in [item.get(name) for item in value]:
            if type(number) is float and not -_MAX_SAFE <= number <= _MAX_SAFE:
                return False
    if keys != data.count(b'":'):
        return False
    return _WS_BEFORE_COLON.search(data) is None


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


def run(args: argparse.Namespace) -> int:
    """Merge the given files and print the result; exit 2 naming file and JSON path on bad input."""
    import gc

    from acx.core.canonical import CanonicalError
    from acx.core.merge import MergeConflict, merge_records
    from acx.core.records import RecordError, validate_record

    gc.disable()  # a short-lived process allocating ~1M objects: collection cycles only cost time
    records: list[dict[str, Any]] = []
    for name in args.files:
        try:
            with open(name, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            print(f"acx merge: {name}: cannot read ({exc.strerror})", file=sys.stderr)
            return EXIT_INVALID
        try:
            value = load_bundle(data)
        except CanonicalError as exc:
            print(f"acx merge: {name}: {exc.path}: {exc.message}", file=sys.stderr)
            return EXIT_INVALID
        del data
        if type(value) is not list:
            print(f"acx merge: {name}: $: a bundle must be a JSON array of records", file=sys.stderr)
            return EXIT_INVALID
        try:
            for item in value:
                validate_record(item)
        except RecordError:
            # Re-run with the record's index in the path (kept off the hot loop).
            for index, item in enumerate(value):
                try:
                    validate_record(item, f"$[{index}]")
                except RecordError as exc:
                    print(f"acx merge: {name}: {exc.path}: {exc.message}", file=sys.stderr)
                    return EXIT_INVALID
        records.extend(value)
    try:
        merged = merge_records(records)
    except MergeConflict as exc:
        print(f"acx merge: {exc}", file=sys.stderr)
        return EXIT_INVALID
    import orjson

    out = sys.stdout.buffer
    out.write(orjson.dumps(merged))
    out.write(b"\n")
    out.flush()
    return 0
