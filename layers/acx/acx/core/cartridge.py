"""ACX v0.1 cartridges: one SQLite file, written as a stream and read back without trusting it.

Layout (DESIGN §4, mirrored from the reference cartridge in ``../shared/vectors``): the tables in
:data:`SCHEMA`, ``PRAGMA application_id = 1094932529`` ("ACX1") and ``PRAGMA user_version =
0x01000100 | save_flag``. Every signed thing is an ``objects`` row whose oid is recomputed by the
reader from the live row or file; the ROM manifest (every ``rom`` objects row, sorted by
``(kind, source_ref)`` in code-point order) is what the DSSE envelope signs, never the file bytes.

Interop facts taken from the reference cartridge (they are not all obvious from the standard text):

- bound meta values hash as the canonical JSON ``{"key": k, "value": v}`` with ``v`` the stored
  *string*, and their ``objects.sz`` is the UTF-8 length of ``v`` (not of the hashed bytes);
- capabilities are ``kind='cartridge'`` rows with ``source_ref = 'capability:<id>'``;
- ``acx.rom_manifest_hash`` and ``acx.vec0_format`` are meta but not bound (they are derived);
- there is no ``memory-records.json`` file: the ``memory`` table *is* the JSON baseline (each payload
  is the record's canonical JSON). :meth:`CartridgeReader.memory_records` materialises it;
- sqlar data may be raw-deflate compressed (the reference) or zlib (stock ``sqlite3 -A``); we read
  both and write files uncompressed (``length(data) == sz``), which every sqlar reader accepts;
- the reference leaves the SAVE flag bit clear although it carries SAVE rows, so readers must not
  rely on the flag; we set it whenever a SAVE row is present, as §4 says.

Attackers this does NOT stop by itself: anyone can write a well-formed cartridge; authenticity comes
only from the signature checked in :mod:`acx.core.trust` against a key the verifier chose.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
import sqlite3
import struct
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acx.core import canonical
from acx.core.signing import PublicKey, Signer, keyid_for, spki_pem

APPLICATION_ID = 1094932529  # b"ACX1" big-endian
USER_VERSION_BASE = 0x01000100  # major 1, minor 0, vec0 format 1, flags 0
FLAG_SAVE = 0x01
SPEC_VERSION = "0.1"
DEFAULT_ENGINE = {"id": "local-hash-128", "dim": 128}
SQLITE_MAGIC = b"SQLite format 3\x00"

# Meta keys that are derived or SAVE-only and therefore never bound into the ROM manifest.
UNBOUND_META = frozenset({"acx.rom_manifest_hash", "acx.vec0_format", "acx.save_codebase_fingerprint"})
SAVE_META = frozenset({"acx.save_codebase_fingerprint"})

PORTABLE_LABEL = "portable-core"
FIELD_LABEL = "field-learned"

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_SKILL = re.compile(r"rom/skills/([^/]+)/SKILL\.md")

SCHEMA = """
CREATE TABLE cartridge (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE sqlar (
  name TEXT PRIMARY KEY,
  mode INT, mtime INT,
  sz   INT,
  data BLOB
);
CREATE TABLE memory (
  id                   TEXT PRIMARY KEY NOT NULL,
  zone                 TEXT NOT NULL CHECK (zone IN ('rom','save')),
  artifact_fingerprint TEXT NOT NULL,
  codebase_fingerprint TEXT,
  payload              TEXT NOT NULL,
  oid                  TEXT NOT NULL,
  created_at           TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX memory_zone_fp ON memory(zone, artifact_fingerprint);
CREATE TABLE vectors (
  memory_id            TEXT PRIMARY KEY,
  zone                 TEXT NOT NULL,
  embedding            BLOB NOT NULL,
  artifact_fingerprint TEXT
);
CREATE TABLE objects (
  oid        TEXT PRIMARY KEY NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('sqlar','memory','cartridge','skill','attestation')),
  source_ref TEXT NOT NULL,
  canon      TEXT NOT NULL,
  zone       TEXT NOT NULL CHECK (zone IN ('rom','save')),
  sz         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE signatures (
  sig_id         TEXT PRIMARY KEY NOT NULL,
  target         TEXT NOT NULL DEFAULT 'rom-manifest',
  manifest_hash  TEXT NOT NULL,
  envelope       TEXT NOT NULL,
  keyid          TEXT NOT NULL,
  public_key_pem TEXT,
  alg            TEXT NOT NULL DEFAULT 'ed25519',
  created_at     TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE attestations (
  att_id      TEXT PRIMARY KEY NOT NULL,
  type        TEXT NOT NULL,
  subject_oid TEXT,
  media_type  TEXT NOT NULL,
  document    TEXT NOT NULL,
  status_url  TEXT,
  created_at  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE acx_skill (
  sqlar_path     TEXT PRIMARY KEY,
  name           TEXT NOT NULL,
  description    TEXT NOT NULL,
  license        TEXT, compatibility TEXT, skill_version TEXT,
  body_tokens    INTEGER,
  content_sha256 TEXT NOT NULL,
  resources      TEXT NOT NULL,
  ext            TEXT,
  schema_version TEXT NOT NULL
);
CREATE TABLE capabilities (
  id           TEXT PRIMARY KEY NOT NULL,
  json         TEXT NOT NULL,
  content_hash TEXT NOT NULL
);
"""
REQUIRED_TABLES = (
    "cartridge",
    "sqlar",
    "memory",
    "vectors",
    "objects",
    "signatures",
    "attestations",
    "acx_skill",
    "capabilities",
)


class CartridgeError(Exception):
    """A cartridge that cannot be written or read (bad name, corrupt/truncated file, wrong format)."""


def oid_of(data: bytes) -> str:
    """Object id: ``sha256:`` + hex over exactly ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def now_rfc3339() -> str:
    """UTC now with milliseconds, ``Z`` suffix (the reference's timestamp shape)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def validate_sqlar_name(name: str) -> str:
    """Return the zone (``rom``/``save``) of a sqlar path, or raise :class:`CartridgeError`.

    Whitelist, not blacklist: every segment must match ``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$``, so
    ``..``, absolute paths, backslashes, NUL and empty segments are all refused. Does NOT stop a
    hostile *content* (a file that is a valid name but a malicious body): that is the scrub gate's job.
    """
    if not isinstance(name, str) or not name:
        raise CartridgeError("file name must be a non-empty string")
    parts = name.split("/")
    if len(parts) < 2 or parts[0] not in ("rom", "save"):
        raise CartridgeError(f"file name {name!r} must start with rom/ or save/")
    for seg in parts[1:]:
        if seg in (".", "..") or not _SEGMENT.fullmatch(seg):
            raise CartridgeError(f"file name {name!r} has an invalid path segment")
    return parts[0]


def meta_binding(key: str, value: str) -> tuple[str, int]:
    """(oid, sz) of a bound meta value: canonical ``{key, value}``; sz = UTF-8 length of value (reference)."""
    return oid_of(canonical.dumps({"key": key, "value": value})), len(value.encode("utf-8"))


def export_view(record: dict[str, Any], zone: str) -> dict[str, Any]:
    """The record as it may leave the installation (the export boundary of DESIGN §1.1).

    ROM: ``repoId`` null, ``repoLabel``/``projectLabel`` ``portable-core``, ``codebaseFingerprint``
    null. SAVE (only when the caller chose to include field-learned records): ``repoId`` null, labels
    ``field-learned``, codebase fingerprint kept, ``foreign: true``. Does NOT stop secrets inside free
    text (titles, summaries): the scrub gate runs over the result.
    """
    out = dict(record)
    out.pop("artifactFingerprint", None)
    out.pop("zone", None)
    out["repoId"] = None
    if zone == "rom":
        out["repoLabel"] = PORTABLE_LABEL
        out["projectLabel"] = PORTABLE_LABEL
        out["codebaseFingerprint"] = None
        out.pop("foreign", None)
    elif zone == "save":
        out["repoLabel"] = FIELD_LABEL
        out["projectLabel"] = FIELD_LABEL
        out["foreign"] = True
    else:
        raise CartridgeError(f"unknown zone {zone!r}")
    return out


def _fingerprint(record: dict[str, Any]) -> str:
    from acx.core.fingerprint import artifact_fingerprint

    return str(artifact_fingerprint(record))


def memory_payload(record: dict[str, Any], zone: str) -> tuple[dict[str, Any], bytes]:
    """Boundary-applied payload (with ``artifactFingerprint`` and ``zone``) and its canonical bytes."""
    payload = export_view(record, zone)
    payload["artifactFingerprint"] = _fingerprint(payload)
    payload["zone"] = zone
    return payload, canonical.dumps(payload)


def parse_frontmatter(text: str) -> dict[str, str]:
    """Top-level ``key: value`` scalars of a ``---`` YAML frontmatter block (enough for SKILL.md)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    out: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if not line or line[0].isspace() or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if value:
            out[key.strip()] = value
    return out


def _manifest_entry_bytes(source_ref: str, oid: str, canon: str, sz: int) -> bytes:
    # RFC 8785 of {canon, oid, sourceRef, sz} (keys already in code-unit order).
    return canonical.dumps({"canon": canon, "oid": oid, "sourceRef": source_ref, "sz": sz})


def rom_checksum(db: sqlite3.Connection) -> tuple[str, int]:
    """(checksumHash, fileCount) of the predicate, as the reference computes them.

    checksumHash = sha256 over the lines ``"<oid>  <sourceRef>"`` of the ROM objects sorted by oid,
    joined by ``\n`` (no trailing newline); fileCount = number of ROM manifest entries. Reads the
    stored oids: callers check those against live content first (see CartridgeReader.recompute).
    """
    h = hashlib.sha256()
    n = 0
    for oid, ref in db.execute("SELECT oid, source_ref FROM objects WHERE zone = 'rom' ORDER BY oid"):
        h.update((b"\n" if n else b"") + f"{oid}  {ref}".encode())
        n += 1
    return "sha256:" + h.hexdigest(), n


class _ManifestHasher:
    """Streams the canonical JSON array of manifest entries into sha256 without holding it."""

    def __init__(self) -> None:
        self._h = hashlib.sha256(b"[")
        self.count = 0

    def add(self, source_ref: str, oid: str, canon: str, sz: int) -> None:
        if self.count:
            self._h.update(b",")
        self._h.update(_manifest_entry_bytes(source_ref, oid, canon, sz))
        self.count += 1

    def hexdigest(self) -> str:
        h = self._h.copy()
        h.update(b"]")
        return h.hexdigest()


def _sqlar_bytes(sz: int | None, data: bytes | None) -> bytes:
    if data is None:
        return b""
    data = bytes(data)
    if sz is None or len(data) == sz:
        return data
    for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):  # stock sqlar (zlib), reference (raw deflate)
        try:
            out = zlib.decompress(data, wbits)
        except zlib.error:
            continue
        if len(out) == sz:
            return out
    raise CartridgeError("sqlar entry cannot be decompressed to its declared size")


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
            m = _SKILL.fullmatch(name)
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

    def add_attestation(self, att_id: str, type_: str, media_type: str, document: bytes) -> str:
        """Add a ROM attestation document (bound by the manifest as ``attestation:<att_id>``, raw)."""
        oid = oid_of(document)
        self.flush()
        try:
            self._db.execute(
                "INSERT INTO attestations VALUES (?, ?, NULL, ?, ?, NULL, ?)",
                (att_id, type_, media_type, document.decode("utf-8"), self.created_at),
            )
            self._db.execute(
                "INSERT INTO objects VALUES (?, 'attestation', ?, 'raw', 'rom', ?)",
                (oid, "attestation:" + att_id, len(document)),
            )
        except sqlite3.IntegrityError:
            raise CartridgeError(f"duplicate attestation {att_id}") from None
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
        hasher = _ManifestHasher()
        for e in self.manifest_entries():
            hasher.add(e["sourceRef"], e["oid"], e["canon"], e["sz"])
        return "sha256:" + hasher.hexdigest()

    def _checksum(self) -> tuple[str, int]:
        self.flush()
        return rom_checksum(self._db)

    def finalize(
        self,
        signer: Signer,
        publisher_id: str,
        *,
        provenance_instance_id: str | None = None,
        cartridge_id: str | None = None,
    ) -> FinalizeResult:
        """Bind meta, compute the manifest, sign a DSSE envelope over it, and move the file in place."""
        from acx.core import dsse

        if self._done:
            raise CartridgeError("cartridge already finalized")
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
            statement = dsse.build_statement(
                manifest_hash=manifest_hash,
                subject_name=self._meta["acx.cartridge_id"],
                publisher_id=publisher_id,
                embedding_engine=self.engine,
                signed_at=self.created_at,
                provenance_instance_id=provenance_instance_id or self._meta["acx.cartridge_id"],
                file_count=file_count,
                checksum_hash=checksum,
            )
            envelope = dsse.sign_statement(statement, signer)
            der = signer.public_key_der()
            keyid = keyid_for(signer.algorithm, der)
            self._db.execute(
                "INSERT INTO signatures VALUES (?, 'rom-manifest', ?, ?, ?, ?, ?, ?)",
                (
                    "sig-rom-" + manifest_hash[7:19],
                    manifest_hash,
                    dsse.envelope_json(envelope),
                    keyid,
                    spki_pem(der),
                    signer.algorithm,
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

    def abort(self) -> None:
        """Drop everything written so far; no file is left behind."""
        with contextlib.suppress(Exception):
            self._db.close()
        with contextlib.suppress(FileNotFoundError):
            self._tmp.unlink()
        self._done = True


# ------------------------------------------------------------------------------------------------
# Reading


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
        """sqlar names in code-point order."""
        return [r[0] for r in self._rows("SELECT name FROM sqlar ORDER BY name")]

    def read_file(self, name: str) -> bytes:
        """Uncompressed bytes of one sqlar entry."""
        rows = self._rows("SELECT sz, data FROM sqlar WHERE name = ?", (name,))
        if not rows:
            raise CartridgeError(f"no file {name!r}")
        return _sqlar_bytes(rows[0][0], rows[0][1])

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
            if not rows:
                return None
            data = _sqlar_bytes(rows[0][0], rows[0][1])
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
        hasher = _ManifestHasher()
        entries: list[dict[str, Any]] = []
        for kind, ref, stored_oid, canon_, zone, sz in self._iter(
            "SELECT kind, source_ref, oid, canon, zone, sz FROM objects ORDER BY kind, source_ref"
        ):
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

    def _check_memory(self, rec: Recomputed) -> None:
        for rid, zone, afp, cbf, payload, oid in self._iter(
            "SELECT id, zone, artifact_fingerprint, codebase_fingerprint, payload, oid FROM memory"
        ):
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


def strip_to_rom(src: str | Path, dst: str | Path) -> tuple[str, str]:
    """Copy ``src`` to ``dst`` without the SAVE zone; return (manifest hash before, after), recomputed.

    Deletes SAVE rows from memory, sqlar, vectors and objects, the SAVE meta and the flag bit, then
    VACUUMs (so deleted SAVE bytes do not linger in free pages). The two hashes are equal for any
    cartridge whose signature covers only ROM, which is the point: the signature still verifies.
    """
    src, dst = Path(src), Path(dst)
    with CartridgeReader(src) as reader:
        before = reader.manifest_hash()
    tmp = dst.with_name(dst.name + ".partial")
    try:
        shutil.copyfile(src, tmp)
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.execute("BEGIN")
            db.execute("DELETE FROM memory WHERE zone = 'save'")
            db.execute("DELETE FROM sqlar WHERE name LIKE 'save/%'")
            db.execute("DELETE FROM vectors WHERE zone = 'save'")
            db.execute("DELETE FROM objects WHERE zone = 'save'")
            db.execute("DELETE FROM acx_skill WHERE sqlar_path LIKE 'save/%'")
            db.executemany("DELETE FROM cartridge WHERE key = ?", [(k,) for k in SAVE_META])
            version = db.execute("PRAGMA user_version").fetchone()[0]
            db.execute(f"PRAGMA user_version = {int(version) & ~FLAG_SAVE}")
            db.execute("COMMIT")
            db.execute("VACUUM")
        finally:
            db.close()
        os.replace(tmp, dst)
    except sqlite3.Error as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise CartridgeError(f"cannot strip cartridge ({exc})") from None
    with CartridgeReader(dst) as reader:
        after = reader.manifest_hash()
    return before, after
