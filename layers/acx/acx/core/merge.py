"""The memory merge (ACX v0.1 §7): dedupe by id and by content slot, never across tiers.

Records are folded in *components*: two records belong together when they share an ``id`` or a content
slot (:func:`acx.core.fingerprint.slot_key`: full content address + zone + codebase), transitively. Each
component is folded with :func:`_fold`, whose every field is a join in a total order (smallest id for
the base fields, longest title/summary, worst impact, max xp, union of tags, latest timestamp), so a
component's survivor does not depend on arrival order. Survivors whose folded content lands on the
same slot are folded again until no two survivors share a slot, so the output is a fixpoint
(``merge_records(merge_records(x)) == merge_records(x)``).

Limit worth knowing: folding forgets the ids and slots of the folded records. If record A shares a slot
with B and B shares an id with C, merging {A, B} first and C later is not the same as merging all
three at once (the first merge keeps only A's id, so C no longer links). No record-only merge can
avoid this; the service merges each bundle against the store in one step, which is exact.

Strings compare as JavaScript does (UTF-16 code units), so two implementations pick the same survivor.

One module: the keys, the fold rules, the linking and the two drivers (a batch, a
batch against the store) are one algorithm whose parts must change together to keep the fixpoint.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, ParamSpec, TypeVar

import orjson

from acx.core.canonical import MAX_SAFE_INTEGER, dumps_record
from acx.core.fingerprint import _JS_WHITESPACE, artifact_fingerprint, slot_key
from acx.core.records import zone_for

Record = dict[str, Any]
Lookup = Callable[[set[str], set[str]], tuple[dict[str, Record], dict[str, Record]]]

_P = ParamSpec("_P")
_R = TypeVar("_R")

_IMPACT_RANK = {"positive": 0, "neutral": 1, "negative": 2}
_TS_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
# Sorts before every parseable timestamp, so a malformed one never wins "latest".
_NO_INSTANT: tuple[int, str] = (-(1 << 62), "")


class MergeConflict(ValueError):
    """Two records of one memory that differ in tier or codebase: they must never be folded.

    The message names the two ids only (never content, which may hold a secret).
    """

    def __init__(self, first_id: str, second_id: str, reason: str = "tier or codebaseFingerprint") -> None:
        super().__init__(f"refusing to merge records {first_id!r} and {second_id!r}: they differ in {reason}")
        self.ids = (first_id, second_id)
        self.reason = reason


def utf16_key(text: str) -> bytes:
    """Sort key ordering strings by UTF-16 code units, as JavaScript's ``<`` and default sort do."""
    return text.encode("utf-16-be", "surrogatepass")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (JavaScript ``.length``)."""
    return len(text) if text.isascii() else len(utf16_key(text)) // 2


def _days_from_civil(year: int, month: int, day: int) -> int:
    # Howard Hinnant's algorithm: days since 1970-01-01 in the proleptic Gregorian calendar.
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def instant_key(timestamp: Any) -> tuple[int, str]:
    """(UTC epoch seconds, fraction digits) of an RFC 3339 timestamp: orders instants across offsets.

    The fraction is kept as digits without trailing zeros, whose string order equals numeric order, so
    sub-microsecond precision is never lost. Unparseable values sort before every real instant.
    """
    if type(timestamp) is not str:
        return _NO_INSTANT
    match = _TS_RE.fullmatch(timestamp)
    if match is None:
        return _NO_INSTANT
    y, mo, d, h, mi, s, frac, zulu, sign, oh, om = match.groups()
    seconds = ((_days_from_civil(int(y), int(mo), int(d)) * 24 + int(h)) * 60 + int(mi)) * 60 + int(s)
    if zulu is None:
        offset = int(oh) * 3600 + int(om) * 60
        seconds -= offset if sign == "+" else -offset
    return (seconds, (frac or "").rstrip("0"))


def slot_keys(records: list[Record]) -> list[str]:
    """``[slot_key(r) for r in records]``, several times faster on typical records.

    The merge hashes every record; this builds the artifact object with its keys already in RFC 8785
    order and hands it to orjson, whose output is the canonical form for these value types (strings,
    null, safe integers). Anything else (a non-integral xp, odd types) takes :func:`slot_key`; a test
    checks both agree.
    """
    ws = _JS_WHITESPACE
    dumps = orjson.dumps
    sha1 = hashlib.sha1
    out: list[str] = []
    append = out.append
    for record in records:
        get = record.get
        title, summary, source, project = get("title"), get("summary"), get("sourceType"), get("projectLabel")
        repo, ts, impact, xp, tags = (
            get("repoId"),
            get("timestamp"),
            get("impact"),
            get("xpAwarded"),
            get("tags"),
        )
        if type(xp) is float and (xp.is_integer() or not 1e-5 <= xp < 1e15):
            xp = int(xp) if xp.is_integer() and xp <= MAX_SAFE_INTEGER else None  # RFC 8785 writes 1.0 as 1
        if (
            (type(xp) is not int and type(xp) is not float)
            or not 0 <= xp <= MAX_SAFE_INTEGER
            or type(title) is not str
            or type(summary) is not str
            or type(source) is not str
            or type(project) is not str
            or type(ts) is not str
            or type(impact) is not str
            or (repo is not None and type(repo) is not str)
            or type(tags) is not list
        ):
            append(slot_key(record))
            continue
        norm: list[str] = []
        if tags:
            for tag in tags:  # a plain loop and a list: ~2x faster than all() and sorted(genexpr)
                if type(tag) is not str:
                    break
            else:
                norm = [tag.lower() for tag in tags]
                norm.sort(key=None if "".join(tags).isascii() else utf16_key)
            if len(norm) != len(tags):  # a tag that is not a string
                append(slot_key(record))
                continue
        body = dumps(
            {
                "impact": impact,
                "projectLabel": project.strip(ws).lower(),
                "repoId": repo,
                "sourceType": source.strip(ws).lower(),
                "summary": summary.strip(ws).lower(),
                "tags": norm,
                "timestamp": ts,
                "title": title.strip(ws).lower(),
                "xpAwarded": xp,
            }
        )
        cbf = get("codebaseFingerprint")
        append(f"{sha1(body, usedforsecurity=False).hexdigest()}|{zone_for(get('portable'))}|{cbf or ''}")
    return out


def _check_partition(a: Record, b: Record) -> None:
    if a.get("portable") is not b.get("portable"):
        raise MergeConflict(str(a.get("id")), str(b.get("id")), "tier (portable)")
    if a.get("codebaseFingerprint") != b.get("codebaseFingerprint"):
        raise MergeConflict(str(a.get("id")), str(b.get("id")), "codebaseFingerprint")


def _precedes(a: Record, b: Record) -> bool:
    """Total order picking the base record: smaller id (UTF-16), then smaller canonical bytes."""
    ka, kb = utf16_key(a["id"]), utf16_key(b["id"])
    if ka != kb:
        return ka < kb
    return dumps_record(a) <= dumps_record(b)


def _better_text(a: Any, b: Any) -> Any:
    """The longer string (UTF-16 length); equal length: the smaller in UTF-16 order."""
    if type(a) is not str:
        return b if type(b) is str else a
    if type(b) is not str or a == b:
        return a
    la, lb = utf16_len(a), utf16_len(b)
    if la != lb:
        return a if la > lb else b
    return a if utf16_key(a) < utf16_key(b) else b


def _worse_impact(a: Any, b: Any) -> Any:
    ra, rb = _IMPACT_RANK.get(a, -1), _IMPACT_RANK.get(b, -1)
    return a if ra >= rb else b


def _more_xp(a: Any, b: Any) -> Any:
    na, nb = type(a) in (int, float), type(b) in (int, float)
    if not (na and nb):
        return a if na else b
    if a != b:
        return a if a > b else b
    return a if type(a) is int else b  # 1 and 1.0: prefer the integer, whichever came first


def _later(a: Any, b: Any) -> Any:
    """The later instant; the same instant written two ways: the smaller string (UTF-16 order)."""
    ka, kb = instant_key(a), instant_key(b)
    if ka != kb:
        return a if ka > kb else b
    if type(a) is not str or type(b) is not str:
        return a if type(a) is str else b
    return a if utf16_key(a) <= utf16_key(b) else b


def _sorted_tags(tags: Iterable[Any]) -> list[Any]:
    unique = set(tags)
    for tag in unique:  # a plain loop: twice as fast as all(...) on a handful of tags
        if type(tag) is not str:
            return sorted(unique, key=repr)  # not reachable for validated records; still deterministic
    if "".join(unique).isascii():
        return sorted(unique)
    return sorted(unique, key=utf16_key)


def _fold(group: list[Record], fingerprint: bool = True) -> Record:
    """The survivor of records of one memory (all in one partition); ``fingerprint=False`` leaves the
    ``artifactFingerprint`` to the caller, which hashes survivors in a batch."""
    base = group[0]
    for other in group[1:]:
        if _precedes(other, base):
            base = other
    out = dict(base)
    title, summary = base.get("title"), base.get("summary")
    impact, xp, ts = base.get("impact"), base.get("xpAwarded"), base.get("timestamp")
    tags_union: list[Any] = []
    for other in group:
        if other is base:
            continue
        _check_partition(base, other)
        title = _better_text(title, other.get("title"))
        summary = _better_text(summary, other.get("summary"))
        impact = _worse_impact(impact, other.get("impact"))
        xp = _more_xp(xp, other.get("xpAwarded"))
        ts = _later(ts, other.get("timestamp"))
    has_tags = False
    for other in group:
        tags = other.get("tags")
        if isinstance(tags, list):
            has_tags = True
            tags_union.extend(tags)
    for name, value in (
        ("title", title),
        ("summary", summary),
        ("impact", impact),
        ("xpAwarded", xp),
        ("timestamp", ts),
    ):
        if value is not None or name in out:
            out[name] = value
    if has_tags:
        out["tags"] = _sorted_tags(tags_union)
    if fingerprint:
        out["artifactFingerprint"] = artifact_fingerprint(out)
    return out


def survivor(a: Record, b: Record) -> Record:
    """Deterministic fold of two records of the same memory (order of ``a`` and ``b`` is irrelevant).

    Raises :class:`MergeConflict` when they differ in tier or codebase: such records are never folded.
    """
    _check_partition(a, b)
    return _fold([a, b])


class _Groups:
    """Union-find over record indices, linking records that share an id or a slot."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            if ri < rj:
                ri, rj = rj, ri
            self.parent[ri] = rj


