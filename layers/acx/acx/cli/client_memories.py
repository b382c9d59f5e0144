"""`acx recall` and `acx forget`: a package's memories, read under the advisory banner, and forgotten."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from acx.cli.client import (
    EXIT_OK,
    EXIT_TAMPERED,
    CliError,
    _common,
    _run,
    api_from,
    emit_json,
    pkg_path,
    say,
)
from acx.contract import RECALL_MAX_LIMIT

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).


def cmd_recall(args: argparse.Namespace) -> int:
    """Print memories under the advisory banner (memory informs, it never authorizes).

    ``--all`` follows ``nextCursor`` to the end with the largest pages the API serves; with
    ``-o FILE`` the records are streamed to FILE as a JSON array (a records array every command
    takes) page by page, never all held in memory."""
    import orjson

    from acx.cli.progress import bar, wanted

    api = api_from(args)
    limit = args.limit or (RECALL_MAX_LIMIT if args.all or args.output else None)
    query: dict[str, Any] = {
        "tier": args.tier,
        "tag": args.tag,
        "limit": limit,
        "trust": args.trust,  # None: the service's default, beliefs only
        "agent": args.agent,
    }
    records: list[Any] = []
    first: dict[str, Any] | None = None
    cursor = args.cursor
    count = 0
    corrupt = False
    sink: IO[bytes] | None = None
    tmp: Path | None = None
    if args.output:
        out_path = Path(args.output)
        tmp = out_path.with_name(out_path.name + ".part")
        sink = tmp.open("wb")
        sink.write(b"[")
    try:
        with bar("listing memories", None, wanted(args) and bool(args.all)) as progress:
            while True:
                path = pkg_path(args.package, "memories")
                _, page = api.call("GET", path, query={**query, "cursor": cursor})
                first = first or page
                corrupt = corrupt or bool(page.get("corrupt"))
                batch = page.get("records") or []
                if sink is not None and batch:
                    # one record a line, UTF-8 as received (orjson: a page of 1,000 records costs the
                    # CLI ~2 ms to write, where json.dumps per record took ~25 ms)
                    sink.write((b",\n" if count else b"\n") + b",\n".join(map(orjson.dumps, batch)))
                    count += len(batch)
                else:
                    records.extend(batch)
                    count += len(batch)
                progress.update(description=f"listing memories: {count}")
                cursor = page.get("nextCursor")
                if not args.all or not cursor:
                    break
        if sink is not None:
            sink.write(b"\n]\n")
            sink.close()
            sink = None
            assert tmp is not None
            os.replace(tmp, args.output)
    finally:
        if sink is not None:
            sink.close()
            if tmp is not None:
                tmp.unlink(missing_ok=True)
    assert first is not None
    out = {**first, "records": records, "nextCursor": cursor, "corrupt": corrupt}
    if args.output:
        summary = {
            "advisory": first.get("advisory"),
            "records": count,
            "file": args.output,
            "corrupt": corrupt,
        }
        if args.json:
            emit_json({**summary, "nextCursor": cursor})
        else:
            say(f"[advisory] {first.get('advisory')}")
            say(f"wrote {count} records to {args.output} (a records array)")
    elif args.json:
        emit_json(out)
    else:
        banner = first.get("advisory")
        say(f"[advisory] {banner}" if banner else "[advisory] memory informs, it never authorizes")
        _records_table(records)
        more = f"; more with --cursor {cursor} or --all" if cursor else ""
        say(f"({len(records)} records{more})")
    if corrupt:
        print("error: the store reported corruption; results may be incomplete", file=sys.stderr)
        return EXIT_TAMPERED
    return EXIT_OK


def _records_table(records: list[Any]) -> None:
    from acx.cli.tables import table

    rows = []
    for r in records:
        if not isinstance(r, dict):
            continue
        zone = r.get("zone") or ("rom" if r.get("portable") is True else "save")
        summary = str(r.get("summary") or "")
        rows.append(
            [
                str(r.get("id")),
                zone,
                str(r.get("title", "")),
                ",".join(map(str, r.get("tags") or [])),
                summary if len(summary) <= 80 else summary[:77] + "...",
            ]
        )
    table(["id", "zone", "title", "tags", "summary"], rows)


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget one memory by id or by content hash, or a knowledge/skill file by its package path:
    erased, tombstoned, never written again."""
    if sum(map(bool, (args.id, args.content_hash, args.file))) != 1:
        raise CliError("give exactly one of ID, --content-hash H or --file PATH")
    api = api_from(args)
    if args.file:
        _, out = api.call("DELETE", pkg_path(args.package, "files", args.file))
    elif args.id:
        _, out = api.call("DELETE", pkg_path(args.package, "memories", args.id))
    else:
        _, out = api.call(
            "DELETE", pkg_path(args.package, "memories"), query={"contentHash": args.content_hash}
        )
    if args.json:
        emit_json(out)
    else:
        log = out.get("log") or {}
        revoked = out.get("revokedCartridges") or []
        say(
            f"forgotten {json.dumps(out.get('forgotten', out.get('forgottenFile')))}; "
            f"log seq {log.get('fromSeq')}..{log.get('toSeq')}"
            + (f"; revoked cartridges: {', '.join(map(str, revoked))}" if revoked else "")
        )
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add the memory commands to the ``acx`` parser."""
    p = subparsers.add_parser("recall", help="list memories (under the advisory banner)")
    p.add_argument("--tier", choices=("rom", "save"))
    p.add_argument("--tag")
    p.add_argument("--trust", choices=("belief", "candidate", "any"), help="default: beliefs only")
    p.add_argument("--agent", help="only the memories this agent wrote")
    p.add_argument("--limit", type=int, help=f"records per page (1-{RECALL_MAX_LIMIT})")
    p.add_argument("--cursor", help="continue from a nextCursor")
    p.add_argument("--all", action="store_true", help="follow nextCursor to the end")
    p.add_argument("-o", "--output", help="stream the records to FILE as a JSON records array")
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    _common(p)
    p.set_defaults(func=_run(cmd_recall))

    p = subparsers.add_parser("forget", help="forget a memory by id or content hash, or a file by path")
    p.add_argument("id", nargs="?")
    p.add_argument("--content-hash")
    p.add_argument("--file", help="package path of a knowledge or skill file (knowledge/a.md)")
    _common(p)
    p.set_defaults(func=_run(cmd_forget))
