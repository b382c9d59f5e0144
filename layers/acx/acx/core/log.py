"""Log entries of the receipted, hash-chained memory log (DESIGN §1.2).

Each write is one entry ``{v, actor, chainKey, seq, operation, tier, contentHash, createdAt, covers?}``
plus the optional fields of :data:`OPTIONAL` (who wrote it for which agent, valid time, trust state, a
review decision); its hash is ``sha256(canonical({prevHash, ...payload}))`` in hex. The chain hashes
the *content hash*, never the plaintext, so forgetting a record erases its text while every link still
verifies. The Merkle leaves are the entry hash bytes.

The chain alone does not stop an attacker who rewrites every entry consistently from a point on: the
signed checkpoint and the witnessed size do that (see :mod:`acx.core.checkpoint`, ``usecases.verify``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acx.core.canonical import dumps, dumps_record, sha256_hex
from acx.core.package import PackageRef
from acx.core.records import is_rfc3339

VERSION = 1
GENESIS = "0" * 64
#: ``remember`` writes a memory (or a file); ``forget`` erases one and files its tombstone;
#: ``supersede`` writes a new version of a memory that ends the covered version's validity (the old
#: version stays in the history: supersession is not forget); ``invalidate`` ends a version's
#: validity without a successor; ``review`` records a person's decision on a candidate;
#: ``lock``/``unlock`` are the operator lock; ``policy`` a change of the package's review policy
#: (its content hash is that of the canonical policy, e.g. ``{"review": "required"}``).
#:
#: An edit-and-approve is no operation of its own: it is two entries of one commit, a ``supersede``
#: of the candidate's entry carrying ``trust: candidate`` (the reviewer's corrected text, written by
#: the reviewer) and right after it a ``review`` with ``decision: approve`` that covers that
#: ``supersede`` (the planner resolves :data:`PREVIOUS`), both naming the reviewer's actor and agent.
#: The audit reads it as any write then any approval: the corrected version is the one vouched for.
OPERATIONS = ("remember", "forget", "lock", "unlock", "supersede", "invalidate", "review", "policy")
#: Operations whose entry names the earlier entry it acts on (``covers``).
COVERING = frozenset({"forget", "supersede", "invalidate", "review"})
TRUST_STATES = ("candidate", "belief")
DECISIONS = ("approve", "reject")
#: Optional payload fields and the operations that may carry them. ``agent`` is the agent id the
#: writer's token carries (``actor`` is the token's subject); ``validFrom``/``validUntil`` are valid
#: time (when the version held true), apart from ``createdAt``, record time (when the log learned
#: it); ``trust`` is the state a version enters with (absent: ``belief``); ``decision`` is a review's.
#: Valid times and trust are in the chain, so they verify like the content hash.
OPTIONAL: dict[str, frozenset[str]] = {
    "agent": frozenset(OPERATIONS),
    "validFrom": frozenset({"remember", "supersede"}),
    "validUntil": frozenset({"invalidate", "supersede"}),
    "trust": frozenset({"remember", "supersede"}),
    "decision": frozenset({"review"}),
}
MAX_AGENT = 128
_HEX = frozenset("0123456789abcdef")
_FIELDS = frozenset(
    {"v", "actor", "chainKey", "seq", "operation", "tier", "contentHash", "createdAt", "covers"}
)


class EntryError(ValueError):
    """A payload that does not have the entry shape."""


def chain_key(tenant: str, package: str) -> str:
    """The per-package chain name bound into every entry (see :attr:`PackageRef.chain_key`)."""
    return PackageRef(tenant, package).chain_key


def content_hash(record: Any) -> str:
    """Hex sha256 of the canonical JSON of a record (what the chain commits to)."""
    return canonical_content_hash(dumps_record(record))


def canonical_content_hash(canonical_json: bytes) -> str:
    """:func:`content_hash` from a record's canonical bytes, for a caller that already has them."""
    return hashlib.sha256(canonical_json).hexdigest()


def file_content_hash(path: str, content: str) -> str:
    """Content hash of a package file; binds the path so a file cannot be renamed silently."""
    return sha256_hex({"path": path, "content": content})