def _repeats(first: dict[str, int], n: int) -> list[int]:
    """Indices below ``n`` that are not the first index of their key (``first``: key -> first index).

    Works on the small integers only: touching 50k scattered id strings again costs more."""
    firsts = set(first.values())
    return [i for i in range(n) if i not in firsts]


def _tier_of(slot: str) -> str:
    """The ``zone|codebase`` part of a slot key: equal exactly when two validated records share a tier."""
    return slot.partition("|")[2]


def link(ids: list[str], slots: list[str]) -> list[list[int]]:
    """Indices of the records that share an id or a slot with another (transitively), one ascending
    list per group, groups ordered by their smallest index; records linked to none are left out.

    Needs only each record's id and slot key (whose tier part says its tier), so records parsed in
    another process can be linked from those two strings. Raises :class:`MergeConflict` when one id
    is used in two tiers or codebases."""
    n = len(ids)
    # dict(zip(reversed...)) keeps the first index of each key, in C; only repeats need a union.
    first_id = dict(zip(reversed(ids), range(n - 1, -1, -1), strict=True))
    first_slot = dict(zip(reversed(slots), range(n - 1, -1, -1), strict=True))
    if len(first_id) == n and len(first_slot) == n:
        return []
    groups = _Groups(n)
    touched: set[int] = set()
    conflicts: list[tuple[bytes, str]] = []
    if len(first_id) != n:
        for i in _repeats(first_id, n):
            j = first_id[ids[i]]
            if _tier_of(slots[j]) != _tier_of(slots[i]):
                conflicts.append((utf16_key(ids[i]), ids[i]))
            groups.union(i, j)
            touched.update((i, j))
    if len(first_slot) != n:
        for i in _repeats(first_slot, n):
            j = first_slot[slots[i]]
            groups.union(i, j)
            touched.update((i, j))
    if conflicts:
        rid = min(conflicts)[1]  # the same refusal whatever the arrival order
        zones = {_tier_of(slot).partition("|")[0] for i, slot in enumerate(slots) if ids[i] == rid}
        raise MergeConflict(rid, rid, "tier (portable)" if len(zones) > 1 else "codebaseFingerprint")
    members: dict[int, list[int]] = {}
    find = groups.find
    for i in sorted(touched):
        members.setdefault(find(i), []).append(i)
    return list(members.values())


