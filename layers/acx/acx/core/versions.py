"""Versions of a memory and their valid time (DESIGN §1.3, invariant 11): pure decisions.

A memory (one record id) lives as a sequence of log entries naming its row key ``r#<id>``:

- ``remember`` begins a version when none is open, and otherwise refines the open one (a re-upload
  merged into it: the merge keeps the longer text, the union of tags), so its valid time goes on;
- ``supersede`` ends the open version at the new one's ``validFrom`` and begins that new version
  (supersession is not forget: the old version stays in the history and in as-of answers);
- ``invalidate`` ends the open version at its ``validUntil``, with no successor;
- ``forget`` ends it and erases every version (their plaintext is gone, their knowledge refused).

Valid time (when a version held true) comes from the entries' ``validFrom``/``validUntil``, and is the
entry's ``createdAt`` (record time: when the log learned it) where they are absent. Both live in the
hash chain, so a history verifies like the content it names.

**As of T** is valid time as the log holds it now: the version whose ``[validFrom, validUntil)``
contains T, among every version the log has recorded (a correction recorded later but valid from
before T answers for T). It is not a transaction-time query ("what did the log say at T"): each
version's ``recordedAt`` in the history gives that, for a caller who needs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from acx.core.log import Entry
from acx.core.merge import instant_key
from acx.core.records import is_rfc3339

#: The operations that write content into a version (the others only end one).
CONTENT = frozenset({"remember", "supersede"})
#: The operations that concern a memory's row key.
MEMORY_OPERATIONS = frozenset({"remember", "supersede", "invalidate", "forget"})
MAX_REASON = 1000


class VersionError(ValueError):
    """A supersede or invalidate that the memory's versions do not allow (the use case answers 422)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message, self.path = message, path


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a memory: what began it, the entry whose content it holds now, its valid time
    (``valid_until`` None: still valid), its record time and writer, and how it ended."""

    first_seq: int  # the remember/supersede entry that began it
    seq: int  # the entry whose content it holds (its latest refinement)
    operation: str  # remember | supersede (of the beginning entry)
    content_hash: str
    entry_hash: str
    valid_from: str
    valid_until: str | None
    recorded_at: str  # createdAt of the entry at ``seq``
    actor: str
    ended_by: str | None = None  # supersede | invalidate | forget | None (open)
    forgotten: bool = False

    @property
    def current(self) -> bool:
        """Open and not forgotten: the version default reads serve."""
        return self.ended_by is None and not self.forgotten

    def valid_at(self, at: str) -> bool:
        """``valid_from <= at < valid_until`` (instants compared across offsets)."""
        t = instant_key(at)
        if instant_key(self.valid_from) > t:
            return False
        return self.valid_until is None or t < instant_key(self.valid_until)


def memory_id(entry: Entry) -> str | None:
    """The record id an entry concerns (its row key ``r#<id>``), None for files and lock entries."""
    if entry.key is None or not entry.key.startswith("r#"):
        return None
    return entry.key[2:] if entry.operation in MEMORY_OPERATIONS else None


def versions(entries: Iterable[Entry]) -> list[Version]:
    """The versions of one memory from its entries (any order; only ``r#`` memory entries count),
    oldest first."""
    out: list[Version] = []
    open_: int | None = None  # index in ``out`` of the open version
    for e in sorted(entries, key=lambda x: x.seq):
        op, p = e.operation, e.payload
        if op not in MEMORY_OPERATIONS:
            continue
        at = str(p["createdAt"])
        if op == "remember" and open_ is not None:
            v = out[open_]  # a merge refined the open version: newer content, same valid time
            out[open_] = replace(v, seq=e.seq, content_hash=e.content_hash, entry_hash=e.hash, recorded_at=at)
            continue
        if open_ is not None:
            end = {"supersede": p.get("validFrom"), "invalidate": p.get("validUntil")}.get(op) or at
            out[open_] = replace(out[open_], valid_until=str(end), ended_by=op)
            open_ = None
        if op == "forget":
            out = [replace(v, forgotten=True) for v in out]
            continue
        if op in CONTENT:
            out.append(
                Version(
                    e.seq,
                    e.seq,
                    op,
                    e.content_hash,
                    e.hash,
                    str(p.get("validFrom") or at),
                    None,
                    at,
                    str(p["actor"]),
                )
            )
            open_ = len(out) - 1
    return out


def by_memory(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    """A log's memory entries grouped by record id (in log order)."""
    out: dict[str, list[Entry]] = {}
    for e in entries:
        rid = memory_id(e)
        if rid is not None:
            out.setdefault(rid, []).append(e)
    return out


def valid_at(history: Sequence[Version], at: str) -> Version | None:
    """The version of one memory valid at ``at`` (not forgotten), or None."""
    for v in reversed(history):
        if not v.forgotten and v.valid_at(at):
            return v
    return None


def check_time(value: Any, path: str) -> str:
    """An RFC 3339 timestamp given by a caller, or :class:`VersionError` naming ``path``."""
    if not isinstance(value, str) or not is_rfc3339(value):
        raise VersionError(f"{path[2:]} must be an RFC 3339 timestamp (e.g. 2026-01-31T12:00:00Z)", path)
    return value


def check_end(current: Version, end: str | None, now: str, path: str) -> None:
    """May ``current`` end at ``end`` (None: now)? Only within its own valid time and not in the future:
    a version cannot end before it began, and a future end would serve it as current while it is not."""
    if end is None:
        return
    t = instant_key(end)
    if t > instant_key(now):
        raise VersionError(f"{path[2:]} {end} is in the future; give a time up to now", path)
    if t < instant_key(current.valid_from):
        raise VersionError(
            f"{path[2:]} {end} precedes the current version's validFrom {current.valid_from}", path
        )


def check_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """A correction keeps the memory's id, tier and codebase: a memory of another tier or codebase is
    another memory (records never merge across them), remembered on its own."""
    if new.get("id") != old.get("id"):
        raise VersionError("record.id must equal the id in the path", "$.record.id")
    if new.get("portable") != old.get("portable"):
        raise VersionError(
            "an update cannot change portable (the tier): remember it as a new memory instead",
            "$.record.portable",
        )
    if new.get("codebaseFingerprint") != old.get("codebaseFingerprint"):
        raise VersionError(
            "an update cannot change codebaseFingerprint: remember it as a new memory instead",
            "$.record.codebaseFingerprint",
        )


#: The text fields a same-id upload can lose to the merge, and why the merge keeps the other one.
_KEPT_REASONS = {
    "title": "the merge keeps the longer title",
    "summary": "the merge keeps the longer summary",
}


def kept(incoming: Mapping[str, Any], survivor: Mapping[str, Any], update_path: str) -> list[dict[str, str]]:
    """What the merge kept instead of an incoming record's text: one entry per field whose incoming
    value differs from the stored survivor's, pointing at the route that corrects it."""
    out = []
    for name, why in _KEPT_REASONS.items():
        if incoming.get(name) != survivor.get(name):
            out.append(
                {
                    "id": str(incoming.get("id")),
                    "field": name,
                    "reason": f"{why}; to correct it, use PUT {update_path}",
                }
            )
    return out
