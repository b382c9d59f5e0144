"""Writes a cartridge as a stream: records and files in, then seal -> sign -> commit.

Signing is its own step (as in sigstore-python): :meth:`CartridgeWriter.seal` returns the in-toto
Statement over the ROM manifest, any signer turns it into a DSSE envelope, and
:meth:`CartridgeWriter.commit` stores that envelope. :meth:`CartridgeWriter.finalize` is the three
in a row with an injected :class:`acx.core.signing.Signer`.

Does NOT stop a caller from writing harmful content: the scrub gate runs in :mod:`acx.core.export`.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import sqlite3
import struct
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acx.core import canonical, dsse
from acx.core.cartridge.boundary import memory_payload
from acx.core.cartridge.format import (
    APPLICATION_ID,
    DEFAULT_ENGINE,
    FLAG_SAVE,
    SCHEMA,
    SKILL_PATH,
    SPEC_VERSION,
    UNBOUND_META,
    USER_VERSION_BASE,
    CartridgeError,
    ManifestHasher,
    meta_binding,
    now_rfc3339,
    oid_of,
    rom_checksum,
    validate_sqlar_name,
)
from acx.core.cartridge.frontmatter import parse_frontmatter
from acx.core.signing import Algorithm, Signer, keyid_for, spki_pem


@dataclass
class FinalizeResult:
    """What :meth:`CartridgeWriter.finalize` signed."""

    manifest_hash: str
    keyid: str
    envelope: dict[str, Any]
    cartridge_id: str
    counts: dict[str, int]


class CartridgeWriter:
    """Streams records and files into a new cartridge; rows go to SQLite in chunks, never all in RAM.

    Writes to ``<path>.partial`` and renames on :meth:`finalize`; :meth:`abort` (or leaving the
    ``with`` block on an exception) deletes it, so nothing half-written is ever left at ``path``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        artifact_id: str,
        artifact_version: str,
        embedding_engine: dict[str, Any] | None = None,
        meta: dict[str, str] | None = None,
        created_at: str | None = None,
        chunk_size: int = 2000,
    ) -> None:
        self.path = Path(path)
        self._tmp = self.path.with_name(self.path.name + ".partial")
        if self._tmp.exists():
            self._tmp.unlink()
        self.engine = dict(embedding_engine or DEFAULT_ENGINE)
        self.dim = int(self.engine["dim"])
        self.created_at = created_at or now_rfc3339()
        self._meta: dict[str, str] = {
            "acx.spec_version": SPEC_VERSION,
            "acx.artifact_id": artifact_id,
            "acx.artifact_version": artifact_version,
            "acx.created_at": self.created_at,
            "acx.embedding_engine": canonical.dumps(self.engine).decode("utf-8"),
        }
        for key, value in (meta or {}).items():
            if not isinstance(value, str):
                raise CartridgeError(f"meta {key} must be a string")
            self._meta[key] = value
        self._chunk = max(1, chunk_size)
        self._mem: list[tuple[Any, ...]] = []
        self._obj: list[tuple[Any, ...]] = []
        self._vec: list[tuple[Any, ...]] = []
        self.counts: dict[str, int] = {"rom": 0, "save": 0, "files": 0, "vectors": 0, "skills": 0}
        self._done = False
        self._statement: dict[str, Any] | None = None
        try:
            self._db = sqlite3.connect(self._tmp, isolation_level=None)
            self._db.execute("PRAGMA journal_mode = OFF")
            self._db.execute("PRAGMA synchronous = OFF")
            self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self._db.executescript(SCHEMA)
            self._db.execute("BEGIN")
        except sqlite3.Error as exc:
            self.abort()
            raise CartridgeError(f"cannot create cartridge: {exc}") from None

    # -- context manager -------------------------------------------------------------------------
    def __enter__(self) -> CartridgeWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None or not self._done:
            self.abort()

    # -- adding content --------------------------------------------------------------------------
    def add_memory(
        self, record: dict[str, Any], zone: str, vector: Sequence[float] | None = None
    ) -> dict[str, Any]:
        """Add one record (export boundary applied here); returns the stored payload."""
        rid = record.get("id")
        if not isinstance(rid, str) or not rid:
            raise CartridgeError("record id must be a non-empty string")
        payload, data = memory_payload(record, zone)
        oid = oid_of(data)
        cbf = payload.get("codebaseFingerprint") if zone == "save" else None
        created = payload.get("timestamp") if isinstance(payload.get("timestamp"), str) else self.created_at
        self._mem.append((rid, zone, payload["artifactFingerprint"], cbf, data.decode("utf-8"), oid, created))
        self._obj.append((oid, "memory", "memory:" + rid, "jcs-rfc8785", zone, len(data)))
        if vector is not None:
            if len(vector) != self.dim:
                raise CartridgeError(f"vector for {rid} has dim {len(vector)}, engine says {self.dim}")
            blob = struct.pack(f"<{self.dim}f", *vector)
            self._vec.append((rid, zone, blob, payload["artifactFingerprint"]))
            self.counts["vectors"] += 1
        self.counts[zone] += 1
        if len(self._mem) >= self._chunk:
            self.flush()
        return payload

    def add_file(self, name: str, data: bytes) -> str:
        """Add a file to the sqlar table (stored uncompressed); returns its oid."""
        zone = validate_sqlar_name(name)
        if not isinstance(data, bytes | bytearray):
            raise CartridgeError(f"{name}: file content must be bytes")
        data = bytes(data)
        oid = oid_of(data)
        self.flush()
        try:
            self._db.execute("INSERT INTO sqlar VALUES (?, 420, 0, ?, ?)", (name, len(data), data))
            self._db.execute(
                "INSERT INTO objects VALUES (?, 'sqlar', ?, 'raw', ?, ?)", (oid, name, zone, len(data))
            )
            m = SKILL_PATH.fullmatch(name)
            if m:
                text = data.decode("utf-8", errors="replace")
                fm = parse_frontmatter(text)
                self._db.execute(
                    "INSERT INTO acx_skill VALUES (?, ?, ?, ?, NULL, NULL, ?, ?, '[]', NULL, 'acx.skill/1')",
                    (
                        name,
                        fm.get("name", m.group(1)),
                        fm.get("description", ""),
                        fm.get("license"),
                        math.ceil(len(data) / 4),
                        hashlib.sha256(data).hexdigest(),
                    ),
                )
                self.counts["skills"] += 1
        except sqlite3.IntegrityError:
            raise CartridgeError(f"{name}: duplicate file name or identical content already stored") from None
        self.counts["files"] += 1
        return oid

    def add_capability(self, capability: dict[str, Any]) -> str:
        """Add a capability claim (ROM, ``kind='cartridge'``, ``source_ref='capability:<id>'``)."""
        cid = capability.get("id")
        if not isinstance(cid, str) or not cid:
            raise CartridgeError("capability id must be a non-empty string")
        data = canonical.dumps(capability)
        oid = oid_of(data)
        self.flush()
        try:
            self._db.execute("INSERT INTO capabilities VALUES (?, ?, ?)", (cid, data.decode(), oid))
            self._db.execute(
                "INSERT INTO objects VALUES (?, 'cartridge', ?, 'jcs-rfc8785', 'rom', ?)",
                (oid, "capability:" + cid, len(data)),
            )
        except sqlite3.IntegrityError:
            raise CartridgeError(f"duplicate capability {cid}") from None
        return oid

    def flush(self) -> None:
        """Write buffered rows (executemany) so memory stays bounded by ``chunk_size``."""
        try:
            if self._mem:
                self._db.executemany("INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?)", self._mem)
            if self._obj:
                self._db.executemany("INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)", self._obj)
            if self._vec:
                self._db.executemany("INSERT INTO vectors VALUES (?, ?, ?, ?)", self._vec)
        except sqlite3.IntegrityError as exc:
            raise CartridgeError(f"duplicate memory id or identical payload ({exc})") from None
        self._mem.clear()
        self._obj.clear()
        self._vec.clear()

    # -- manifest and signing ----------------------------------------------------------------------
    def _write_meta(self) -> None:
        self._db.execute("DELETE FROM objects WHERE kind = 'cartridge' AND source_ref LIKE 'cartridge:%'")
        for key, value in self._meta.items():
            self._db.execute("INSERT OR REPLACE INTO cartridge VALUES (?, ?)", (key, value))
            if key not in UNBOUND_META:
                oid, sz = meta_binding(key, value)
                self._db.execute(
                    "INSERT INTO objects VALUES (?, 'cartridge', ?, 'jcs-rfc8785', 'rom', ?)",
                    (oid, "cartridge:" + key, sz),
                )

    def manifest_entries(self) -> Iterator[dict[str, Any]]:
        """ROM manifest entries from the stored objects rows, in (kind, source_ref) code-point order."""
        self.flush()
        cur = self._db.execute(
            "SELECT source_ref, oid, canon, sz FROM objects WHERE zone = 'rom' ORDER BY kind, source_ref"
        )
        for ref, oid, canon_, sz in cur:
            yield {"sourceRef": ref, "oid": oid, "canon": canon_, "sz": sz}

    def manifest(self) -> list[dict[str, Any]]:
        """The whole ROM manifest as a list (small cartridges / tests; use manifest_hash for big ones)."""
        return list(self.manifest_entries())

    def manifest_hash(self) -> str:
        """``sha256:`` + hex of the canonical manifest, streamed."""
        hasher = ManifestHasher()
        for e in self.manifest_entries():
            hasher.add(e["sourceRef"], e["oid"], e["canon"], e["sz"])
        return "sha256:" + hasher.hexdigest()

    def _checksum(self) -> tuple[str, int]:
        self.flush()
        return rom_checksum(self._db)

    def seal(
        self,
        publisher_id: str,
        *,
        cartridge_id: str | None = None,
        provenance_instance_id: str | None = None,
    ) -> dict[str, Any]:
        """Bind the meta, compute the ROM manifest and return the in-toto Statement to sign.

        After this, nothing may be added: the Statement names the manifest hash of what is written.
        """
        if self._done or self._statement is not None:
            raise CartridgeError("cartridge already sealed")
        try:
            self.flush()
            art = self._meta["acx.artifact_id"]
            self._meta["acx.publisher_id"] = publisher_id
            self._meta["acx.cartridge_id"] = cartridge_id or f"{publisher_id}/{art}@{uuid.uuid4()}"
            self._meta["acx.vec0_format"] = "1"
            self._write_meta()
            manifest_hash = self.manifest_hash()
            self._db.execute(
                "INSERT OR REPLACE INTO cartridge VALUES ('acx.rom_manifest_hash', ?)", (manifest_hash,)
            )
            checksum, file_count = self._checksum()
            self._statement = dsse.build_statement(
                manifest_hash=manifest_hash,
                subject_name=self._meta["acx.cartridge_id"],
                publisher_id=publisher_id,
                embedding_engine=self.engine,
                signed_at=self.created_at,
                provenance_instance_id=provenance_instance_id or self._meta["acx.cartridge_id"],
                file_count=file_count,
                checksum_hash=checksum,
            )
        except BaseException:
            self.abort()
            raise
        return self._statement

    def commit(self, envelope: dict[str, Any], public_key_der: bytes, algorithm: Algorithm) -> FinalizeResult:
        """Store the envelope over the sealed Statement with its SPKI, then move the file in place.

        Refuses an envelope whose payload is not the sealed Statement, so a signer cannot sign
        something other than what was written. Does NOT check the signature itself: the verifier does.
        """
        if self._done or self._statement is None:
            raise CartridgeError("seal the cartridge before committing a signature")
        try:
            if dsse.parse_envelope(dsse.envelope_json(envelope)).statement() != self._statement:
                raise CartridgeError("the envelope does not sign the sealed statement")
            manifest_hash = "sha256:" + self._statement["subject"][0]["digest"]["sha256"]
            keyid = keyid_for(algorithm, public_key_der)
            self._db.execute(
                "INSERT INTO signatures VALUES (?, 'rom-manifest', ?, ?, ?, ?, ?, ?)",
                (
                    "sig-rom-" + manifest_hash[7:19],
                    manifest_hash,
                    dsse.envelope_json(envelope),
                    keyid,
                    spki_pem(public_key_der),
                    algorithm,
                    self.created_at,
                ),
            )
            has_save = self._db.execute("SELECT 1 FROM objects WHERE zone = 'save' LIMIT 1").fetchone()
            self._db.execute(f"PRAGMA user_version = {USER_VERSION_BASE | (FLAG_SAVE if has_save else 0)}")
            self._db.execute("COMMIT")
            self._db.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._done = True
        return FinalizeResult(
            manifest_hash, keyid, envelope, self._meta["acx.cartridge_id"], dict(self.counts)
        )

    def finalize(
        self,
        signer: Signer,
        publisher_id: str,
        *,
        provenance_instance_id: str | None = None,
        cartridge_id: str | None = None,
    ) -> FinalizeResult:
        """Seal, sign (the one signing step, :func:`acx.core.dsse.sign_statement`) and commit.

        The three steps in one call for callers that sign in process (tests; ``cartridge_id`` lets
        the reference cartridge be rebuilt byte for byte); the service runs them through
        :func:`acx.core.export.build_cartridge`, which also gates and embeds the log attestation."""
        statement = self.seal(
            publisher_id, cartridge_id=cartridge_id, provenance_instance_id=provenance_instance_id
        )
        try:
            envelope = dsse.sign_statement(statement, signer)
        except BaseException:
            self.abort()
            raise
        return self.commit(envelope, signer.public_key_der(), signer.algorithm)

    def abort(self) -> None:
        """Drop everything written so far; no file is left behind."""
        with contextlib.suppress(Exception):
            self._db.close()
        with contextlib.suppress(FileNotFoundError):
            self._tmp.unlink()
        self._done = True