def _components(ids: list[str], slots: list[str]) -> list[list[int]]:
    """Indices grouped by "same id or same slot" (transitively), every record in exactly one list,
    lists ordered by their smallest index; refuses cross-tier ids."""
    groups = link(ids, slots)
    if not groups:
        return [[i] for i in range(len(ids))]
    by_first = {group[0]: group for group in groups}
    grouped = {i for group in groups for i in group}
    return [by_first.get(i) or [i] for i in range(len(ids)) if i in by_first or i not in grouped]


def _folded(groups: list[list[Record]]) -> list[tuple[Record, str]]:
    """Fold each group; returns survivors with their slot (hashed in one fast batch)."""
    outs = [_fold(g, fingerprint=False) for g in groups]
    slots = slot_keys(outs)
    for out, slot in zip(outs, slots, strict=True):
        out["artifactFingerprint"] = slot[:10]  # a slot key starts with the full content address
    return list(zip(outs, slots, strict=True))


def fold_groups(records: list[Record], groups: list[list[int]]) -> list[tuple[Record, str]]:
    """Survivor and slot of each group of indices into ``records`` (the groups of :func:`link`)."""
    return _folded([[records[i] for i in group] for group in groups])


def normalise(records: list[Record], slots: list[str]) -> list[tuple[Record, str]]:
    """Survivor and slot of each record linked to no other (``slots``: their slot keys): a copy with
    its tags sorted and unique and its own fingerprint. Dropping a duplicate tag moves the content,
    so those few are hashed again."""
    current: list[tuple[Record, str]] = []
    retag: list[int] = []
    for record, slot in zip(records, slots, strict=True):
        out = dict(record)
        tags = record.get("tags")
        if type(tags) is list:
            if len(tags) > 1:
                unique = _sorted_tags(tags)
                if len(unique) != len(tags):
                    retag.append(len(current))
                out["tags"] = unique
            else:
                out["tags"] = list(tags)
        out["artifactFingerprint"] = slot[:10]
        current.append((out, slot))
    if retag:
        fresh = slot_keys([current[k][0] for k in retag])
        for k, slot in zip(retag, fresh, strict=True):
            out = current[k][0]
            out["artifactFingerprint"] = slot[:10]
            current[k] = (out, slot)
    return current