def _is_hex64(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def make_payload(
    *,
    actor: str,
    chain: str,
    seq: int,
    operation: str,
    tier: str,
    content_hash: str,
    created_at: str,
    covers: dict[str, Any] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Build and validate an entry payload; ``extra`` holds optional fields (:data:`OPTIONAL`)."""
    payload: dict[str, Any] = {
        "v": VERSION,
        "actor": actor,
        "chainKey": chain,
        "seq": seq,
        "operation": operation,
        "tier": tier,
        "contentHash": content_hash,
        "createdAt": created_at,
    }
    if covers is not None:
        payload["covers"] = {"seq": covers["seq"], "hash": covers["hash"]}
    if extra:
        payload.update(extra)
    validate_payload(payload)
    return payload


def validate_payload(payload: dict[str, Any]) -> None:
    """Raise :class:`EntryError` unless ``payload`` has the entry shape."""
    if payload.get("v") != VERSION:
        raise EntryError("unsupported entry version")
    if payload.get("operation") not in OPERATIONS:
        raise EntryError(f"operation must be one of {', '.join(OPERATIONS)}")
    seq = payload.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise EntryError("seq must be a non-negative integer")
    for name in ("actor", "chainKey", "tier", "createdAt"):
        if not isinstance(payload.get(name), str) or not payload[name]:
            raise EntryError(f"{name} must be a non-empty string")
    if not _is_hex64(payload.get("contentHash")):
        raise EntryError("contentHash must be 64 lowercase hex")
    operation = payload["operation"]
    covers = payload.get("covers")
    if operation in COVERING:
        if (
            not isinstance(covers, dict)
            or not _is_hex64(covers.get("hash"))
            or not isinstance(covers.get("seq"), int)
            or isinstance(covers.get("seq"), bool)
        ):
            raise EntryError(f"a {operation} entry must cover {{seq, hash}} of an earlier entry")
        if covers["seq"] >= seq:
            raise EntryError(f"a {operation} entry can only cover an earlier entry")
    elif covers is not None:
        raise EntryError(f"only {', '.join(sorted(COVERING))} entries carry covers")
    extra = set(payload) - _FIELDS - set(OPTIONAL)
    if extra:
        raise EntryError(f"unknown payload fields: {sorted(extra)}")
    for name, allowed in OPTIONAL.items():
        if name in payload and operation not in allowed:
            raise EntryError(f"a {operation} entry does not carry {name}")
    _check_optional(payload)


def _check_optional(payload: dict[str, Any]) -> None:
    agent = payload.get("agent")
    if agent is not None and (not isinstance(agent, str) or not 0 < len(agent) <= MAX_AGENT):
        raise EntryError(f"agent must be a non-empty string of at most {MAX_AGENT} characters")
    for name in ("validFrom", "validUntil"):
        value = payload.get(name)
        if value is not None and (not isinstance(value, str) or not is_rfc3339(value)):
            raise EntryError(f"{name} must be an RFC 3339 timestamp")
    if "trust" in payload and payload["trust"] not in TRUST_STATES:
        raise EntryError(f"trust must be one of {', '.join(TRUST_STATES)}")
    if payload["operation"] == "review" and payload.get("decision") not in DECISIONS:
        raise EntryError(f"a review entry must carry a decision: one of {', '.join(DECISIONS)}")


def entry_hash(prev_hash: str, payload: dict[str, Any]) -> str:
    """Hex sha256 of canonical ``{prevHash, ...payload}``: the link to the previous entry."""
    if not _is_hex64(prev_hash):
        raise EntryError("prevHash must be 64 lowercase hex")
    if "prevHash" in payload:
        raise EntryError("payload must not carry prevHash")
    return hashlib.sha256(dumps({"prevHash": prev_hash, **payload})).hexdigest()


@dataclass(frozen=True, slots=True)
class Covers:
    """The earlier entry a covering entry acts on (:data:`COVERING`): the forgotten, superseded,
    invalidated or reviewed version's seq and hash."""

    seq: int
    hash: str


#: ``covers`` of an entry spec that acts on the entry just before it in the same commit (an edit's
#: approve of its own ``supersede``): :func:`acx.core.append.plan_append` resolves it to that entry's
#: seq and hash, which no caller knows before the commit is planned. Never stored.
PREVIOUS = Covers(-1, GENESIS)


@dataclass(frozen=True, slots=True)
class Entry:
    """One chained entry as stored in a receipt: its payload, hash, link and the row key it names."""

    seq: int
    hash: str
    prev_hash: str
    payload: dict[str, Any]
    key: str | None  # ``r#<id>`` / ``f#<path>`` of the row it writes; None for lock entries

    @property
    def operation(self) -> str:
        return str(self.payload["operation"])

    @property
    def content_hash(self) -> str:
        return str(self.payload["contentHash"])

    @property
    def covers(self) -> Covers | None:
        c = self.payload.get("covers")
        return Covers(int(c["seq"]), str(c["hash"])) if c else None
