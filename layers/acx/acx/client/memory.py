"""``from acx import Memory``: the service's memories for a Python program, in plain words.

    from acx import Memory
    mem = Memory()                      # endpoint, token and package of `acx login` (or ACX_* env)
    mem.remember("Retry the flaky upload test with backoff; it fails on cold caches.")
    for hit in mem.search("flaky upload test"): print(hit.title, hit.score)

``Memory()`` reads the same configuration as the CLI (``$ACX_CONFIG``, default
``~/.config/acx/config.json``; ``ACX_ENDPOINT``, ``ACX_TOKEN``, ``ACX_PACKAGE`` override it; explicit
arguments override both). A token taken from the config file is re-read whenever the file changes, so
a long-lived process (the MCP server) picks up a new ``acx login`` without a restart; an expired or
refused token is one :class:`AcxError` line that says to run ``acx login``.

Every method is one or two API calls and returns dataclasses; failures raise :class:`AcxError`
(``status``, ``code``, ``message``, ``path``). Search results are advisory: memory informs, it never
authorizes (``SearchResult.advisory``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acx.cli.client import Api, CliError, config_path, load_config, pkg_path
from acx.client import records as rec
from acx.contract import ADVISORY, ERR_TOKEN_EXPIRED, is_package_id

AcxError = CliError  # one error type for the CLI and the library: status, code, message, path

LOGIN_LINE = "run `acx login` (the next call uses the new token; nothing needs a restart)"

# -- the relevance floor ------------------------------------------------------------------------------
# The service applies the floor (acx.core.search.ranking): a memory is a hit only when it holds a
# query term or its engine puts it close enough in meaning, and an empty answer carries ``reason``
# (``no_match``). The client keeps one rule of its own, for a service that predates that floor: a
# hash engine (``local-hash-*``) embeds surface tokens only, the ones BM25 already matched, so its
# vector-only hits are hash collisions, never meaning, and are dropped. A semantic engine's
# vector-only hits are kept: their floor is the engine's, which only the service knows.
HASH_ENGINE_PREFIX = "local-hash"


def relevant(result: dict[str, Any], engine: str | None) -> bool:
    """Whether a search API result clears the relevance floor (see above)."""
    signals = result.get("signals") or {}
    if signals.get("lexical"):
        return True
    return bool(signals.get("vector")) and not str(engine or "").startswith(HASH_ENGINE_PREFIX)


# -- results ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Remembered:
    """What one remember call wrote: the ids of its records (derived from the content) and the counts."""

    ids: list[str]
    accepted: int
    merged: int
    unchanged: int
    skipped: list[dict[str, Any]]
    log: dict[str, Any] | None


@dataclass(frozen=True)
class Item:
    """One memory: its record's main fields, the record itself, and where it stands in the log."""

    id: str
    title: str
    summary: str
    tags: list[str]
    impact: str
    portable: bool
    timestamp: str
    record: dict[str, Any]
    seq: int | None = None
    content_hash: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    trust: str = "belief"  # candidate: no person has reviewed it yet (served only when asked for)
    advisory: str | None = None  # the banner of the answer it came in (get)

    @classmethod
    def of(cls, record: dict[str, Any], body: dict[str, Any] | None = None) -> Item:
        body = body or {}
        return cls(
            id=str(record.get("id")),
            title=str(record.get("title") or ""),
            summary=str(record.get("summary") or ""),
            tags=list(record.get("tags") or []),
            impact=str(record.get("impact") or ""),
            portable=record.get("portable") is True,
            timestamp=str(record.get("timestamp") or ""),
            record=record,
            seq=body.get("seq"),
            content_hash=body.get("contentHash"),
            valid_from=body.get("validFrom"),
            valid_until=body.get("validUntil"),
            trust=str(body.get("trust") or "belief"),
            advisory=body.get("advisory"),
        )


@dataclass(frozen=True)
class Hit:
    """One search result: the memory, its fused score and which signals matched."""

    id: str
    title: str
    summary: str
    score: float
    lexical_terms: list[str]
    vector_score: float | None
    record: dict[str, Any]
    valid_from: str | None = None
    trust: str = "belief"


@dataclass(frozen=True)
class SearchResult:
    """Ranked hits over the relevance floor, under the advisory banner (given once)."""

    advisory: str
    hits: list[Hit]
    below_floor: int
    engine: str | None

    def __iter__(self) -> Any:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)


@dataclass(frozen=True)
class Page:
    """A page of memories and the cursor of the next one (None at the end)."""

    advisory: str
    items: list[Item]
    next_cursor: str | None
    corrupt: bool = False

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class Updated:
    """A new version: its log seq, the version it supersedes, and when it holds from."""

    id: str
    seq: int | None
    supersedes: dict[str, Any] | None
    valid_from: str | None


@dataclass(frozen=True)
class Version:
    """One version of a memory: what was recorded (None once forgotten) and when it held true."""

    seq: int | None
    operation: str
    record: dict[str, Any] | None
    valid_from: str | None
    valid_until: str | None
    recorded_at: str | None
    actor: str | None


