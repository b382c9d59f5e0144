"""The one place tests build memory records and bundles (the record format of docs/FORMATS.md).

Each suite states only the fields its assertions depend on, as keyword overrides; everything else
comes from :func:`memory`, so a change to the record format is made here once.
"""

from __future__ import annotations

from typing import Any

#: A well-formed codebase fingerprint for field-learned records (DESIGN §1.1).
CBF = "cbf1_" + "ab" * 20
FIELD_REPO = "github.com/acme/api"
BUNDLE_SCHEMA = "acx.memory-bundle/1"


def memory(rid: str = "mem-1", **changes: Any) -> dict[str, Any]:
    """A valid portable memory record; ``changes`` replace fields (or add unknown ones, to be refused)."""
    record: dict[str, Any] = {
        "id": rid,
        "title": "Retry with backoff",
        "summary": "The flaky test passed after retries",
        "sourceType": "incident",
        "portable": True,
        "codebaseFingerprint": None,
        "repoId": None,
        "repoLabel": "portable-core",
        "projectLabel": "api",
        "timestamp": "2026-01-02T03:04:05.678Z",
        "impact": "neutral",
        "xpAwarded": 1,
        "tags": ["retry"],
    }
    record.update(changes)
    return record


def note(rid: str, text: str, **changes: Any) -> dict[str, Any]:
    """A record titled ``text`` with a summary of its own words: unrelated notes are not near copies
    of each other (the forget rules compare title and summary, and :func:`memory`'s are all equal)."""
    summary = " ".join(f"{w}-{i}" for i, w in enumerate(text.split() * 4))
    return memory(rid, title=text, summary=summary, **changes)


def tier_fields(portable: bool) -> dict[str, Any]:
    """The fields that make a record transferable (ROM) or field-learned (SAVE)."""
    if portable:
        return {"portable": True, "codebaseFingerprint": None, "repoId": None}
    return {"portable": False, "codebaseFingerprint": CBF, "repoId": FIELD_REPO}


def bundle(records: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """An upload bundle of ``records`` (no knowledge or skill files unless ``extra`` adds them)."""
    return {"schemaVersion": BUNDLE_SCHEMA, "records": records, "knowledge": [], "skills": [], **extra}


def bundle_json(records: list[dict[str, Any]], **extra: Any) -> bytes:
    """:func:`bundle` as the request body bytes an upload sends."""
    import json

    return json.dumps(bundle(records, **extra)).encode()


def tiny(rid: str, **changes: Any) -> dict[str, Any]:
    """A valid record with one-letter text fields, for tests about containers rather than content."""
    fields: dict[str, Any] = {"title": "t", "summary": "s", "sourceType": "review", "repoLabel": "x"}
    fields |= {"projectLabel": "y", "timestamp": "2026-01-01T00:00:00.000Z", "xpAwarded": 0, "tags": []}
    return memory(rid, **fields | changes)


def entry_payload(**changes: Any) -> dict[str, Any]:
    """A valid ``remember`` log-entry payload at seq 0 (``acx.core.log.make_payload`` keywords)."""
    from acx.core import log

    fields: dict[str, Any] = {
        "actor": "agent-1",
        "chain": "t1/pkg",
        "seq": 0,
        "operation": "remember",
        "tier": "rom",
        "content_hash": "a" * 64,
        "created_at": "2025-01-01T00:00:00Z",
    }
    return log.make_payload(**fields | changes)


def statement(**changes: Any) -> dict[str, Any]:
    """A well-formed in-toto statement from ``acx.core.dsse.build_statement`` (keyword overrides)."""
    from acx.core import dsse

    fields: dict[str, Any] = {
        "manifest_hash": "sha256:" + "a" * 64,
        "subject_name": "com.example/x@1",
        "publisher_id": "com.example",
        "embedding_engine": {"id": "local-hash-128", "dim": 128},
        "signed_at": "2026-01-01T00:00:00.000Z",
        "provenance_instance_id": "p-1",
        "file_count": 3,
        "checksum_hash": "sha256:" + "b" * 64,
    }
    return dsse.build_statement(**fields | changes)