def _merge(records: list[Record], slots: list[str] | None = None) -> list[tuple[Record, str, list[int]]]:
    """Survivors with their slot and the indices (into ``records``) of every record folded into them."""
    if slots is None:
        slots = slot_keys(records)
    multi = link([r["id"] for r in records], slots)
    grouped = {i for group in multi for i in group}
    lone = [i for i in range(len(records)) if i not in grouped]
    normalised = normalise([records[i] for i in lone], [slots[i] for i in lone])
    current = [(out, slot, [i]) for i, (out, slot) in zip(lone, normalised, strict=True)]
    for (out, slot), comp in zip(fold_groups(records, multi), multi, strict=True):
        current.append((out, slot, comp))
    # Fixpoint: folded content may land on another survivor's slot; fold those too.
    while True:
        if len({entry[1] for entry in current}) == len(current):
            return current
        outs = [c[0] for c in current]
        nxt: list[tuple[Record, str, list[int]]] = []
        again: list[list[int]] = []
        for comp in _components([out["id"] for out in outs], [c[1] for c in current]):
            if len(comp) == 1:
                nxt.append(current[comp[0]])
            else:
                again.append([i for k in comp for i in current[k][2]])
        refolded = _folded([[records[i] for i in m] for m in again])
        for (out, slot), members in zip(refolded, again, strict=True):
            nxt.append((out, slot, members))
        current = nxt


