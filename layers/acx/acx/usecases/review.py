"""Review: a package's policy, its queue of candidates, and a person's decision on each one.

The rules are :mod:`acx.core.review`'s; this module reads and writes through the log store. Every
policy change and every decision is a receipted log entry naming its actor (``policy``, ``review``);
a rejection then forgets the memory through the forget path (tombstone, erasure everywhere), so a
rejected memory cannot come back.
"""

from __future__ import annotations

import random
import time
from typing import Any

from acx.contract import ERR_INVALID_CURSOR, ERR_INVALID_REQUEST
from acx.core import review as rules
from acx.core.canonical import sha256_hex
from acx.core.package import PackageRef
from acx.core.rows import Conflict, Edit, Forgotten, LogRow
from acx.usecases.access import Principal
from acx.usecases.errors import ServiceError, not_found
from acx.usecases.locks import require_unlocked

MAX_QUEUE_LIMIT = 200
NEAR_CANDIDATES = 5  # beliefs a search proposes per candidate, compared by near-copy similarity
MAX_CONFLICT_RETRIES = 4

ERR_NOT_CANDIDATE = "not_candidate"


def _existing(deps: Any, tenant: str, package: str) -> PackageRef:
    ref = PackageRef(tenant, package)
    if not deps.log.package_exists(ref):
        raise not_found()
    return ref


def policy_of(deps: Any, ref: PackageRef) -> str:
    """The package's review policy (``none`` until a person sets one)."""
    return deps.log.policy(ref) or rules.DEFAULT_POLICY


def get_policy(deps: Any, tenant: str, package: str) -> dict[str, Any]:
    return {"review": policy_of(deps, _existing(deps, tenant, package))}


def set_policy(deps: Any, tenant: str, package: str, principal: Principal, review: str) -> dict[str, Any]:
    """Receipt a ``policy`` entry (its content hash: sha256 of canonical ``{"review": ...}``), then store
    the setting. Setting the policy a package already has writes nothing (``changed: false``). A
    package that does not exist yet is created by it (as by a first upload), so a package can require
    review before its first memory."""
    if review not in rules.POLICIES:
        raise ServiceError(
            422, ERR_INVALID_REQUEST, f"review must be one of {', '.join(rules.POLICIES)}", "$.review"
        )
    require_unlocked(deps, tenant, package)
    ref = PackageRef(tenant, package)
    if deps.log.package_exists(ref) and policy_of(deps, ref) == review and deps.log.policy(ref) is not None:
        return {"review": review, "changed": False}
    result = deps.log.set_policy(
        ref, principal.actor, review, sha256_hex({"review": review}), agent=principal.agent
    )
    return {
        "review": review,
        "changed": True,
        "log": {"fromSeq": result.from_seq, "toSeq": result.to_seq},
        "checkpoint": result.checkpoint,
    }


def check_trust(trust: str | None) -> str:
    """The read filter (``belief`` when absent); 400 naming ``$.trust`` otherwise."""
    if trust is None:
        return rules.DEFAULT_TRUST_FILTER
    if trust not in rules.TRUST_FILTERS:
        raise ServiceError(
            400, ERR_INVALID_REQUEST, f"trust must be one of {', '.join(rules.TRUST_FILTERS)}", "$.trust"
        )
    return trust


def check_agent(agent: str | None) -> str | None:
    from acx.core.log import MAX_AGENT

    if agent is not None and not 1 <= len(agent) <= MAX_AGENT:
        raise ServiceError(400, ERR_INVALID_REQUEST, f"agent must be 1-{MAX_AGENT} characters", "$.agent")
    return agent


def _near_belief(deps: Any, ref: PackageRef, record: dict[str, Any]) -> dict[str, str] | None:
    """The belief a candidate nearly repeats: the search proposes beliefs, the near-copy rule decides."""
    from acx.usecases.search import SearchQuery, search

    title = str(record.get("title") or record.get("summary") or "").strip()[:512]
    if not title:
        return None
    found = search(deps, ref.tenant, ref.package, SearchQuery(q=title, k=NEAR_CANDIDATES, trust="belief"))
    return rules.near_belief(record, [r.record for r in found.results])


def queue_item(deps: Any, ref: PackageRef, row: LogRow) -> dict[str, Any]:
    assert row.record is not None
    return {
        "id": row.id,
        "record": row.record,
        "author": rules.author(row.actor, row.agent),
        "recordedAt": _recorded_at(deps, ref, row.seq),
        "seq": row.seq,
        "source": rules.source_of(row.record),
        "nearBelief": _near_belief(deps, ref, row.record),
    }


def _recorded_at(deps: Any, ref: PackageRef, seq: int) -> str | None:
    """Record time of the entry that wrote the version (``createdAt`` of its receipt)."""
    entry = next(iter(deps.log.entries(ref, seq, seq + 1)), None)
    return None if entry is None else str(entry.payload.get("createdAt"))