@dataclass(frozen=True)
class History:
    """Every version of one memory, oldest first."""

    id: str
    versions: list[Version] = field(default_factory=list)


@dataclass(frozen=True)
class Forgotten:
    """A forget: the id, what else had the same knowledge, and the log entries written."""

    id: str
    also_forgotten: list[str]
    repeated: bool
    log: dict[str, Any] | None


# -- the client ---------------------------------------------------------------------------------------


class ConfigApi(Api):
    """:class:`Api` whose token follows the config file: re-read when the file changes, checked for
    expiry before each call, and a refusal (401) answered with one line saying to run ``acx login``."""

    def __init__(self, endpoint: str, token: str | None, timeout: float, follow: Path | None) -> None:
        super().__init__(endpoint, token, timeout)
        self._follow = follow  # the config file the token comes from (None: explicit or $ACX_TOKEN)
        self._stamp = self._stat()
        self._expires: Any = load_config().get("expiresAt") if follow else None

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = self._follow.stat() if self._follow else None
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if st else None

    def refresh(self) -> None:
        """Take the config's token again when the file changed since it was last read."""
        if self._follow is None:
            return
        stamp = self._stat()
        if stamp != self._stamp:
            cfg = load_config()
            self._stamp = stamp
            self.token = str(cfg["token"]) if cfg.get("token") else None
            self._expires = cfg.get("expiresAt")

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        from acx.cli.client import _expired

        self.refresh()
        if self._follow is not None and _expired(self._expires):
            raise CliError(
                f"the token expired at {self._expires}: {LOGIN_LINE}", status=401, code=ERR_TOKEN_EXPIRED
            )
        try:
            return super().call(method, path, **kwargs)
        except CliError as exc:
            if exc.status == 401:
                exc.message = f"the service refused the token ({exc.message}): {LOGIN_LINE}"
            raise


