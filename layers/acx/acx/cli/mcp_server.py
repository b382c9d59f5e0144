"""`acx mcp -p PKG`: a Model Context Protocol server over stdio, so agents remember and recall natively.

Built on the official ``mcp`` Python SDK (``MCPServer``) over :class:`acx.Memory`: the endpoint and
token of the acx config (``acx login``; ``ACX_ENDPOINT``/``ACX_TOKEN`` override) and one package.
The tools take plain words with flat, typed arguments (enums, ranges and defaults are in each tool's
JSON Schema) and answer compactly; the client builds the ACX records, ids and repo fingerprints. The
service's rules hold unchanged: a refused write comes back with the API's reason (JSON path, limit,
scrub rule ids), never with the refused content, and every read carries the advisory banner once.

A token that expires while the server runs needs no restart: the config file's token is re-read
when the file changes (after ``acx login``), and until then each tool answers one line saying so.

What it does NOT stop: whoever can talk to the server's stdin acts with the configured token's
scopes on that package; run it only for the agent you would give that token to.
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations, which name types
# imported inside build_server (the module stays light for the parser), so they are evaluated there.

import argparse
import os
import sys
from typing import Any

# Imports inside the commands are deliberate: `acx` imports every command module to build its parser,
# so whatever is imported at module level is paid by every command (bench cli times whole processes).

SEARCH_K_DEFAULT = 5
LIST_LIMIT_DEFAULT = 20
NOTHING_RELEVANT = "nothing relevant is stored for this query"


def _api_error(exc: Any) -> str:
    """One line for a refused call: status, code, message, where; scrub findings by rule and path."""
    text = exc.line()
    if exc.status == 401:
        return text.splitlines()[0]  # the message already says to run `acx login`: one line
    body = exc.body if isinstance(exc.body, dict) else {}
    report = body.get("report")
    if isinstance(report, dict):
        findings = report.get("findings") or []
        where = [
            f"{f.get('rule')} at {f.get('location') or ''} {f.get('path') or ''}".strip()
            for f in findings[:10]
            if isinstance(f, dict)
        ]
        if where:
            text += "; findings: " + "; ".join(where)
    if body.get("forgotten"):
        text += (
            "; this knowledge was forgotten and stays blocked (pass on_forgotten='skip' to store the rest)"
        )
    return text


def _version() -> str:
    from acx.cli.main import _version as version

    return version()


def _brief(item: Any, trust: str = "belief") -> dict[str, Any]:
    out = {"id": item.id, "title": item.title, "summary": item.summary}
    if item.valid_from or item.valid_until:
        out.update(validFrom=item.valid_from, validUntil=item.valid_until)
    return {**out, **_mark(item, trust)}


def _mark(item: Any, trust: str) -> dict[str, str]:
    """``trust`` on a result whenever the read asked for candidates (``candidate``/``any``), so every
    unreviewed memory says so where the agent reads it; a default read serves beliefs only and stays
    compact. A candidate is marked whatever the read asked."""
    state = str(getattr(item, "trust", "belief") or "belief")
    return {"trust": state} if trust != "belief" or state != "belief" else {}


def build_server(memory: Any, package: str | None = None) -> Any:
    """The MCP server with its tools, over ``memory`` (an :class:`acx.Memory`, or an ``Api``-like
    object with ``call(method, path, ...)``, wrapped in a Memory for ``package``)."""
    from typing import Annotated, Literal

    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import Field

    from acx.cli.client import CliError
    from acx.client.memory import Memory
    from acx.client.records import BATCH_MAX, RecordInputError
    from acx.contract import ADVISORY

    if not isinstance(memory, Memory):
        memory = Memory(package, api=memory)
    package = str(memory.package)

    server = MCPServer(
        name="acx-memory",
        version=_version(),
        instructions=(
            f"Memories of package {package!r} in the acx memory service. {ADVISORY} "
            "Search before acting on a topic; remember what you learned in plain words (one sentence "
            "or a few); update a memory that turned out wrong (the old version stays in its history); "
            "forget only on request (permanent). Reads serve beliefs; trust='candidate' or 'any' also "
            "serves candidates, memories no person has reviewed yet, each marked trust: candidate."
        ),
    )

    def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CliError as exc:
            raise ToolError(_api_error(exc)) from None
        except RecordInputError as exc:
            raise ToolError(str(exc)) from None

    Id = Annotated[str, Field(min_length=1, max_length=128, description="the memory's id (mem-...)")]
    Text = Annotated[str, Field(min_length=1, max_length=16_384)]
    Impact = Literal["positive", "neutral", "negative"]
    AsOf = Annotated[
        str | None,
        Field(description="RFC 3339 time (2026-12-01T00:00:00Z): answer as the memories stood then"),
    ]
    Trust = Annotated[
        Literal["belief", "candidate", "any"],
        Field(
            description="belief (default): reviewed or trusted memories only; candidate or any: also "
            "memories no person has reviewed yet, each marked trust: candidate"
        ),
    ]

    @server.tool()
    def remember(
        text: Annotated[
            str | None, Field(max_length=16_384, description="the lesson, in plain words")
        ] = None,
        texts: Annotated[
            list[Text] | None,
            Field(
                max_length=BATCH_MAX, description=f"several lessons at once (1-{BATCH_MAX}), instead of text"
            ),
        ] = None,
        title: Annotated[
            str | None, Field(max_length=512, description="short title; default: the first sentence")
        ] = None,
        tags: Annotated[list[str] | None, Field(max_length=64, description="labels to filter by")] = None,
        impact: Annotated[Impact, Field(description="how the lesson turned out")] = "neutral",
        repo: Annotated[
            str | None,
            Field(
                description="bind the lesson to a repository: '.' for the one this server runs in, or a "
                "git origin URL or checkout path; only a salted fingerprint is sent. Omit for a "
                "lesson that holds anywhere."
            ),
        ] = None,
        on_forgotten: Annotated[
            Literal["refuse", "skip"],
            Field(description="when a lesson was forgotten before: refuse the call, or store the rest"),
        ] = "refuse",
    ) -> dict[str, Any]:
        """Remember what you learned, in plain words: give `text` (one lesson) or `texts` (several,
        one call). Ids, titles, timestamps and the record format are filled in; the same text stored
        twice is one memory. Refused with the reason (nothing written) if it holds a secret or repeats
        forgotten knowledge."""
        if (text is None) == (texts is None):
            raise ToolError("give exactly one of text (one lesson) or texts (a list of lessons)")
        out = run(
            memory.remember,
            text if text is not None else texts,
            title=title,
            tags=tags,
            impact=impact,
            repo=repo,
            on_forgotten=on_forgotten,
        )
        result: dict[str, Any] = {"ids": out.ids, "stored": out.accepted + out.merged + out.unchanged}
        if out.skipped:
            result["skipped"] = out.skipped
        return result

    @server.tool()
    def update(
        id: Id,
        text: Annotated[Text, Field(description="what holds now, in plain words")],
        title: Annotated[str | None, Field(max_length=512, description="new title; default: kept")] = None,
        valid_from: Annotated[
            str | None, Field(description="RFC 3339 time the correction holds from; default now")
        ] = None,
    ) -> dict[str, Any]:
        """Correct a memory: the new text becomes the current version and supersedes the old one,
        which stays in the memory's history (nothing is erased or blocked; use forget for that)."""
        out = run(memory.update, id, text, title=title, valid_from=valid_from)
        return {"id": out.id, "seq": out.seq, "validFrom": out.valid_from}

    @server.tool()
    def search(
        query: Annotated[str, Field(min_length=1, max_length=512, description="what you want to know")],
        k: Annotated[int, Field(ge=1, le=50, description="at most this many results")] = SEARCH_K_DEFAULT,
        tier: Annotated[
            Literal["rom", "save"] | None,
            Field(description="rom: lessons that hold anywhere; save: repo-bound ones"),
        ] = None,
        tag: Annotated[str | None, Field(max_length=128)] = None,
        as_of: AsOf = None,
        trust: Trust = "belief",
    ) -> dict[str, Any]:
        """Find memories by meaning and words, best first. Results are advisory: memory informs, it
        never authorizes, so verify before acting. Nothing relevant: an empty list, said so."""
        out = run(memory.search, query, k, tier=tier, tag=tag, as_of=as_of, trust=_asked(trust))
        result: dict[str, Any] = {
            "advisory": out.advisory,
            "results": [
                {
                    "id": h.id,
                    "title": h.title,
                    "summary": h.summary,
                    "score": round(h.score, 4),
                    **({"validFrom": h.valid_from} if h.valid_from else {}),
                    **_mark(h, trust),
                }
                for h in out.hits
            ],
        }
        if not out.hits:
            result["note"] = NOTHING_RELEVANT
        return result

    @server.tool()
    def get(id: Id, as_of: AsOf = None, trust: Trust = "belief") -> dict[str, Any]:
        """One memory by id, with its tags, impact and tier (advisory, as every read)."""
        item = run(memory.get, id, as_of=as_of, trust=_asked(trust))
        return {
            "advisory": item.advisory or ADVISORY,
            "memory": {
                **_brief(item, trust),
                "tags": item.tags,
                "impact": item.impact,
                "tier": "rom" if item.portable else "save",
                "timestamp": item.timestamp,
            },
        }

    @server.tool(name="list")
    def list_(
        tier: Annotated[Literal["rom", "save"] | None, Field(description="rom or save; default both")] = None,
        tag: Annotated[str | None, Field(max_length=128)] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = LIST_LIMIT_DEFAULT,
        cursor: Annotated[str | None, Field(description="nextCursor of the previous page")] = None,
        as_of: AsOf = None,
        trust: Trust = "belief",
    ) -> dict[str, Any]:
        """A page of the package's memories (id, title, summary); nextCursor continues it."""
        page = run(
            memory.list, tier=tier, tag=tag, limit=limit, cursor=cursor, as_of=as_of, trust=_asked(trust)
        )
        return {
            "advisory": page.advisory,
            "memories": [_brief(i, trust) for i in page.items],
            "nextCursor": page.next_cursor,
        }

    @server.tool()
    def history(id: Id) -> dict[str, Any]:
        """Every version of a memory, oldest first: what it said, when it held true (validFrom,
        validUntil; null = still valid), when it was recorded and by whom."""
        out = run(memory.history, id)
        return {
            "id": out.id,
            "versions": [
                {
                    "seq": v.seq,
                    "operation": v.operation,
                    "title": (v.record or {}).get("title"),
                    "summary": (v.record or {}).get("summary"),
                    "validFrom": v.valid_from,
                    "validUntil": v.valid_until,
                    "recordedAt": v.recorded_at,
                    "actor": v.actor,
                }
                for v in out.versions
            ],
        }

    @server.tool()
    def invalidate(
        id: Id,
        reason: Annotated[str, Field(min_length=1, max_length=256, description="why it no longer holds")],
    ) -> dict[str, Any]:
        """Mark a memory as no longer true from now on, keeping it in the history (not a forget)."""
        return dict(run(memory.invalidate, id, reason))

    @server.tool()
    def forget(id: Id) -> dict[str, Any]:
        """Forget a memory for good (only when asked to): its text is erased everywhere and the same
        knowledge is refused if anyone stores it again. Permanent; to correct a memory, use update."""
        out = run(memory.forget, id)
        return {"forgotten": out.id, "alsoForgotten": out.also_forgotten, "repeated": out.repeated}

    @server.tool()
    def verify_log() -> dict[str, Any]:
        """Verify the package's receipted, hash-chained log on the server ("ok" or what is wrong)."""
        out = run(memory.verify_log)
        keys = ("status", "size", "checked", "firstBadSeq", "reason")
        return {k: out.get(k) for k in keys if k in out}

    return server


def _asked(trust: str) -> str | None:
    """The ``trust`` query parameter of a read: none for the default (beliefs: the service's default)."""
    return None if trust == "belief" else trust


MCP_EXTRA = "acx mcp needs the [search] extra: pip install 'acx-memory[search]'"


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve MCP over stdio until the client closes it (stdout is the protocol: nothing else is printed)."""
    from acx.cli.client import CliError

    try:
        import mcp.server  # noqa: F401 - present only with the [search] extra
    except ImportError:
        print(MCP_EXTRA, file=sys.stderr)
        return 2
    from acx.client.memory import Memory

    try:
        memory = Memory(args.package or os.environ.get("ACX_PACKAGE"), timeout=args.http_timeout)
    except CliError as exc:
        print(exc.line(), file=sys.stderr)
        return exc.exit_code
    build_server(memory).run("stdio")
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "mcp",
        help="MCP server over stdio for agents (remember, update, search, get, list, history, forget)",
    )
    p.add_argument("--package", "-p", help="package id (default: ACX_PACKAGE or `acx login --package`)")
    p.add_argument("--http-timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_mcp)
