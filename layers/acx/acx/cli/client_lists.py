"""`acx` list and get commands: packages, memory, uploads, cartridges, log entries, trust-registry.

Each prints a table for people and the API's JSON with ``--json``; ``--all`` follows ``nextCursor``,
``--cursor`` continues a listing. Shared plumbing (config, HTTP, errors) is :mod:`acx.cli.client`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from acx.cli.client import EXIT_OK, _common, _run, api_from, emit_json, pkg_path, say


def _pages(
    args: argparse.Namespace, path: str, key: str, query: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One page, or every page with --all: ``{key: [...], "nextCursor"}``."""
    api = api_from(args)
    items: list[Any] = []
    cursor = args.cursor
    while True:
        _, page = api.call("GET", path, query={**(query or {}), "limit": args.limit, "cursor": cursor})
        items.extend(page.get(key) or [])
        cursor = page.get("nextCursor")
        if not args.all or not cursor:
            return {key: items, "nextCursor": cursor}


def _more(out: dict[str, Any], key: str) -> None:
    cursor = out.get("nextCursor")
    n = len(out[key])
    noun = key if n != 1 else {"entries": "entry"}.get(key, key.removesuffix("s"))
    say(f"({n} {noun}" + (f"; more with --cursor {cursor} or --all)" if cursor else ")"))


def cmd_packages(args: argparse.Namespace) -> int:
    """Your tenant's packages with record count, log size, last checkpoint and lock state."""
    from acx.cli.tables import table

    out = _pages(args, "/v1/packages", "packages")
    if args.json:
        emit_json(out)
        return EXIT_OK
    rows = []
    for p in out["packages"]:
        checkpoint = str(p.get("lastCheckpoint") or "").split("\n")
        signed = f"size {checkpoint[1]}" if len(checkpoint) > 1 else "-"
        rows.append([p.get("package"), p.get("records"), p.get("logSize"), signed, p.get("locked")])
    table(["package", "records", "log size", "last checkpoint", "locked"], rows)
    _more(out, "packages")
    return EXIT_OK


def cmd_memory(args: argparse.Namespace) -> int:
    """One memory by id, under the advisory banner."""
    api = api_from(args)
    _, out = api.call("GET", pkg_path(args.package, "memories", args.id), query={"asOf": args.as_of})
    if args.json:
        emit_json(out)
        return EXIT_OK
    say(f"[advisory] {out.get('advisory')}")
    record = out.get("record") or {}
    say(
        f"{record.get('id')}  [{out.get('zone')}]  seq {out.get('seq')}  contentHash {out.get('contentHash')}"
    )
    from acx.cli.tables import table

    table(["field", "value"], [[k, v] for k, v in record.items() if k != "id"])
    return EXIT_OK


def cmd_uploads(args: argparse.Namespace) -> int:
    """Uploads of a package and their state (or one: `acx uploads ID`)."""
    from acx.cli.tables import table

    if args.upload_id:
        _, one = api_from(args).call("GET", pkg_path(args.package, "uploads", args.upload_id))
        out: dict[str, Any] = {"uploads": [one], "nextCursor": None}
    else:
        out = _pages(args, pkg_path(args.package, "uploads"), "uploads")
    if args.json:
        emit_json(out["uploads"][0] if args.upload_id else out)
        return EXIT_OK
    rows = []
    for u in out["uploads"]:
        summary = u.get("summary") or {}
        error = u.get("error") or {}
        detail = (
            f"accepted {summary.get('accepted')}, merged {summary.get('merged')}"
            if summary
            else f"{error.get('code')}: {error.get('message')}"
            if error
            else ""
        )
        rows.append(
            [u.get("uploadId"), u.get("status"), _when(u.get("createdAt")), u.get("declaredSize"), detail]
        )
    table(["upload", "state", "created", "declared bytes", "result"], rows)
    if not args.upload_id:
        _more(out, "uploads")
    return EXIT_OK


