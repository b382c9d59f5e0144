"""The ACX v0.1 cartridge file format: tables, pragmas, names, object ids and the ROM manifest hash.

Shared by the writer, the reader and strip (one definition each). Every signed thing is an
``objects`` row whose oid a reader recomputes from the live row or file; the ROM manifest (every
``rom`` objects row, sorted by ``(kind, source_ref)`` in code-point order) is what the DSSE envelope
signs, never the file bytes. Interop facts taken from the reference cartridge:

- bound meta values hash as the canonical JSON ``{"key": k, "value": v}`` with ``v`` the stored
  *string*, and their ``objects.sz`` is the UTF-8 length of ``v`` (not of the hashed bytes);
- capabilities are ``kind='cartridge'`` rows with ``source_ref = 'capability:<id>'``;
- ``acx.rom_manifest_hash`` and ``acx.vec0_format`` are meta but not bound (they are derived);
- sqlar data may be raw-deflate compressed (the reference) or zlib (stock ``sqlite3 -A``); we read
  both and write files uncompressed (``length(data) == sz``), which every sqlar reader accepts;
- a v0.1 verifier resolves only ``memory:<id>``, ``capability:<id>``, ``cartridge:<key>`` and sqlar
  names (the reference's ``liveOid``), so everything we bind is one of those (see
  :mod:`acx.core.cartridge.log_attestation`).

Does NOT stop anyone writing a well-formed cartridge: authenticity comes only from the signature
checked in :mod:`acx.core.trust` against a key the verifier chose.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import zlib
from datetime import UTC, datetime

from acx.core import canonical

APPLICATION_ID = 1094932529  # b"ACX1" big-endian
USER_VERSION_BASE = 0x01000100  # major 1, minor 0, vec0 format 1, flags 0
FLAG_SAVE = 0x01
SPEC_VERSION = "0.1"
DEFAULT_ENGINE = {"id": "local-hash-128", "dim": 128}
SQLITE_MAGIC = b"SQLite format 3\x00"

# Meta keys that are derived or SAVE-only and therefore never bound into the ROM manifest.
UNBOUND_META = frozenset({"acx.rom_manifest_hash", "acx.vec0_format", "acx.save_codebase_fingerprint"})
SAVE_META = frozenset({"acx.save_codebase_fingerprint"})

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SKILL_PATH = re.compile(r"rom/skills/([^/]+)/SKILL\.md")

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


def manifest_entry_bytes(source_ref: str, oid: str, canon: str, sz: int) -> bytes:
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


class ManifestHasher:
    """Streams the canonical JSON array of manifest entries into sha256 without holding it."""

    def __init__(self) -> None:
        self._h = hashlib.sha256(b"[")
        self.count = 0

    def add(self, source_ref: str, oid: str, canon: str, sz: int) -> None:
        if self.count:
            self._h.update(b",")
        self._h.update(manifest_entry_bytes(source_ref, oid, canon, sz))
        self.count += 1

    def hexdigest(self) -> str:
        h = self._h.copy()
        h.update(b"]")
        return h.hexdigest()


def sqlar_bytes(sz: int | None, data: bytes | None) -> bytes:
    if data is None:
        return b""
    if not isinstance(data, bytes):  # SQLite keeps TEXT or a number in a BLOB column
        raise CartridgeError("sqlar entry data is not a blob")
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