def collector_paused(merge: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``merge`` with Python's cyclic garbage collector paused (restored as it was, also on error).

    A merge allocates a few containers per record (copies, groups, plan lists) and makes no reference
    cycles, yet every 700 allocations the collector walks the young objects and, as they pile up,
    every live record again: for 100k records that was a third to a half of ``merge_into``'s time.
    Whatever cyclic garbage the store ``lookup`` leaves is collected after (ingest's peak memory for a
    100k-record upload was 749 MiB with the pause, 747 MiB without).
    """

    @functools.wraps(merge)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return merge(*args, **kwargs)
        gc.disable()
        try:
            return merge(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@collector_paused
def merge_records(records: Iterable[Record], slots: list[str] | None = None) -> list[Record]:
    """Merge records (already validated) into one survivor per memory, sorted by id (UTF-16 order).

    The result is the same for every arrival order. Raises :class:`MergeConflict` when one id is used
    in two tiers or codebases. ``slots``, when given, is ``slot_keys(records)`` computed beforehand
    (the CLI hashes records while it validates them).
    """
    pool = records if isinstance(records, list) else list(records)
    survivors = [entry[0] for entry in _merge(pool, slots)]
    _sort_by_id(survivors)
    return survivors


def _sort_by_id(records: list[Record]) -> None:
    by_id = itemgetter("id")
    if "".join(map(by_id, records)).isascii():
        records.sort(key=by_id)  # ASCII: code point order is UTF-16 order
    else:
        records.sort(key=lambda r: utf16_key(r["id"]))


@dataclass
class MergePlan:
    """What to change in a store so that it holds ``merge(store + incoming)``.

    ``writes`` are survivors that are new or whose canonical bytes changed; ``retired`` are stored ids
    folded into a survivor with another id (their rows go away), and ``absorbed`` says which survivor
    took each (so forgetting the survivor also refuses them). Every incoming record is counted
    exactly once in ``accepted`` (a new memory), ``merged`` (folded into an existing or another incoming
    record) or ``unchanged`` (a re-upload of a stored record that changes nothing).
    """

    writes: list[Record] = field(default_factory=list)
    write_slots: list[str] = field(default_factory=list)  # slot key of each write, in the same order
    retired: list[str] = field(default_factory=list)
    absorbed: dict[str, list[str]] = field(default_factory=dict)  # survivor id -> its retired ids
    unchanged: int = 0
    merged: int = 0
    accepted: int = 0


@collector_paused
def merge_into(lookup: Lookup, incoming: list[Record], slots: list[str] | None = None) -> MergePlan:
    """Plan the merge of ``incoming`` (validated) records into a store reached only through ``lookup``.

    ``lookup(ids, slots)`` returns the stored records ``({id: record}, {slot: record})`` for exactly
    those keys: the store is read by key, O(len(incoming)), never scanned. The stored records are
    assumed to be merge survivors (unique ids, unique slots). The plan applied to the store gives the
    same records as :func:`merge_records` over the stored and incoming records together.
    ``slots``: ``slot_keys(incoming)`` when the caller already has them (ingest hashes them once).
    """
    inc_slots = slot_keys(incoming) if slots is None else slots
    by_id, by_slot = lookup({r["id"] for r in incoming}, set(inc_slots))
    stored: dict[str, Record] = dict(by_id)
    for record in by_slot.values():
        stored.setdefault(record["id"], record)
    queried = set(inc_slots)
    while True:  # ends: every round adds stored records, and the store is finite
        pool_stored = list(stored.values())
        pool = pool_stored + list(incoming)
        slots = slot_keys(pool_stored) + inc_slots
        result = _merge(pool, slots)
        fresh = {slot for _, slot, _ in result} - queried
        if not fresh:
            break
        queried |= fresh
        _, found = lookup(set(), fresh)
        added = [r for r in found.values() if r["id"] not in stored]
        if not added:
            break
        for record in added:
            stored[record["id"]] = record
    n_stored = len(pool_stored)
    plan = MergePlan()
    for out, slot, members in sorted(result, key=lambda e: utf16_key(e[0]["id"])):
        old = [pool[i] for i in members if i < n_stored]
        n_in = sum(1 for i in members if i >= n_stored)
        if not old:
            plan.writes.append(out)
            plan.write_slots.append(slot)
            plan.accepted += 1
            plan.merged += n_in - 1
            continue
        retired = [r["id"] for r in old if r["id"] != out["id"]]
        same_id = [r for r in old if r["id"] == out["id"]]
        changed = not same_id or dumps_record(same_id[0]) != dumps_record(out)
        if changed or retired:
            plan.writes.append(out)
            plan.write_slots.append(slot)
            plan.retired.extend(retired)
            if retired:
                plan.absorbed[out["id"]] = sorted(retired, key=utf16_key)
            plan.merged += n_in
        else:
            # Nothing to write: a re-upload of the stored record is unchanged; a copy under another id
            # was folded into it (its id is gone) and counts as merged.
            same = sum(1 for i in members if i >= n_stored and pool[i]["id"] == out["id"])
            plan.unchanged += same
            plan.merged += n_in - same
    plan.retired.sort(key=utf16_key)
    return plan
