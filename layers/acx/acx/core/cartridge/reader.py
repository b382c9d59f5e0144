"""Reads a cartridge back without trusting it: every oid is recomputed from the live rows and files.

Any SQLite failure (truncated, corrupted, not a database) surfaces as :class:`CartridgeError`.
Readers must not rely on the SAVE flag bit (the reference leaves it clear although it carries SAVE
rows). There is no ``memory-records.json`` file: the ``memory`` table *is* the JSON baseline, which
:meth:`CartridgeReader.memory_records` materialises. Does NOT decide trust: see :mod:`acx.core.trust`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acx.core import canonical
from acx.core.cartridge.format import (
    APPLICATION_ID,
    FLAG_SAVE,
    REQUIRED_TABLES,
    SQLITE_MAGIC,
    CartridgeError,
    ManifestHasher,
    meta_binding,
    oid_of,
    rom_checksum,
    sqlar_bytes,
)
from acx.core.signing import PublicKey

# (what, table, key column) of every table whose rows are looked up by key, as format.SCHEMA declares.
_KEYED_TABLES = (
    ("meta key", "cartridge", "key"),
    ("file", "sqlar", "name"),
    ("memory row", "memory", "id"),
    ("vector", "vectors", "memory_id"),
    ("signature", "signatures", "sig_id"),
    ("attestation", "attestations", "att_id"),
    ("skill", "acx_skill", "sqlar_path"),
    ("capability", "capabilities", "id"),
)


def _shown(value: object) -> str:
    """A hostile key or ref as a problem message names it: its repr, text or bytes cut at 80."""
    if isinstance(value, str) and len(value) > 80:
        value = value[:80] + "..."
    elif isinstance(value, bytes) and len(value) > 80:
        value = value[:80] + b"..."
    return repr(value)


@dataclass
class MemoryRow:
    """One ``memory`` row, its payload parsed."""

    id: str
    zone: str
    payload: str
    record: dict[str, Any]


@dataclass
class SignatureRow:
    """The ``signatures`` row for the ROM manifest (untrusted until :mod:`acx.core.trust` checks it)."""

    sig_id: str
    manifest_hash: str
    envelope: str
    keyid: str
    public_key_pem: str | None
    alg: str
    created_at: str


@dataclass
class Recomputed:
    """What the live content says, independent of ``objects.oid``."""

    manifest_hash: str
    entries: int
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    unbound_meta: list[str] = field(default_factory=list)
    manifest: list[dict[str, Any]] | None = None

    def note(self, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < 50:
            self.problems.append(message)


class CartridgeReader:
    """Read-only view of a cartridge that recomputes every oid from live rows and files.

    Any SQLite failure (truncated, corrupted, not a database) surfaces as :class:`CartridgeError`.
    Does NOT decide trust: a self-consistent cartridge can be forged by anyone; see acx.core.trust.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(100)
        except OSError as exc:
            raise CartridgeError(f"cannot open cartridge: {exc.strerror}") from None
        if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
            raise CartridgeError("not a SQLite file (bad or truncated header)")
        if int.from_bytes(head[68:72], "big") != APPLICATION_ID:
            raise CartridgeError("not an ACX cartridge (application_id is not ACX1)")
        self.user_version = int.from_bytes(head[60:64], "big")
        try:
            uri = self.path.resolve().as_uri() + "?mode=ro"
            self._db = sqlite3.connect(uri, uri=True)
            tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise CartridgeError(f"corrupt or truncated cartridge ({exc})") from None
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise CartridgeError(f"not an ACX v0.1 cartridge: missing tables {', '.join(missing)}")

    def close(self) -> None:
        """Close the database."""
        with contextlib.suppress(Exception):
            self._db.close()

    def __enter__(self) -> CartridgeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise CartridgeError(f"corrupt or truncated cartridge ({exc})") from None

    def _iter(self, sql: str, args: tuple[Any, ...] = ()) -> Iterator[Any]:
        try:
            yield from self._db.execute(sql, args)
        except sqlite3.Error as exc:
            raise CartridgeError(f"corrupt or truncated cartridge ({exc})") from None

    # -- plain accessors -------------------------------------------------------------------------
    @property
    def save_flag(self) -> bool:
        """The SAVE bit of user_version (informative only: the reference leaves it clear)."""
        return bool(self.user_version & FLAG_SAVE)

    def meta(self) -> dict[str, str]:
        """All meta keys (bound or not; see :meth:`recompute` for which are bound)."""
        return {k: v for k, v in self._rows("SELECT key, value FROM cartridge")}

    def embedding_engine(self) -> dict[str, Any] | None:
        """Parsed ``acx.embedding_engine`` or None."""
        raw = self.meta().get("acx.embedding_engine")
        try:
            value = canonical.loads(raw) if raw else None
        except canonical.CanonicalError:
            return None
        return value if isinstance(value, dict) else None

    def iter_memory(self, zone: str | None = None) -> Iterator[MemoryRow]:
        """Memory rows (payload parsed strictly); a payload that is not JSON raises CartridgeError."""
        sql = "SELECT id, zone, payload FROM memory"
        args: tuple[Any, ...] = ()
        if zone is not None:
            sql += " WHERE zone = ?"
            args = (zone,)
        for rid, z, payload in self._iter(sql + " ORDER BY id", args):
            try:
                record = canonical.loads(payload)
            except canonical.CanonicalError as exc:
                raise CartridgeError(f"memory {rid}: payload is not valid JSON ({exc.message})") from None
            if not isinstance(record, dict):
                raise CartridgeError(f"memory {rid}: payload is not a JSON object")
            yield MemoryRow(rid, z, payload, record)

    def memory_records(self, zone: str | None = None) -> list[dict[str, Any]]:
        """The JSON baseline (what ``memory-records.json`` holds): records in id order."""
        return [m.record for m in self.iter_memory(zone)]

    def file_names(self) -> list[str]:
        """sqlar names in code-point order (with :meth:`read_file`, how tests and tools list and copy
        a cartridge's files; the verifier reads the one it needs with :meth:`find_file`)."""
        return [r[0] for r in self._rows("SELECT name FROM sqlar ORDER BY name")]

    def find_file(self, name: str) -> bytes | None:
        """Uncompressed bytes of one sqlar entry, or None when there is none."""
        rows = self._rows("SELECT sz, data FROM sqlar WHERE name = ?", (name,))
        return sqlar_bytes(rows[0][0], rows[0][1]) if rows else None

    def read_file(self, name: str) -> bytes:
        """Uncompressed bytes of one sqlar entry; CartridgeError when missing."""
        data = self.find_file(name)
        if data is None:
            raise CartridgeError(f"no file {name!r}")
        return data

    def skills(self) -> list[dict[str, Any]]:
        """The acx_skill index rows."""
        cols = ("sqlar_path", "name", "description", "license", "content_sha256")
        return [
            dict(zip(cols, r, strict=True))
            for r in self._rows(
                "SELECT sqlar_path, name, description, license, content_sha256 FROM acx_skill "
                "ORDER BY sqlar_path"
            )
        ]

    def attestations(self) -> list[dict[str, Any]]:
        """Attestation rows."""
        cols = ("att_id", "type", "subject_oid", "media_type", "document", "status_url", "created_at")
        return [
            dict(zip(cols, r, strict=True))
            for r in self._rows(
                "SELECT att_id, type, subject_oid, media_type, document, status_url, created_at "
                "FROM attestations ORDER BY att_id"
            )
        ]

    def signatures(self) -> list[SignatureRow]:
        """ROM-manifest signature rows (oldest first)."""
        return [
            SignatureRow(*r)
            for r in self._rows(
                "SELECT sig_id, manifest_hash, envelope, keyid, public_key_pem, alg, created_at "
                "FROM signatures "
                "WHERE target = 'rom-manifest' ORDER BY created_at, sig_id"
            )
        ]

    def signature(self) -> SignatureRow | None:
        """The first ROM-manifest signature row, or None (a legacy cartridge)."""
        sigs = self.signatures()
        return sigs[0] if sigs else None

    def counts(self) -> dict[str, Any]:
        """Object counts per kind and zone, memory and vector counts per zone."""
        objects: dict[str, dict[str, int]] = {}
        for kind, zone, n in self._rows("SELECT kind, zone, count(*) FROM objects GROUP BY kind, zone"):
            objects.setdefault(kind, {})[zone] = n
        memory = {z: n for z, n in self._rows("SELECT zone, count(*) FROM memory GROUP BY zone")}
        vectors = {z: n for z, n in self._rows("SELECT zone, count(*) FROM vectors GROUP BY zone")}
        files = self._rows("SELECT count(*) FROM sqlar")[0][0]
        return {"objects": objects, "memory": memory, "vectors": vectors, "files": files}

    # -- recomputation -----------------------------------------------------------------------------
    def _live(self, kind: str, ref: str) -> tuple[str, int, str, str] | None:
        """(oid, sz, expected canon, zone) recomputed from the live content behind an objects row."""
        if kind == "memory" and ref.startswith("memory:"):
            rows = self._rows("SELECT zone, payload FROM memory WHERE id = ?", (ref[7:],))
            if not rows or not isinstance(rows[0][1], str):
                return None
            data = rows[0][1].encode("utf-8")
            return oid_of(data), len(data), "jcs-rfc8785", rows[0][0]
        if kind == "sqlar":
            rows = self._rows("SELECT sz, data FROM sqlar WHERE name = ?", (ref,))
            if not rows or not isinstance(rows[0][1], bytes | None):
                return None
            data = sqlar_bytes(rows[0][0], rows[0][1])
            return oid_of(data), len(data), "raw", ref.split("/", 1)[0]
        if kind == "cartridge" and ref.startswith("cartridge:"):
            rows = self._rows("SELECT value FROM cartridge WHERE key = ?", (ref[10:],))
            if not rows or not isinstance(rows[0][0], str):
                return None
            oid, sz = meta_binding(ref[10:], rows[0][0])
            return oid, sz, "jcs-rfc8785", "rom"
        if kind == "cartridge" and ref.startswith("capability:"):
            rows = self._rows("SELECT json FROM capabilities WHERE id = ?", (ref[11:],))
            if not rows or not isinstance(rows[0][0], str):
                return None
            data = rows[0][0].encode("utf-8")
            return oid_of(data), len(data), "jcs-rfc8785", "rom"
        if kind == "attestation" and ref.startswith("attestation:"):
            rows = self._rows("SELECT document FROM attestations WHERE att_id = ?", (ref[12:],))
            if not rows or not isinstance(rows[0][0], str):
                return None
            data = rows[0][0].encode("utf-8")
            return oid_of(data), len(data), "raw", "rom"
        return None

    def recompute(self, collect: bool = False) -> Recomputed:
        """Recompute every oid and the ROM manifest hash from live content; list every disagreement.

        Checks: each objects row's oid/sz/canon/zone against its live source; ``memory.oid`` and the
        derived memory columns against the payload; payloads are canonical JSON; every memory row,
        file, capability and attestation is covered by an objects row. Does NOT check the signature.
        """
        rec = Recomputed(manifest_hash="", entries=0)
        hasher = ManifestHasher()
        entries: list[dict[str, Any]] = []
        for kind, ref, stored_oid, canon_, zone, sz in self._iter(
            "SELECT kind, source_ref, oid, canon, zone, sz FROM objects ORDER BY kind, source_ref"
        ):
            if not all(isinstance(v, str) for v in (kind, ref, canon_, zone)):
                # SQLite keeps a BLOB in a TEXT column: such a row names nothing a manifest can hold.
                rec.note(f"objects row {_shown(ref)}: kind, source_ref, canon and zone must be text")
                continue
            live = self._live(kind, ref)
            if live is None:
                rec.note(f"{kind} object {ref}: live content missing")
                live_oid, live_sz = "sha256:" + "0" * 64, -1
            else:
                live_oid, live_sz, want_canon, live_zone = live
                if live_oid != stored_oid:
                    rec.note(f"{kind} object {ref}: recomputed oid differs from objects.oid")
                if live_sz != sz:
                    rec.note(f"{kind} object {ref}: size differs from objects.sz")
                if canon_ != want_canon:
                    rec.note(f"{kind} object {ref}: canon {canon_!r} should be {want_canon!r}")
                if zone != live_zone:
                    rec.note(f"{kind} object {ref}: objects.zone {zone!r} but content is in {live_zone!r}")
            if zone == "rom":
                hasher.add(ref, live_oid, canon_, live_sz)
                if collect:
                    entries.append({"sourceRef": ref, "oid": live_oid, "canon": canon_, "sz": live_sz})
        rec.manifest = entries if collect else None
        rec.manifest_hash = "sha256:" + hasher.hexdigest()
        rec.entries = hasher.count
        self._check_keys(rec)
        self._check_memory(rec)
        for what, sql in (
            (
                "memory row",
                "SELECT id FROM memory WHERE 'memory:' || id NOT IN "
                "(SELECT source_ref FROM objects WHERE kind = 'memory')",
            ),
            (
                "file",
                "SELECT name FROM sqlar WHERE name NOT IN "
                "(SELECT source_ref FROM objects WHERE kind = 'sqlar')",
            ),
            (
                "capability",
                "SELECT id FROM capabilities WHERE 'capability:' || id NOT IN "
                "(SELECT source_ref FROM objects WHERE kind = 'cartridge')",
            ),
            (
                "attestation",
                "SELECT att_id FROM attestations WHERE 'attestation:' || att_id NOT IN "
                "(SELECT source_ref FROM objects WHERE kind = 'attestation')",
            ),
        ):
            for (name,) in self._iter(sql):
                rec.note(f"{what} {name} is not covered by any objects row")
        rec.unbound_meta = [
            k
            for (k,) in self._rows(
                "SELECT key FROM cartridge WHERE 'cartridge:' || key NOT IN "
                "(SELECT source_ref FROM objects WHERE kind = 'cartridge') ORDER BY key"
            )
        ]
        return rec

    def _check_keys(self, rec: Recomputed) -> None:
        """Every keyed row is one text key: the schema is the file's own, so a hostile table rebuilt
        without its primary key can hold a second row under a signed id (a lookup by id checks only
        the first, while memory_records returns both), or a NULL key that no coverage query sees."""
        for what, table, col in _KEYED_TABLES:
            sql = (
                f"SELECT CAST({col} AS TEXT), count(*), sum(typeof({col}) <> 'text') FROM {table} "  # noqa: S608
                f"GROUP BY CAST({col} AS TEXT) HAVING count(*) > 1 OR sum(typeof({col}) <> 'text') > 0 "
                "ORDER BY 1"
            )
            for key, n, not_text in self._iter(sql):
                shown = _shown(key)
                if not_text:
                    rec.note(f"{what} {shown}: the key is not text")
                if n > 1:
                    rec.note(f"{what} {shown}: {n} rows under one key")

    def _check_memory(self, rec: Recomputed) -> None:
        for rid, zone, afp, cbf, payload, oid in self._iter(
            "SELECT id, zone, artifact_fingerprint, codebase_fingerprint, payload, oid FROM memory"
        ):
            if not isinstance(payload, str):  # the file's own schema: SQLite stores a BLOB in a TEXT column
                rec.note(f"memory {rid}: payload is not text")
                continue
            data = payload.encode("utf-8")
            if oid_of(data) != oid:
                rec.note(f"memory {rid}: memory.oid differs from the payload hash")
            try:
                record = canonical.loads(data)
                canon_ok = canonical.dumps(record) == data
            except canonical.CanonicalError:
                rec.note(f"memory {rid}: payload is not valid JSON")
                continue
            if not canon_ok or not isinstance(record, dict):
                rec.note(f"memory {rid}: payload is not canonical JSON of an object")
                continue
            if record.get("id") != rid or record.get("zone") != zone:
                rec.note(f"memory {rid}: id/zone columns disagree with the payload")
            if record.get("artifactFingerprint") != afp or (
                zone == "save" and record.get("codebaseFingerprint") != cbf
            ):
                rec.note(f"memory {rid}: fingerprint columns disagree with the payload")

    def manifest(self) -> list[dict[str, Any]]:
        """The recomputed ROM manifest (live oids), in signing order."""
        return self.recompute(collect=True).manifest or []

    def manifest_hash(self) -> str:
        """Recomputed ROM manifest hash (from live content, never from objects.oid)."""
        return self.recompute().manifest_hash

    def orphan_vectors(self) -> int:
        """Vectors with no memory row (no JSON baseline to re-index them from)."""
        return int(
            self._rows("SELECT count(*) FROM vectors WHERE memory_id NOT IN (SELECT id FROM memory)")[0][0]
        )

    def checksum(self) -> tuple[str, int]:
        """(checksumHash, fileCount) over the stored ROM oids; meaningful once recompute() is clean."""
        try:
            return rom_checksum(self._db)
        except sqlite3.Error as exc:
            raise CartridgeError(f"corrupt or truncated cartridge ({exc})") from None

    def public_key(self) -> PublicKey | None:
        """The SPKI carried in the signature row (untrusted: anyone can put a key there)."""
        sig = self.signature()
        if sig is None or not sig.public_key_pem:
            return None
        try:
            return PublicKey.from_pem(sig.public_key_pem)
        except (ValueError, TypeError):
            return None
