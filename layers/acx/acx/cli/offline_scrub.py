"""`acx scrub FILE [--forbid LITERAL ...]`: run the scrub gate offline over a bundle, records or text.

Prints ``{"blocked", "findings", "warnings"}`` as JSON on stdout; exit 3 when blocked, 2 when the file
cannot be read (missing, not UTF-8), 0 otherwise. It scans text; it does not validate records.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_BLOCKED = 3


def register(subparsers: Any) -> None:
    """Add the ``scrub`` command to the ``acx`` dispatcher."""
    parser = subparsers.add_parser(
        "scrub",
        help="scan a bundle, a JSON array of records or a text/markdown file for secrets",
        description="Fail-closed secret scan. Exit 3 when blocked, 2 on unreadable input, 0 otherwise.",
    )
    parser.add_argument("file", metavar="FILE", help="bundle, JSON array of records, or text; - for stdin")
    parser.add_argument(
        "--forbid",
        metavar="LITERAL",
        action="append",
        default=[],
        help="block this literal too (case-insensitive, repeatable), e.g. a repo identifier",
    )
    parser.set_defaults(func=run)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as fh:
        return fh.read()


def _fast_clean(data: bytes, forbidden: list[str]) -> bool:
    """The parse-free clean proof of scan_raw_json_fast, split over CPU cores for big JSON files.

    Parts are cut only between JSON members (see split_raw_json), so each string and key/value
    pair is scanned whole by one process; any hit or error falls back to the full scan.
    """
    import os

    from acx.core import scrub

    workers = min(os.cpu_count() or 1, 4)
    head = data[:64].lstrip()
    if (
        workers < 2
        or len(data) < 8_000_000
        or not hasattr(os, "fork")
        or head[:1] not in (b"[", b"{")
        or any('"' in f for f in forbidden)
    ):
        return scrub.scan_raw_json_fast(data, forbidden)
    ranges = scrub.split_raw_json(data, workers)
    if len(ranges) < 2:
        return scrub.scan_raw_json_fast(data, forbidden)
    children = []
    for start, end in ranges[1:]:
        pid = os.fork()
        if pid == 0:  # child: exit 0 = proven clean, anything else = not proven
            code = 1
            try:
                code = 0 if scrub.scan_raw_json_fast(data[start:end], forbidden) else 1
            finally:
                os._exit(code)
        children.append(pid)
    start, end = ranges[0]
    clean = scrub.scan_raw_json_fast(data[start:end], forbidden)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        clean = clean and os.waitstatus_to_exitcode(status) == 0
    return clean


def run(args: argparse.Namespace) -> int:
    """Scan FILE; the report names rule, place and byte offset, never the secret."""
    try:
        data = _read(args.file)
    except OSError as exc:
        print(f"acx scrub: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INVALID
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            print(f"acx scrub: {args.file}: not UTF-8 (byte offset {exc.start})", file=sys.stderr)
            return EXIT_INVALID
    from acx.core import scrub

    forbidden = [f for f in args.forbid if f]
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if _fast_clean(data, forbidden):
        # Proven clean without parsing (see scan_raw_json_fast): same answer as the full scan.
        sys.stdout.write('{"blocked": false, "findings": [], "warnings": []}\n')
        return EXIT_OK
    from acx.core.canonical import CanonicalError, loads

    location = "text" if args.file == "-" else f"file:{args.file}"
    try:
        doc = loads(data)
    except CanonicalError:
        doc = None
        report = scrub.ScrubReport()
        report.extend(scrub.scan_text(data.decode("utf-8"), location, "", forbidden))
    if doc is not None:
        report = scrub.scan_any(doc, forbidden) if not isinstance(doc, str) else scrub.ScrubReport()
        if isinstance(doc, str):
            report.extend(scrub.scan_text(doc, location, "", forbidden))
    import json

    sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    return EXIT_BLOCKED if report.blocked else EXIT_OK
