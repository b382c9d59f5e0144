"""`acx scrub FILE [--forbid LITERAL ...]`: run the scrub gate offline over a bundle, records or text.

Prints ``{"blocked", "findings", "warnings"}`` as JSON on stdout; exit 3 when blocked, 2 when the file
cannot be read (missing, not UTF-8), 0 otherwise. It scans text; it does not validate records.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

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


# Verdicts of the fast check on one part of the input; the worst part decides for the whole.
_CLEAN = 0  # valid UTF-8 and provably clean: the full scan would report nothing
_VALID = 1  # valid UTF-8, not proven clean: take the full scan
_UNKNOWN = 2  # not UTF-8, or a worker failed: check UTF-8 again on the whole input, then full scan


def is_utf8(data: bytes, step: int = 65536) -> bool:
    """Whether ``data.decode("utf-8")`` succeeds, decoding ``step`` bytes at a time.

    Decoding 35 MB at once builds a 140 MB string (one emoji makes it 4 bytes a character), faulted
    in page by page: 10x slower than pieces that reuse the same small buffer. A piece ends before a
    byte that is no continuation byte (or at the end), so in valid UTF-8 each piece is whole
    characters; more than three continuation bytes in a row are never valid.
    """
    import codecs

    decode = codecs.utf_8_decode
    view = memoryview(data)
    size = len(data)
    start = 0
    while start < size:
        end = start + step
        if end >= size:
            end = size
        else:
            for _ in range(4):  # move the cut past continuation bytes
                if end == size or data[end] & 0xC0 != 0x80:
                    break
                end += 1
            else:
                return False
        try:
            decode(view[start:end], "strict", True)
        except UnicodeDecodeError:
            return False
        start = end
    return True


def _check_part(part: bytes, forbidden: list[str]) -> int:
    """UTF-8 check and parse-free clean proof (scan_raw_json_fast) of one part of the input."""
    from acx.core import scrub

    if not part.isascii() and not is_utf8(part):
        return _UNKNOWN
    return _CLEAN if scrub.scan_raw_json_fast(part, forbidden) else _VALID


def _fast_verdict(data: bytes, forbidden: list[str]) -> int:
    """:func:`_check_part` over the whole input, split over CPU cores for big JSON files.

    Parts are cut only between JSON members, just before an ASCII quote (see split_raw_json): each
    string and key/value pair is scanned whole by one process, no UTF-8 sequence is cut, and the
    input is valid UTF-8 exactly when every part is.
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
        return _check_part(data, forbidden)
    ranges = scrub.split_raw_json(data, workers)
    if len(ranges) < 2:
        return _check_part(data, forbidden)
    from acx.core.scrub import engine

    engine.compiled()  # compiled once here, inherited by every worker, not compiled again in each
    children = []
    for start, end in ranges[1:]:
        pid = os.fork()
        if pid == 0:  # child: its exit status is its part's verdict
            code = _UNKNOWN
            try:
                code = _check_part(data[start:end], forbidden)
            finally:
                os._exit(code)
        children.append(pid)
    start, end = ranges[0]
    verdict = _check_part(data[start:end], forbidden)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        verdict = max(verdict, code if code in (_CLEAN, _VALID) else _UNKNOWN)
    return verdict


def run(args: argparse.Namespace) -> int:
    """Scan FILE; the report names rule, place and byte offset, never the secret."""
    try:
        data = _read(args.file)
    except OSError as exc:
        print(f"acx scrub: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INVALID
    forbidden = [f for f in args.forbid if f]
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    verdict = _fast_verdict(body, forbidden)
    if verdict == _UNKNOWN and not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            print(f"acx scrub: {args.file}: not UTF-8 (byte offset {exc.start})", file=sys.stderr)
            return EXIT_INVALID
    if verdict == _CLEAN:
        # Proven clean without parsing (see scan_raw_json_fast): same answer as the full scan.
        sys.stdout.write('{"blocked": false, "findings": [], "warnings": []}\n')
        return EXIT_OK
    data = body
    from acx.core import scrub
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