def review_queue(
    deps: Any, tenant: str, package: str, limit: int = 50, cursor: str | None = None
) -> dict[str, Any]:
    """Candidates oldest first, each with its author, source and any near-duplicate belief."""
    if not 1 <= limit <= MAX_QUEUE_LIMIT:
        raise ServiceError(
            400, ERR_INVALID_REQUEST, f"limit must be between 1 and {MAX_QUEUE_LIMIT}", "$.limit"
        )
    ref = _existing(deps, tenant, package)
    try:
        rows, next_cursor = deps.log.review_queue(ref, limit, cursor)
    except ValueError:
        raise ServiceError(
            400, ERR_INVALID_CURSOR, "cursor is not one this service issued", "$.cursor"
        ) from None
    return {
        "policy": policy_of(deps, ref),
        "items": [queue_item(deps, ref, row) for row in rows],
        "cursor": next_cursor,
    }


def decide(
    deps: Any,
    tenant: str,
    package: str,
    principal: Principal,
    record_id: str,
    decision: str,
    record: dict[str, Any] | None = None,
    seen_seq: int | None = None,
) -> dict[str, Any]:
    """Approve, reject or edit one candidate: 404 absent, 409 not a candidate (or not the version at
    ``seen_seq`` the reviewer saw, or it kept changing while deciding), 403 when the reviewer wrote it.

    ``edit`` (``record``: the corrected record, same id) is one commit: a supersede of the candidate
    by the corrected version and the reviewer's approve of it (:func:`acx.core.review.decision_specs`).
    The correction is checked as any write is: every record problem in one 422, the scrub gate (422
    ``blocked``), the same tier and codebase, no other memory's content (409 ``duplicate``), no
    forgotten knowledge (409 ``forgotten``); a refused edit writes nothing, so it approves nothing."""
    from acx.usecases import versions

    if decision not in rules.DECISIONS:
        raise ServiceError(
            422, ERR_INVALID_REQUEST, f"decision must be one of {', '.join(rules.DECISIONS)}", "$.decision"
        )
    ref = _existing(deps, tenant, package)
    require_unlocked(deps, tenant, package)
    writes = rules.decision_writes(decision)
    if writes.writes_version:
        if record is None:
            raise ServiceError(422, ERR_INVALID_REQUEST, "an edit carries the corrected record", "$.record")
        record = versions.check_correction(record, record_id)
    for attempt in range(MAX_CONFLICT_RETRIES):
        row = deps.log.record(ref, record_id)
        if row is None:
            raise not_found("memory")
        refused = rules.refusal(principal.actor, row.actor, row.trust if row.active else None)
        if refused is None and not row.active:
            refused = (409, "this memory was forgotten: there is nothing to decide")
        if refused is None and seen_seq is not None and row.seq != seen_seq:
            refused = (
                409,
                f"the candidate changed since it was read (seq {seen_seq}, now {row.seq}): reload it",
            )
        if refused is not None:
            status, message = refused
            code = ERR_NOT_CANDIDATE if status == 409 else "forbidden"
            raise ServiceError(status, code, message, extra={"id": record_id})
        if writes.forgets:
            _refuse_reject_of_shared_knowledge(deps, ref, row)
        edit = None
        if writes.writes_version:
            assert record is not None
            fix = versions.correction(deps, ref, row, record, rules.BELIEF)
            edit = Edit(fix.write, fix.expected_slots, fix.guard)
        try:
            result = deps.log.review(
                ref, principal.actor, record_id, writes.review_decision, row.seq, agent=principal.agent,
                edit=edit,
            )  # fmt: skip
        except Conflict:
            time.sleep(random.uniform(0, 0.02 * 2**attempt))
            continue
        except Forgotten as exc:
            raise versions.forgotten_correction(exc) from None
        out: dict[str, Any] = {
            "id": record_id,
            "decision": decision,
            "seq": result.from_seq,
            "reviewer": rules.author(principal.actor, principal.agent),
            "checkpoint": result.checkpoint,
        }
        if edit is not None:
            out["supersedes"] = {"seq": row.seq, "hash": row.entry_hash}
            out["approvedSeq"] = result.to_seq
            _index_correction(deps, ref, edit.write.record)
        if writes.forgets:
            from acx.usecases.forget import forget

            out["forget"] = forget(
                deps, tenant, package, principal.actor, record_id=record_id, agent=principal.agent
            )
        return out
    raise ServiceError(409, ERR_NOT_CANDIDATE, "the candidate kept changing while deciding; reload the queue")


def _index_correction(deps: Any, ref: PackageRef, record: dict[str, Any]) -> None:
    """Tell the search index about the corrected version (a failure drops the index: never the write)."""
    from acx.usecases.versions import index_after

    tenant, package = ref.tenant, ref.package
    index_after(deps, ref, lambda: deps.index().indexed(tenant, package, [record], {}, new_package=False))


def _refuse_reject_of_shared_knowledge(deps: Any, ref: PackageRef, row: LogRow) -> None:
    """A rejection forgets the candidate's knowledge, and a forget erases every row of that knowledge:
    when a belief holds the same knowledge, the rejection would erase the belief too. Refused (409)."""
    if not row.knowledge:
        return
    shared = [
        r.id for r in deps.log.with_knowledge(ref, row.knowledge) if r.id != row.id and r.trust != "candidate"
    ]
    if shared:
        raise ServiceError(
            409,
            ERR_NOT_CANDIDATE,
            f"belief {shared[0]} holds the same knowledge: rejecting would forget it too. Approve the "
            "candidate, or forget the knowledge on purpose (DELETE .../memories/{id})",
            extra={"id": row.id, "belief": shared[0]},
        )