def cmd_cartridges(args: argparse.Namespace) -> int:
    """Cartridges exported from a package and their state."""
    from acx.cli.tables import table

    out = _pages(args, pkg_path(args.package, "cartridges"), "cartridges")
    if args.json:
        emit_json(out)
        return EXIT_OK
    rows = [
        [
            c.get("cartridgeId"),
            c.get("status"),
            _when(c.get("createdAt")),
            c.get("keyid"),
            c.get("fieldLearned"),
        ]
        for c in out["cartridges"]
    ]
    table(["cartridge", "state", "created", "key", "field-learned"], rows)
    _more(out, "cartridges")
    return EXIT_OK


def cmd_log_entries(args: argparse.Namespace) -> int:
    """Log entries: seq, operation, tier, record, hashes, time."""
    from acx.cli.tables import table

    out = _pages(args, pkg_path(args.package, "log", "entries"), "entries")
    if args.json:
        emit_json(out)
        return EXIT_OK
    rows = [
        [
            e.get("seq"),
            e.get("operation"),
            e.get("tier"),
            e.get("recordId"),
            _short(e.get("contentHash")),
            _short(e.get("hash")),
            e.get("time"),
        ]
        for e in out["entries"]
    ]
    table(["seq", "operation", "tier", "record", "content", "entry hash", "time"], rows)
    _more(out, "entries")
    return EXIT_OK


def cmd_trust_registry(args: argparse.Namespace) -> int:
    """Fetch the service's trust registry (public keys), e.g. for `acx verify --registry FILE`."""
    _, doc = api_from(args).call("GET", "/v1/trust-registry", auth=False)
    text = json.dumps(doc, indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    if args.json or not args.output:
        emit_json(doc)
    else:
        keys = ", ".join(str(k.get("keyid")) for k in doc.get("keys") or [])
        say(f"wrote the trust registry ({len(doc.get('keys') or [])} key(s): {keys}) to {args.output}")
    return EXIT_OK


def _short(value: Any) -> str:
    return f"{value[:12]}..." if isinstance(value, str) and len(value) > 16 else str(value or "-")


def _when(epoch: Any) -> str:
    import datetime as dt

    if not isinstance(epoch, int):
        return "-"
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _paging(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, help="items per page")
    p.add_argument("--cursor", help="continue from a nextCursor")
    p.add_argument("--all", action="store_true", help="follow nextCursor to the end")


def register(subparsers: Any) -> None:
    """Add the list and get commands to the ``acx`` parser."""
    p = subparsers.add_parser("packages", help="list your packages (records, log size, last checkpoint)")
    _paging(p)
    _common(p, package=False)
    p.set_defaults(func=_run(cmd_packages))

    p = subparsers.add_parser("memory", aliases=["get"], help="show one memory by id")
    p.add_argument("id")
    p.add_argument("--as-of", metavar="TIME", help="as it stood at TIME (RFC 3339)")
    _common(p)
    p.set_defaults(func=_run(cmd_memory))

    p = subparsers.add_parser("uploads", help="list uploads and their state (or one: acx uploads ID)")
    p.add_argument("upload_id", nargs="?")
    _paging(p)
    _common(p)
    p.set_defaults(func=_run(cmd_uploads))

    p = subparsers.add_parser("cartridges", help="list exported cartridges and their state")
    _paging(p)
    _common(p)
    p.set_defaults(func=_run(cmd_cartridges))

    p = subparsers.add_parser("log-entries", help="list log entries (seq, operation, tier, hashes, time)")
    _paging(p)
    _common(p)
    p.set_defaults(func=_run(cmd_log_entries))

    p = subparsers.add_parser("trust-registry", help="fetch the service's trust registry")
    p.add_argument("-o", "--output", help="write it to FILE (for acx verify --registry FILE)")
    _common(p, package=False)
    p.set_defaults(func=_run(cmd_trust_registry))
