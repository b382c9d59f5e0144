"""What a forget erases, what it files, and what the tombstones then refuse: the decisions, pure.

The log store reads the rows and tombstone items and carries these decisions out under its lease;
every implementation of the log (DynamoDB, the test fakes) calls the same functions, so the rule is
written once. Tombstones hold keyed hashes only (:mod:`acx.core.forgetting`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from acx.core import forgetting
from acx.core.rows import LogRow, Tombstones

#: band key -> {tombstone id: (sketch, forget seq)}: the near-copy items a probe's bands name
Bands = Mapping[str, dict[str, tuple[tuple[int, ...], int]]]


def target_by_content_hash(rows: Iterable[LogRow], content_hash: str) -> LogRow | None:
    """The row a forget by content hash names: the active row with that hash, else the first
    tombstoned one (a tombstoned row keeps its content hash: forgetting it again answers the first
    forget), else None."""
    found = None
    for row in rows:
        if row.content_hash == content_hash:
            if row.active:
                return row
            found = found or row
    return found


def holds_knowledge(row: LogRow, knowledge: str) -> bool:
    """Whether a row not yet forgotten (active, or ``ended`` by an invalidate: its versions still
    hold text) has this knowledge key in its text or an older version folded into it."""
    return not row.forgotten and (row.knowledge == knowledge or knowledge in row.past_keys)


def erased_rows(
    target: LogRow, same_knowledge: Iterable[LogRow], in_versions: Collection[str] = ()
) -> list[LogRow]:
    """The rows a forget of ``target`` erases, target first: the target unless already forgotten
    (an invalidated memory still holds its versions' text), then every other such row holding the
    target's knowledge key (both tiers, whatever their id), or one of the ``in_versions`` ids, whose
    ended versions hold it (:mod:`acx.core.versions`). Empty: the forget was already done, its answer
    is the first forget's. ``same_knowledge`` is what the store read for that key; rows that do not
    hold it are ignored."""
    out = [] if target.forgotten else [target]
    if target.knowledge:
        seen = {target.id}
        for r in same_knowledge:
            if r.id not in seen and (
                holds_knowledge(r, target.knowledge) or (r.id in in_versions and not r.forgotten)
            ):
                seen.add(r.id)  # a row the store read twice (its text and a version) is erased once
                out.append(r)
    return out


def refused_keys(row: LogRow) -> list[str]:
    """The knowledge keys a forgotten row's tombstones refuse: its own and its older versions'."""
    return [k for k in [row.knowledge, *row.past_keys] if k]


def tombstones_of(keyer: forgetting.Keyer, near: forgetting.NearPolicy, row: LogRow) -> Tombstones:
    """The tombstones a forgotten row files: its knowledge key and its older versions' keys (exact),
    its id and the ids folded into it (keyed), and the sketch of its text (near copies)."""
    record = row.record or {}
    kk = row.knowledge or forgetting.knowledge_key(keyer, record.get("title"), record.get("summary"))
    sk = forgetting.record_sketch(keyer, record.get("title"), record.get("summary")) if near.enabled else None
    return Tombstones(
        knowledge=(kk, *row.past_keys),
        ids=tuple(forgetting.id_key(keyer, i) for i in dict.fromkeys([row.id, *row.past_ids])),
        sketches=((kk, sk),) if sk is not None else (),
    )


def tombstone_keys(probes: Sequence[forgetting.Probe], near: forgetting.NearPolicy) -> list[str]:
    """The tombstone keys that can refuse these probes: ``k#<knowledge>`` and ``i#<id key>`` of each,
    and ``n#<band>`` of their near-copy bands when the near rule is on. A store reads these by key,
    so the check costs the same however many tombstones the package holds."""
    keys = [f"k#{p.knowledge}" for p in probes] + [f"i#{p.id_key}" for p in probes]
    if near.enabled:
        keys += [f"n#{bk}" for bk in dict.fromkeys(bk for p in probes for bk in p.bands)]
    return keys


def blocked(
    probes: Sequence[forgetting.Probe],
    found: Mapping[str, int],
    bands: Bands,
    near: forgetting.NearPolicy,
) -> list[forgetting.Hit]:
    """The probes a tombstone refuses, in upload order, one hit each: an exact knowledge key first,
    then the id, then (near rule on) a near copy of a sketch filed under one of its bands.
    ``found``: the ``k#``/``i#`` tombstone keys present -> their forget seq; ``bands``: band key ->
    sketches filed under it."""
    hits: dict[int, forgetting.Hit] = {}
    for p in probes:
        for rule, k in (("exact", f"k#{p.knowledge}"), ("id", f"i#{p.id_key}")):
            if k in found and p.index not in hits:
                hits[p.index] = forgetting.Hit(p.index, p.record_id, rule, found[k])
    if near.enabled:
        rest = [p for p in probes if p.index not in hits]
        for h in forgetting.near_hits(dict(bands), rest, near.threshold):
            hits[h.index] = h
    return [hits[i] for i in sorted(hits)]
