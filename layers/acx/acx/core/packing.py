"""Packing an ACX agent-package directory (``memory-records.json``, knowledge, skills) into an upload
bundle (:mod:`acx.core.bundle`), deriving each record's tier; the result is parsed before it is
returned, so a packed bundle is one the service accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acx.core.bundle import SCHEMA_VERSION, BundleError, parse_bundle
from acx.core.canonical import loads
from acx.core.fingerprint import canonical_repo_identity, codebase_fingerprint


def read_records_file(path: Path) -> list[Any]:
    """The records of a ``memory-records.json`` (an array, or an object with ``records``)."""
    doc = loads(path.read_bytes())
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):
        return list(doc["records"])
    if not isinstance(doc, list):
        raise BundleError("invalid_type", "memory-records.json must hold an array of records", "$")
    return doc


def _with_tier(record: Any, index: int, salt: bytes | None) -> Any:
    if not isinstance(record, dict) or "portable" in record:
        return record
    out = dict(record)
    repo = record.get("repoId")
    if repo is None or repo == "":
        out["portable"] = True
        out["codebaseFingerprint"] = None
        out["repoId"] = None
        return out
    if salt is None:
        raise BundleError(
            "salt_required",
            "field-learned record (repoId set) needs the installation salt: run `acx init` once, "
            "or pass --salt-file FILE (acx bundle and acx upload take it)",
            f"$.records[{index}]",
        )
    out["portable"] = False
    if not out.get("codebaseFingerprint"):
        identity = canonical_repo_identity(f"repo://{repo}" if isinstance(repo, str) else "")
        out["codebaseFingerprint"] = codebase_fingerprint(salt, identity)
    return out


def pack_directory(directory: Path, salt: bytes | None) -> dict[str, Any]:
    """Build an upload bundle from an ACX agent-package directory (records, knowledge, skills).

    Records without ``portable`` get their tier from ``repoId``: none means transferable; a repo means
    field-learned, fingerprinted with the installation salt. The result is validated before return.
    """
    records_file = directory / "memory-records.json"
    if not records_file.is_file():
        raise BundleError("missing_file", "the package has no memory-records.json", str(directory))
    records = [_with_tier(r, i, salt) for i, r in enumerate(read_records_file(records_file))]
    knowledge: list[dict[str, str]] = []
    for path in sorted(directory.glob("*.md")) + sorted((directory / "knowledge").glob("*.md")):
        if path.is_file():
            rel = path.relative_to(directory).as_posix()
            knowledge.append({"path": rel, "content": path.read_text(encoding="utf-8")})
    skills = [
        {"path": p.relative_to(directory).as_posix(), "content": p.read_text(encoding="utf-8")}
        for p in sorted((directory / "skills").glob("*/SKILL.md"))
        if p.is_file()
    ]
    doc = {"schemaVersion": SCHEMA_VERSION, "records": records, "knowledge": knowledge, "skills": skills}
    parse_bundle(doc)
    return doc
