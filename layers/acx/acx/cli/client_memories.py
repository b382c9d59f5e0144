"""A package's memories: `acx remember` (plain words), `acx recall` (alias `list`), `acx update`,
`acx history`, `acx invalidate` and `acx forget`. Writes in plain words go through :class:`acx.Memory`
(records built by :mod:`acx.client.records`), the same path as the MCP server and Python programs."""

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
    query: dict[str, Any] = {"tier": args.tier, "tag": args.tag, "limit": limit, "asOf": args.as_of}
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


def _memory(args: argparse.Namespace) -> Any:
    from acx.client.memory import Memory

    return Memory(args.package, timeout=args.http_timeout)


def _texts(args: argparse.Namespace) -> list[str]:
    """The texts given as arguments, or stdin's whole text as one memory (``-`` or no argument).
    ``--repo "the text"`` is read as ``--repo`` (this checkout) then the text: an origin URL or a
    directory has no spaces."""
    if args.repo and any(c.isspace() for c in args.repo):
        args.text.insert(0, args.repo)
        args.repo = "."
    texts = [t for t in args.text if t != "-"]
    if "-" in args.text or not texts:
        if not args.text and sys.stdin.isatty():
            raise CliError('say what to remember: acx remember "text" (or pipe it on stdin)')
        texts.append(sys.stdin.read())
    return texts


def cmd_remember(args: argparse.Namespace) -> int:
    """Remember one lesson per argument (or stdin's text) in plain words: one bundle, one call."""
    from acx.client.records import RecordInputError

    try:
        out = _memory(args).remember(
            _texts(args),
            title=args.title,
            tags=args.tag,
            impact=args.impact,
            repo=args.repo,
            on_forgotten=args.on_forgotten,
        )
    except RecordInputError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        emit_json(
            {
                "ids": out.ids,
                "accepted": out.accepted,
                "merged": out.merged,
                "unchanged": out.unchanged,
                "skipped": out.skipped,
                "log": out.log,
            }
        )
    else:
        for rid in out.ids:
            say(f"remembered {rid}")
        if out.skipped:
            say(f"skipped (forgotten before): {', '.join(str(s.get('id')) for s in out.skipped)}")
    return EXIT_OK


def cmd_update(args: argparse.Namespace) -> int:
    """Write a new version of a memory with new text; the old version stays in its history."""
    from acx.client.records import RecordInputError

    text = args.text if args.text != "-" else sys.stdin.read()
    try:
        out = _memory(args).update(
            args.id, text, title=args.title, tags=args.tag, impact=args.impact, valid_from=args.valid_from
        )
    except RecordInputError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        emit_json({"id": out.id, "seq": out.seq, "supersedes": out.supersedes, "validFrom": out.valid_from})
    else:
        old = out.supersedes or {}
        say(
            f"updated {out.id}: version seq {out.seq} supersedes seq {old.get('seq')}, "
            f"valid from {out.valid_from}"
        )
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    """Every version of a memory, oldest first, with valid time and record time."""
    from acx.cli.tables import table

    hist = _memory(args).history(args.id)
    if args.json:
        emit_json(
            {
                "id": hist.id,
                "versions": [
                    {
                        "seq": v.seq,
                        "operation": v.operation,
                        "record": v.record,
                        "validFrom": v.valid_from,
                        "validUntil": v.valid_until,
                        "recordedAt": v.recorded_at,
                        "actor": v.actor,
                    }
                    for v in hist.versions
                ],
            }
        )
        return EXIT_OK
    rows = [
        [
            v.seq,
            v.operation,
            v.valid_from or "",
            v.valid_until or "(valid)",
            v.recorded_at or "",
            v.actor or "",
            "(forgotten)" if v.record is None else str(v.record.get("summary") or "")[:60],
        ]
        for v in hist.versions
    ]
    table(["seq", "operation", "valid from", "valid until", "recorded", "actor", "summary"], rows)
    return EXIT_OK


def cmd_invalidate(args: argparse.Namespace) -> int:
    """End a memory's valid time now (it no longer holds); it stays in the history, unlike forget."""
    out = _memory(args).invalidate(args.id, args.reason)
    if args.json:
        emit_json(out)
    else:
        say(
            f"invalidated {args.id}"
            + (f" (valid until {out['validUntil']})" if out.get("validUntil") else "")
        )
    return EXIT_OK


def _as_of(p: argparse.ArgumentParser) -> None:
    p.add_argument("--as-of", metavar="TIME", help="as the memories stood at TIME (RFC 3339)")


def register(subparsers: Any) -> None:
    """Add the memory commands to the ``acx`` parser."""
    p = subparsers.add_parser(
        "remember", help='remember a lesson in plain words: acx remember "text" (or stdin)'
    )
    p.add_argument("text", nargs="*", help="one memory per argument; '-' or none: read stdin")
    p.add_argument("--title", help="title (one memory); default: the first sentence")
    p.add_argument("--tag", action="append", help="a tag (repeat for more)")
    p.add_argument("--impact", choices=("positive", "neutral", "negative"), default="neutral")
    p.add_argument(
        "--repo",
        nargs="?",
        const=".",
        metavar="URL|DIR",
        help="bind to a repository: this checkout's git origin, or the one given; only a salted "
        "fingerprint is sent",
    )
    p.add_argument(
        "--on-forgotten",
        choices=("refuse", "skip"),
        default="refuse",
        help="a lesson forgotten before: refuse all (default) or store the rest",
    )
    _common(p)
    p.set_defaults(func=_run(cmd_remember))

    p = subparsers.add_parser("update", help="correct a memory: a new version, the old one kept in history")
    p.add_argument("id")
    p.add_argument("text", help="what holds now ('-': stdin)")
    p.add_argument("--title", help="new title (default: kept, or derived when it was)")
    p.add_argument("--tag", action="append", help="replace the tags (repeat for more)")
    p.add_argument("--impact", choices=("positive", "neutral", "negative"))
    p.add_argument("--valid-from", metavar="TIME", help="RFC 3339 time the correction holds from")
    _common(p)
    p.set_defaults(func=_run(cmd_update))

    p = subparsers.add_parser("history", help="every version of a memory, with valid and record time")
    p.add_argument("id")
    _common(p)
    p.set_defaults(func=_run(cmd_history))

    p = subparsers.add_parser("invalidate", help="mark a memory as no longer valid (kept in history)")
    p.add_argument("id")
    p.add_argument("--reason", required=True, help="why it no longer holds (1-256 characters)")
    _common(p)
    p.set_defaults(func=_run(cmd_invalidate))

    p = subparsers.add_parser("recall", aliases=["list"], help="list memories (under the advisory banner)")
    _as_of(p)
    p.add_argument("--tier", choices=("rom", "save"))
    p.add_argument("--tag")
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