class Memory:
    """A package's memories in the acx service: remember, search, get, list, update, history,
    invalidate, forget. Arguments override ``$ACX_*`` and the config of ``acx login``."""

    def __init__(
        self,
        package: str | None = None,
        *,
        endpoint: str | None = None,
        token: str | None = None,
        timeout: float = 60.0,
        api: Any = None,
    ) -> None:
        cfg = load_config()
        self.package = package or os.environ.get("ACX_PACKAGE") or cfg.get("package")
        if not self.package or not is_package_id(str(self.package)):
            raise CliError(
                "no valid package: pass Memory(package=...), set ACX_PACKAGE or `acx login --package PKG` "
                "(1-64 characters of [a-z0-9-])"
            )
        if api is not None:
            self.api = api
            return
        endpoint = endpoint or os.environ.get("ACX_ENDPOINT") or cfg.get("endpoint")
        if not endpoint:
            raise CliError("not logged in: run `acx login --endpoint URL --token TOKEN` (or --local)")
        explicit = token or os.environ.get("ACX_TOKEN")
        self.api = ConfigApi(
            str(endpoint),
            explicit or (str(cfg["token"]) if cfg.get("token") else None),
            timeout,
            None if explicit else config_path(),
        )

    def _call(self, method: str, *path: str, **kwargs: Any) -> Any:
        return self.api.call(method, pkg_path(str(self.package), *path), **kwargs)[1]

    # -- writing ---------------------------------------------------------------------------------

    def remember(
        self,
        text: str | list[str],
        *,
        title: str | None = None,
        tags: list[str] | None = None,
        impact: str | None = None,
        repo: str | bool | os.PathLike[str] | None = None,
        on_forgotten: str = "refuse",
    ) -> Remembered:
        """Store one lesson (or a list of them, one bundle) in plain words. ``repo=True`` binds it to
        the working directory's repository, ``repo="URL or path"`` to that one: only the salted
        fingerprint is sent. ``on_forgotten="skip"`` stores the rest when one was forgotten before."""
        texts = [text] if isinstance(text, str) else list(text)
        if not texts:
            raise rec.RecordInputError("nothing to remember: give a text or a list of texts")
        if len(texts) > rec.BATCH_MAX:
            raise rec.RecordInputError(f"at most {rec.BATCH_MAX} memories in one call")
        if title and len(texts) > 1:
            raise rec.RecordInputError("title names one memory: leave it out for a list")
        fingerprint = None
        if repo is not None and repo is not False:
            fingerprint = rec.repo_fingerprint(None if repo is True else str(repo))
        records = [
            rec.build_record(t, title=title, tags=tags, impact=impact, fingerprint=fingerprint) for t in texts
        ]
        return self.remember_records(records, on_forgotten=on_forgotten)

    def remember_records(self, records: list[dict[str, Any]], *, on_forgotten: str = "refuse") -> Remembered:
        """Upload full ACX records as one bundle (the same format plain words become)."""
        out = self._call(
            "POST", "bundles", json_body=rec.bundle_of(records), query={"onForgotten": on_forgotten}
        )
        return Remembered(
            ids=[str(r.get("id")) for r in records],
            accepted=int(out.get("accepted") or 0),
            merged=int(out.get("merged") or 0),
            unchanged=int(out.get("unchanged") or 0),
            skipped=list(out.get("skipped") or []),
            log=out.get("log"),
        )

    def update(
        self,
        id: str,
        text: str,
        *,
        title: str | None = None,
        tags: list[str] | None = None,
        impact: str | None = None,
        valid_from: str | None = None,
    ) -> Updated:
        """Correct a memory: a new version supersedes the current one, which stays in the history."""
        current = self._call("GET", "memories", id)
        record = rec.revise_record(current.get("record") or {}, text, title=title, tags=tags, impact=impact)
        body: dict[str, Any] = {"record": record}
        if valid_from:
            body["validFrom"] = valid_from
        out = self._call("PUT", "memories", id, json_body=body)
        return Updated(
            id=str(out.get("id") or id),
            seq=out.get("seq"),
            supersedes=out.get("supersedes"),
            valid_from=out.get("validFrom"),
        )

    def invalidate(self, id: str, reason: str, *, valid_until: str | None = None) -> dict[str, Any]:
        """End a memory's valid time (now, or ``valid_until``) without erasing it; the history keeps it."""
        body = {"reason": reason, **({"validUntil": valid_until} if valid_until else {})}
        return dict(self._call("POST", "memories", id, "invalidate", json_body=body) or {})

    def forget(self, id: str) -> Forgotten:
        """Erase a memory for good: its text is gone everywhere and the same knowledge is refused back."""
        out = self._call("DELETE", "memories", id)
        return Forgotten(
            id=str(out.get("forgotten") or id),
            also_forgotten=list(out.get("alsoForgotten") or []),
            repeated=bool(out.get("repeated")),
            log=out.get("log"),
        )

    # -- reading ---------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        tier: str | None = None,
        tag: str | None = None,
        as_of: str | None = None,
        floor: bool = True,
        trust: str | None = None,
    ) -> SearchResult:
        """The ``k`` most relevant memories; with ``floor`` (default) results that match neither the
        query's words nor (with a semantic engine) its meaning are dropped and counted. Beliefs only
        unless ``trust`` is ``candidate`` or ``any`` (then each hit says its ``trust``)."""
        query_ = {"q": query, "k": k, "tier": tier, "tag": tag, "asOf": as_of, "trust": trust}
        out = self._call("GET", "memories", "search", query=query_)
        engine = out.get("engine")
        kept = [r for r in out.get("results") or [] if not floor or relevant(r, engine)]
        hits = []
        for r in kept:
            record = r.get("record") or {}
            signals = r.get("signals") or {}
            hits.append(
                Hit(
                    id=str(r.get("id")),
                    title=str(record.get("title") or ""),
                    summary=str(record.get("summary") or ""),
                    score=float(r.get("score") or 0.0),
                    lexical_terms=list((signals.get("lexical") or {}).get("terms") or []),
                    vector_score=(signals.get("vector") or {}).get("score"),
                    record=record,
                    valid_from=r.get("validFrom"),
                    trust=str(r.get("trust") or "belief"),
                )
            )
        return SearchResult(
            advisory=str(out.get("advisory") or ADVISORY),
            hits=hits,
            below_floor=len(out.get("results") or []) - len(kept),
            engine=engine,
        )

    def get(self, id: str, *, as_of: str | None = None, trust: str | None = None) -> Item:
        """One memory by id (as it stood at ``as_of``, RFC 3339, when given); a candidate only with
        ``trust`` ``candidate`` or ``any``."""
        out = self._call("GET", "memories", id, query={"asOf": as_of, "trust": trust})
        return Item.of(out.get("record") or {}, out)

    def list(
        self,
        *,
        tier: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        as_of: str | None = None,
        trust: str | None = None,
    ) -> Page:
        """A page of memories (``next_cursor`` continues it); beliefs only unless ``trust`` is
        ``candidate`` or ``any`` (each item's ``trust`` comes from the page's ``meta``)."""
        out = self._call(
            "GET",
            "memories",
            query={"tier": tier, "tag": tag, "limit": limit, "cursor": cursor, "asOf": as_of, "trust": trust},
        )
        meta = {m.get("id"): m for m in out.get("meta") or [] if isinstance(m, dict)}
        return Page(
            advisory=str(out.get("advisory") or ADVISORY),
            items=[
                Item.of(r, meta.get(r.get("id"))) for r in out.get("records") or [] if isinstance(r, dict)
            ],
            next_cursor=out.get("nextCursor"),
            corrupt=bool(out.get("corrupt")),
        )

    def history(self, id: str) -> History:
        """Every version of a memory, oldest first, with valid time and record time."""
        out = self._call("GET", "memories", id, "history")
        return History(
            id=str(out.get("id") or id),
            versions=[
                Version(
                    seq=v.get("seq"),
                    operation=str(v.get("operation") or ""),
                    record=v.get("record"),
                    valid_from=v.get("validFrom"),
                    valid_until=v.get("validUntil"),
                    recorded_at=v.get("recordedAt"),
                    actor=v.get("actor"),
                )
                for v in out.get("versions") or []
            ],
        )

    def verify_log(self) -> dict[str, Any]:
        """The server's verification of the package's receipted, hash-chained log."""
        return dict(self._call("GET", "log", "verify"))
