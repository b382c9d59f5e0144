"""Trust state and human review: the pure rules (DESIGN §1.3 "Vouched for", invariant 12).

A memory is a ``candidate`` or a ``belief``. How it enters depends on the package's review policy
(``none``: beliefs at once, the default and the service's behaviour before review existed;
``required``: candidates) and on where it came from: an imported or foreign record always enters as a
candidate. Default reads serve beliefs only; ``trust=candidate|any`` asks for candidates too, and
every answer that may hold them says so in its advisory.

A person with the ``memory:review`` scope decides a candidate: ``approve`` (it becomes a belief),
``reject`` (it is forgotten: the tombstone refuses it back) or ``edit`` (a corrected version, approved).
Each decision is a receipted ``review`` entry naming the reviewer. No token decides its own
candidates: the reviewer's actor (tenant/subject) must differ from the author's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from acx.core import forgetting
from acx.core import log as logcore
from acx.core.append import EntrySpec
from acx.core.canonical import sha256_hex
from acx.core.rows import Conflict, LogRow, RecordWrite

POLICIES = ("none", "required")
DEFAULT_POLICY = "none"
TRUST_FILTERS = ("belief", "candidate", "any")
DEFAULT_TRUST_FILTER = "belief"
BELIEF = "belief"
CANDIDATE = "candidate"
#: ``edit`` is approve with a corrected record: a supersession of the candidate.
DECISIONS = ("approve", "reject", "edit")
#: Estimated word-pair Jaccard from which a belief is shown beside a candidate as its near duplicate
#: (the near-copy rule of :mod:`acx.core.forgetting`).
NEAR_THRESHOLD = forgetting.DEFAULT_NEAR_THRESHOLD
_SKETCH_KEY = forgetting.StaticKeyer(b"acx-review-near-duplicate-sketch-v1")  # compared, never stored


def is_foreign(record: Mapping[str, Any]) -> bool:
    """Whether a record came from elsewhere: ``origin: imported``, ``foreign: true`` or an
    ``importedFrom`` (a quarantined field-learned record, or one imported from a cartridge)."""
    return (
        record.get("origin") == "imported"
        or record.get("foreign") is True
        or bool(record.get("importedFrom"))
    )


def entry_state(policy: str, record: Mapping[str, Any]) -> str:
    """The trust state a written version enters with: a candidate under ``review: required`` or when
    the record is imported or foreign; a belief otherwise. Applies to a merge's survivor too: new
    content merged into a belief under ``required`` is a candidate until reviewed."""
    if policy not in POLICIES:
        raise ValueError(f"review policy must be one of {', '.join(POLICIES)}")
    return CANDIDATE if policy == "required" or is_foreign(record) else BELIEF


def admits(policy: str | None, trust: str) -> bool:
    """Whether a version may enter in ``trust`` under ``policy`` (None: never set): a candidate always,
    a belief only under ``none``. Checked again under the writer's lease, where the policy cannot
    change, so an upload racing ``PUT .../policy`` never lands a belief under ``required``."""
    return trust == CANDIDATE or (policy or DEFAULT_POLICY) == "none"


def check_admitted(policy: str | None, writes: Iterable[RecordWrite]) -> None:
    """Every log carries this out inside its commit, where no ``policy`` entry can land: ``Conflict``
    when a write would enter as a belief that ``policy`` does not admit (:func:`admits`); the caller
    re-reads the policy and writes candidates."""
    if any(w.trust != CANDIDATE for w in writes) and not admits(policy, "belief"):
        raise Conflict("the review policy changed since it was read")


def vouched(entry_trust: str | None, policy: str | None, approved: bool) -> bool:
    """Whether the log accounts for a belief (the verifier's rule): its entry entered it as a belief
    (``entry_trust`` absent) under a policy that admits beliefs, or a ``review`` approve covers that
    entry. A row turned into a belief in the table, with no such entry, is neither. It does not stop
    a reviewer who approves in bad faith, nor two subjects of one person (the self-approval rule
    compares actors), and it is only as strong as the chain: forged entries are the checkpoint's job."""
    return approved or ((entry_trust or BELIEF) == BELIEF and admits(policy, BELIEF))


def policy_of_hash(content_hash: str) -> str | None:
    """The policy a ``policy`` entry set, from its content hash (sha256 of canonical
    ``{"review": policy}``); None for a hash of no known policy."""
    return next((p for p in POLICIES if sha256_hex({"review": p}) == content_hash), None)


def source_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """Where a record says it came from (the review queue shows it): origin, importedFrom, foreign."""
    origin = record.get("origin")
    return {
        "origin": origin if origin in ("native", "imported") else "native",
        "importedFrom": record.get("importedFrom"),
        "foreign": record.get("foreign") is True,
    }


def serves(trust_filter: str, state: str | None) -> bool:
    """Whether a read with ``trust_filter`` serves a row in ``state`` (None: a row written before trust
    existed, a belief)."""
    state = state or BELIEF
    return trust_filter == "any" or trust_filter == state


def author(actor: str | None, agent: str | None) -> dict[str, str]:
    """A memory's author as answers show it: the writer's actor (tenant/subject) and agent id, if any."""
    out = {"actor": actor or "unknown"}
    if agent:
        out["agent"] = agent
    return out


def refusal(reviewer: str, author_actor: str | None, state: str | None) -> tuple[int, str] | None:
    """Why ``reviewer`` may not decide an item (HTTP status, message), or None when it may.

    409 when the item is not a candidate (a belief, or forgotten: nothing left to decide); 403 when
    the reviewer wrote it: a token cannot vouch for its own writes (invariant 12)."""
    if (state or BELIEF) != CANDIDATE:
        return 409, "this memory is not a candidate: there is nothing to decide"
    if author_actor is not None and reviewer == author_actor:
        return 403, (
            "a reviewer cannot decide a candidate it wrote itself: another person's review token "
            "must approve or reject it"
        )
    return None


@dataclass(frozen=True)
class Writes:
    """What a decision writes, in order: the receipted ``review`` entry first, then (reject) a forget
    with its tombstone, or (edit) the corrected version, or (approve) the row turned into a belief."""

    review_decision: str  # the entry's ``decision`` field (core.log.DECISIONS)
    becomes_belief: bool
    forgets: bool
    writes_version: bool


def decision_writes(decision: str) -> Writes:
    """The log and row effects of a decision (``edit`` records ``approve``: the corrected version is
    what the reviewer vouches for)."""
    if decision == "approve":
        return Writes("approve", True, False, False)
    if decision == "reject":
        return Writes("reject", False, True, False)
    if decision == "edit":
        return Writes("approve", True, False, True)
    raise ValueError(f"decision must be one of {', '.join(DECISIONS)}")


def decision_specs(
    candidate: LogRow, decision: str, agent: str | None, edit: RecordWrite | None = None
) -> list[EntrySpec]:
    """The log entries of a decision on ``candidate`` (its row read under the writer's lease), in the
    order one commit appends them; every log implementation builds a decision here.

    Without ``edit``: one ``review`` entry (``decision``: approve | reject) covering the candidate's
    entry. With ``edit`` (``decision`` must be approve): a ``supersede`` of the candidate's entry by
    the corrected version, entered as a candidate, then a ``review`` approve covering that supersede
    (:data:`acx.core.log.PREVIOUS`): what the reviewer vouches for is the text they wrote."""
    who = attribution(agent)
    cover = logcore.Covers(candidate.seq, candidate.entry_hash)
    if edit is None:
        extra = (("decision", decision), *who)
        return [EntrySpec("review", candidate.zone or "save", candidate.content_hash, None, cover, extra)]
    if decision != "approve" or edit.id != candidate.id:
        raise ValueError("an edit approves a corrected version of the same memory")
    corrected = logcore.content_hash(edit.record)
    return [
        EntrySpec("supersede", edit.zone, corrected, candidate.key, cover, attribution(agent, CANDIDATE)),
        EntrySpec("review", edit.zone, corrected, None, logcore.PREVIOUS, (("decision", "approve"), *who)),
    ]


def _sketch(record: Mapping[str, Any]) -> tuple[int, ...] | None:
    return forgetting.record_sketch(_SKETCH_KEY, record.get("title"), record.get("summary"))


def near_belief(
    candidate: Mapping[str, Any], beliefs: Iterable[Mapping[str, Any]], threshold: float = NEAR_THRESHOLD
) -> dict[str, str] | None:
    """The belief most like ``candidate`` (``{id, title}``), or None: same normalised knowledge, or a
    near copy by the forget rule's estimated word-pair similarity (at least ``threshold``)."""
    text = forgetting.knowledge_text(candidate.get("title"), candidate.get("summary"))
    mine = _sketch(candidate)
    best: tuple[float, Mapping[str, Any]] | None = None
    for b in beliefs:
        if b.get("id") == candidate.get("id"):
            continue
        if forgetting.knowledge_text(b.get("title"), b.get("summary")) == text:
            score = 1.0
        else:
            theirs = _sketch(b)
            score = forgetting.similarity(mine, theirs) if mine and theirs else 0.0
        if score >= threshold and (best is None or score > best[0]):
            best = (score, b)
    return None if best is None else {"id": str(best[1].get("id")), "title": str(best[1].get("title", ""))}


def advisory(base: str, trust_filter: str, extra: str) -> str:
    """The banner of an answer: ``base``, plus ``extra`` (what candidates are) when it may hold them."""
    return base if trust_filter == BELIEF else base + extra


def attribution(agent: str | None, trust: str = "belief") -> tuple[tuple[str, str], ...]:
    """The optional payload fields of an entry (:data:`acx.core.log.OPTIONAL`): the writer's agent id,
    and ``trust`` for a candidate (a belief's entry carries none: entries from before trust existed
    read the same)."""
    out: tuple[tuple[str, str], ...] = (("agent", agent),) if agent else ()
    return (*out, ("trust", "candidate")) if trust == "candidate" else out
