"""`acx review`: clear a package's review queue in the terminal, one key per candidate.

Each candidate is shown (title, summary, author, source, any near-duplicate belief) with the prompt
``[a]pprove [r]eject [e]dit [s]kip [q]uit``. On a terminal one key press decides (no Enter); from a
pipe or a script each line's first character does. ``e`` opens the whole record, as JSON, in
``$VISUAL`` or ``$EDITOR`` (default ``vi``) and sends the corrected record (edit-and-approve: one
commit superseding the candidate with it and approving it); closing the editor with the record
unchanged, or with invalid JSON, skips. Each decision names the version shown (its ``seq``): a
candidate its author changed meanwhile is refused (409) rather than overwritten. Every decision is a
receipted log entry naming the logged-in reviewer; the service refuses (403) a candidate the
reviewer wrote itself, and the command says so and moves on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from acx.cli.client import EXIT_OK, CliError, _common, _run, api_from, emit_json, pkg_path, say

KEYS = {"a": "approve", "r": "reject", "e": "edit", "s": "skip", "q": "quit"}
PROMPT = "[a]pprove [r]eject [e]dit [s]kip [q]uit > "
PAGE = 50


def read_key() -> str:
    """One decision key: a single key press on a terminal, else the first character of a line ('' at
    end of input)."""
    stream = sys.stdin
    if stream.isatty():
        import termios
        import tty

        fd = stream.fileno()
        old = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd, termios.TCSANOW)  # keep type-ahead: keys pressed early still count
            key = os.read(fd, 1).decode("utf-8", "replace")  # one byte: no buffered read-ahead
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)
        sys.stdout.write(key + "\n")
        return key.lower()
    line = stream.readline()
    return line.strip()[:1].lower() if line else "q"


def edit_record(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record after the person edited it in ``$EDITOR`` (None: unchanged or not valid JSON)."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w+", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(record, fh, indent=2, ensure_ascii=False)
        path = fh.name
    try:
        subprocess.run([*editor.split(), path], check=False)  # noqa: S603 - the person's own editor
        with open(path, encoding="utf-8") as fh:
            edited = json.load(fh)
    except (OSError, ValueError):
        return None
    finally:
        os.unlink(path)
    return edited if isinstance(edited, dict) and edited != record else None


def show(item: dict[str, Any], n: int) -> None:
    rec = item.get("record") or {}
    by = item.get("author") or {}
    src = item.get("source") or {}
    who = by.get("actor", "?") + (f" (agent {by['agent']})" if by.get("agent") else "")
    origin = src.get("origin", "native") + (f" from {src['importedFrom']}" if src.get("importedFrom") else "")
    say(f"\n#{n} {item['id']}  {rec.get('title', '')}")
    summary = str(rec.get("summary", ""))
    say(f"   {summary[:300]}{'...' if len(summary) > 300 else ''}")
    say(f"   by {who}, {item.get('recordedAt') or '?'}; {origin}{', foreign' if src.get('foreign') else ''}")
    near = item.get("nearBelief")
    if near:
        say(f"   near duplicate of belief {near['id']}: {near.get('title', '')}")


def review_loop(
    api: Any,
    package: str,
    key: Callable[[], str] = read_key,
    edit: Callable[[dict[str, Any]], dict[str, Any] | None] = edit_record,
    limit: int | None = None,
) -> dict[str, Any]:
    """Walk the queue oldest first and send each decision; returns the tally (and the keys read)."""
    tally = {"approve": 0, "reject": 0, "edit": 0, "skip": 0, "refused": 0, "keys": 0}
    cursor: str | None = None
    n = 0
    while True:
        _, page = api.call("GET", pkg_path(package, "review"), query={"limit": PAGE, "cursor": cursor})
        items = page.get("items") or []
        for item in items:
            n += 1
            show(item, n)
            choice = ""
            while choice not in KEYS:
                sys.stdout.write(PROMPT)
                sys.stdout.flush()
                choice = key()
                tally["keys"] += 1
            action = KEYS[choice]
            if action == "quit":
                return tally
            if action == "skip":
                tally["skip"] += 1
            else:
                body: dict[str, Any] = {"decision": action}
                if isinstance(item.get("seq"), int):  # the version shown: a candidate changed since is 409
                    body["seq"] = item["seq"]
                if action == "edit":
                    edited = edit(item["record"])
                    if edited is None:
                        say("   unchanged: skipped")
                        tally["skip"] += 1
                        continue
                    body["record"] = edited
                try:
                    api.call("POST", pkg_path(package, "review", item["id"]), json_body=body)
                    tally[action] += 1
                    say(
                        "   "
                        + {"approve": "approved", "reject": "rejected"}.get(action, "edited and approved")
                    )
                except CliError as exc:
                    tally["refused"] += 1
                    say(f"   refused: {exc.line()}")
            if limit is not None and n >= limit:
                return tally
        cursor = page.get("cursor")
        if not cursor:
            return tally


def cmd_review(args: argparse.Namespace) -> int:
    """Decide the package's candidates one by one (scope memory:review)."""
    api = api_from(args)
    tally = review_loop(api, args.package, limit=args.limit)
    if args.json:
        emit_json(tally)
    else:
        say(
            f"\n{tally['approve']} approved, {tally['reject']} rejected, {tally['edit']} edited, "
            f"{tally['skip']} skipped, {tally['refused']} refused ({tally['keys']} keys)"
        )
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``acx review`` to the ``acx`` parser."""
    p = subparsers.add_parser("review", help="decide a package's candidates: approve, reject, edit, skip")
    p.add_argument("--limit", type=int, help="stop after this many candidates")
    _common(p)
    p.set_defaults(func=_run(cmd_review))
