"""The upload bundle ``acx.memory-bundle/1``: parsing with service limits (packing a directory into
one is :mod:`acx.core.packing`). One module: the whole-document and the streamed
parser share every check and limit, and the declarative model beside them is the same format's schema.

Every refusal is a :class:`BundleError` naming the JSON path and the limit (413 for what is too big
to take at all, 422 for what is malformed), and never quoting content, which may hold a secret.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from acx.core.canonical import CanonicalError, child_path, dumps, dumps_record, loads
from acx.core.jsonstream import StreamError, ValueTooLarge, split_object
from acx.core.records import RecordError, validate_record

SCHEMA_VERSION = "acx.memory-bundle/1"
SEGMENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_SEGMENT_RE = re.compile(SEGMENT_PATTERN)
_TOP_LEVEL = frozenset({"schemaVersion", "records", "knowledge", "skills", "vectors"})
_LONG_FIELDS = {"title": "max_title", "summary": "max_summary"}


@dataclass(frozen=True)
class Limits:
    """Service limits for one inline bundle."""

    max_body_bytes: int = 5 * 1024 * 1024
    max_records: int = 10_000
    max_title: int = 512
    max_summary: int = 16_384
    max_string: int = 1024
    max_tags: int = 64
    max_tag_length: int = 128
    max_depth: int = 16
    max_files_bytes: int = 4 * 1024 * 1024
    # Raw JSON size of one record, and of any other top-level member (knowledge, skills, vectors), when
    # a bundle is read as a stream: bounds what is held at once. A record within the field limits above
    # is far smaller, even with every character written as a \u escape.
    max_record_bytes: int = 1024 * 1024
    max_member_bytes: int = 32 * 1024 * 1024


class BundleError(ValueError):
    """A refused bundle: ``code`` for machines, ``message`` and ``path`` for people, HTTP ``status``."""

    def __init__(self, code: str, message: str, path: str = "$", status: int = 422) -> None:
        path = safe_path(path)
        super().__init__(f"{path}: {message}")
        self.code = code
        self.message = message
        self.path = path
        self.status = status


def safe_path(path: str) -> str:
    """``path``, cut before the first key that may be a secret (a refused key is user content too).

    Paths name object keys; an unknown or duplicate key is whatever the user sent, so a pasted token
    used as a key would come back in the error. Only on the error path: one scan of a short string.
    """
    from acx.core.scrub import scan_text  # lazy: error path only; RE2 + ~200 rules, ~35 ms CPU

    if path == "$":
        return path
    findings = scan_text(path)
    if not findings:
        return path
    head = path.encode("utf-8", "surrogatepass")[: min(f.offset for f in findings)]
    text = head.decode("utf-8", "ignore")
    cut = max(text.rfind("."), text.rfind("["))
    return text[:cut] if cut > 0 else "$"


# --- Declarative shape (the JSON Schema; built on first use to keep pydantic off the import path).
# parse_bundle enforces the same shape plus the limits.


def _build_model() -> Any:  # imports inside: pydantic is kept off the import path (see above)
    from typing import Annotated, Literal

    from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

    from acx.core import records

    MemoryRecord = records.__getattr__("MemoryRecord")

    class FileEntry(BaseModel):
        """A knowledge markdown file or a skill's SKILL.md."""

        model_config = ConfigDict(extra="forbid", strict=True)
        path: StrictStr
        content: StrictStr

    class EngineDescriptor(BaseModel):
        """Which embedding engine produced the vectors."""

        model_config = ConfigDict(extra="forbid", strict=True)
        id: StrictStr
        dim: Annotated[StrictInt, Field(ge=1, le=4096)]

    class VectorItem(BaseModel):
        """One record's vector."""

        model_config = ConfigDict(extra="forbid", strict=True)
        id: StrictStr
        vector: list[float]

    class VectorSet(BaseModel):
        """Optional precomputed vectors, tagged with their engine (an importer may discard them)."""

        model_config = ConfigDict(extra="forbid", strict=True)
        engine: EngineDescriptor
        items: list[VectorItem]

    class BundleModel(BaseModel):
        """An upload bundle."""

        model_config = ConfigDict(extra="forbid", strict=True, title="AcxMemoryBundle")
        schemaVersion: Literal["acx.memory-bundle/1"]
        records: list[MemoryRecord]  # type: ignore[valid-type]
        knowledge: list[FileEntry] = Field(default_factory=list)
        skills: list[FileEntry] = Field(default_factory=list)
        vectors: VectorSet | None = None

    return BundleModel


def __getattr__(name: str) -> Any:
    """``BundleModel``: the pydantic model of a bundle, built on first use (pydantic is slow to import)."""
    if name == "BundleModel":
        model = _build_model()
        globals()["BundleModel"] = model
        return model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Bundle:
    """A parsed, validated bundle; records stay the dicts the user sent."""

    records: list[dict[str, Any]]
    knowledge: list[tuple[str, str]] = field(default_factory=list)
    skills: list[tuple[str, str]] = field(default_factory=list)
    vectors: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schemaVersion": SCHEMA_VERSION,
            "records": self.records,
            "knowledge": [{"path": p, "content": c} for p, c in self.knowledge],
            "skills": [{"path": p, "content": c} for p, c in self.skills],
        }
        if self.vectors is not None:
            out["vectors"] = self.vectors
        return out

    def canonical_bytes(self) -> bytes:
        """RFC 8785 bytes of the bundle (small bundles; large ones go through :meth:`write_canonical`)."""
        out = io.BytesIO()
        self.write_canonical(out)
        return out.getvalue()

    def write_canonical(self, out: IO[bytes], batch: int = 256) -> str:
        """Write the RFC 8785 bytes of the bundle to ``out`` record batch by record batch; returns their
        sha256 hex. Never holds the whole document: a 100 MiB upload is stored from a spool file."""
        digest = hashlib.sha256()

        def emit(data: bytes) -> None:
            digest.update(data)
            out.write(data)

        emit(b'{"knowledge":' + dumps([{"path": p, "content": c} for p, c in self.knowledge]))
        emit(b',"records":[')
        for start in range(0, len(self.records), batch):
            chunk = b",".join(dumps_record(r) for r in self.records[start : start + batch])
            emit(chunk if start == 0 else b"," + chunk)
        emit(b'],"schemaVersion":' + dumps(SCHEMA_VERSION))
        emit(b',"skills":' + dumps([{"path": p, "content": c} for p, c in self.skills]))
        if self.vectors is not None:
            emit(b',"vectors":' + dumps(self.vectors))
        emit(b"}")
        return digest.hexdigest()


def write_schema(path: Path | None = None) -> Path:
    """Write the bundle JSON Schema (generated from the models) to ``acx/schemas/bundle.schema.json``:
    how the shipped schema is regenerated (tests/unit/core/test_bundle.py fails when it is stale)."""
    target = path or Path(__file__).resolve().parent.parent / "schemas" / "bundle.schema.json"
    schema = __getattr__("BundleModel").model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://acx.dev/schemas/memory-bundle-1.json"
    target.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return target


# --- Parsing


def _too_deep(value: Any, limit: int, path: str = "$") -> str | None:
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        node, path, depth = stack.pop()
        if depth > limit:
            return path
        if type(node) is dict:
            for key, item in node.items():
                if type(item) is dict or type(item) is list:
                    stack.append((item, f"{path}.{key}", depth + 1))
        elif type(node) is list:
            for index, item in enumerate(node):
                if type(item) is dict or type(item) is list:
                    stack.append((item, f"{path}[{index}]", depth + 1))
    return None


def _check_segments(path: str, where: str, shape: str) -> None:
    for segment in path.split("/"):
        if _SEGMENT_RE.fullmatch(segment) is None:
            raise BundleError(
                "invalid_path",
                f"each path segment must match {SEGMENT_PATTERN} (expected {shape})",
                where,
            )


def _knowledge_ok(path: str) -> bool:
    parts = path.split("/")
    if len(parts) == 2 and parts[0] != "knowledge":
        return False
    return len(parts) <= 2 and parts[-1].endswith(".md") and len(parts[-1]) > 3


def _skill_ok(path: str) -> bool:
    parts = path.split("/")
    return len(parts) == 3 and parts[0] == "skills" and parts[2] == "SKILL.md"


def _files(doc: dict[str, Any], name: str, limits: Limits, budget: list[int]) -> list[tuple[str, str]]:
    entries = doc.get(name, [])
    if type(entries) is not list:
        raise BundleError("invalid_type", "must be an array of {path, content}", f"$.{name}")
    shape = "knowledge/<name>.md or <name>.md" if name == "knowledge" else "skills/<name>/SKILL.md"
    accept = _knowledge_ok if name == "knowledge" else _skill_ok
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"$.{name}[{index}]"
        if type(entry) is not dict or set(entry) != {"path", "content"}:
            raise BundleError("invalid_type", "must be an object with exactly path and content", where)
        path, content = entry["path"], entry["content"]
        if type(path) is not str or type(content) is not str:
            raise BundleError("invalid_type", "path and content must be strings", where)
        if len(path) > limits.max_string:
            raise BundleError("too_long", f"path longer than {limits.max_string} characters", f"{where}.path")
        _check_segments(path, f"{where}.path", shape)
        if not accept(path):
            raise BundleError("invalid_path", f"path must look like {shape}", f"{where}.path")
        if path in seen:
            raise BundleError("duplicate_path", "path appears twice in the bundle", f"{where}.path")
        seen.add(path)
        budget[0] += len(content.encode("utf-8"))
        if budget[0] > limits.max_files_bytes:
            raise BundleError(
                "files_too_large",
                f"knowledge and skill files exceed {limits.max_files_bytes} bytes in total",
                f"{where}.content",
                413,
            )
        out.append((path, content))
    return out


def _check_record_limits(record: dict[str, Any], where: str, limits: Limits) -> None:
    for name, value in record.items():
        if type(value) is str:
            attr = _LONG_FIELDS.get(name)
            limit = getattr(limits, attr) if attr else limits.max_string
            if len(value) > limit:
                raise BundleError("too_long", f"longer than {limit} characters", child_path(where, name))
    tags = record["tags"]
    if len(tags) > limits.max_tags:
        raise BundleError("too_many_tags", f"more than {limits.max_tags} tags", f"{where}.tags")
    for index, tag in enumerate(tags):
        if len(tag) > limits.max_tag_length:
            raise BundleError(
                "too_long", f"tag longer than {limits.max_tag_length} characters", f"{where}.tags[{index}]"
            )


def _vectors(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if type(value) is not dict or set(value) != {"engine", "items"}:
        raise BundleError("invalid_vectors", "must be an object with exactly engine and items", "$.vectors")
    engine, items = value["engine"], value["items"]
    if (
        type(engine) is not dict
        or set(engine) != {"id", "dim"}
        or type(engine["id"]) is not str
        or type(engine["dim"]) is not int
        or not 1 <= engine["dim"] <= 4096
    ):
        raise BundleError("invalid_vectors", "must be {id: string, dim: 1..4096}", "$.vectors.engine")
    if type(items) is not list:
        raise BundleError("invalid_vectors", "must be an array", "$.vectors.items")
    dim = engine["dim"]
    for index, item in enumerate(items):
        where = f"$.vectors.items[{index}]"
        if type(item) is not dict or set(item) != {"id", "vector"} or type(item["id"]) is not str:
            raise BundleError("invalid_vectors", "must be {id: string, vector: number[]}", where)
        vector = item["vector"]
        if (
            type(vector) is not list
            or len(vector) != dim
            or not all(type(x) in (int, float) and math.isfinite(x) for x in vector)
        ):
            raise BundleError("invalid_vectors", f"vector must hold {dim} finite numbers", f"{where}.vector")
    return value


def _check_record(record: Any, where: str, limits: Limits) -> None:
    try:
        validate_record(record, where)
    except RecordError as exc:
        raise BundleError("invalid_record", exc.message, exc.path) from None
    _check_record_limits(record, where, limits)


def _finish(doc: dict[str, Any], records: list[dict[str, Any]], limits: Limits) -> Bundle:
    """Checks that need the whole top level: schema version, files, vectors."""
    if doc.get("schemaVersion") != SCHEMA_VERSION:
        raise BundleError("invalid_schema_version", f"must be {SCHEMA_VERSION}", "$.schemaVersion")
    budget = [0]
    knowledge = _files(doc, "knowledge", limits, budget)
    skills = _files(doc, "skills", limits, budget)
    return Bundle(records=records, knowledge=knowledge, skills=skills, vectors=_vectors(doc.get("vectors")))


def parse_bundle(data: bytes | dict[str, Any], limits: Limits = Limits()) -> Bundle:
    """Validate an upload bundle against the format and the service limits; raise :class:`BundleError`.

    Bytes are read as a stream (:func:`parse_bundle_stream`); a dict is checked as it is.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        if len(data) > limits.max_body_bytes:
            raise BundleError("body_too_large", f"body larger than {limits.max_body_bytes} bytes", "$", 413)
        return parse_bundle_stream([bytes(data)], limits)
    doc = data
    if type(doc) is not dict:
        raise BundleError("invalid_type", "a bundle must be a JSON object", "$")
    for key in doc:
        if key not in _TOP_LEVEL:
            raise BundleError("unknown_field", "unknown top-level field", child_path("$", str(key)[:64]))
    deep = _too_deep(doc, limits.max_depth)
    if deep is not None:
        raise BundleError("too_deep", f"nesting deeper than {limits.max_depth} levels", deep)
    if doc.get("schemaVersion") != SCHEMA_VERSION:
        raise BundleError("invalid_schema_version", f"must be {SCHEMA_VERSION}", "$.schemaVersion")
    records = doc.get("records")
    if type(records) is not list:
        raise BundleError("invalid_type", "must be an array of memory records", "$.records")
    if len(records) > limits.max_records:
        raise BundleError(
            "too_many_records", f"more than {limits.max_records} records in one bundle", "$.records", 413
        )
    for index, record in enumerate(records):
        _check_record(record, f"$.records[{index}]", limits)
    return _finish(doc, records, limits)


def _counted(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise BundleError("body_too_large", f"body larger than {limit} bytes", "$", 413)
        yield chunk


def _load(raw: bytes, where: str) -> Any:
    try:
        return loads(raw)
    except CanonicalError as exc:
        raise BundleError("invalid_json", exc.message, where + exc.path[1:]) from None


def parse_bundle_stream(chunks: Iterable[bytes], limits: Limits = Limits()) -> Bundle:
    """:func:`parse_bundle` over bytes that arrive in chunks (an S3 streaming body).

    Only one record's raw JSON is held at a time, so memory grows with the parsed records, not with
    the document. Records are checked as they arrive: the first bad one stops the read, and the
    refusal names its JSON path. Same checks and limits as :func:`parse_bundle` on a dict.
    """
    doc: dict[str, Any] = {}
    records: list[dict[str, Any]] | None = None
    parts = split_object(
        _counted(chunks, limits.max_body_bytes),
        "records",
        max_member_bytes=limits.max_member_bytes,
        max_element_bytes=limits.max_record_bytes,
    )
    try:
        for part in parts:
            if part.index is None:  # a member, or the start of the records array
                path = child_path("$", part.key[:64])
                if part.key not in _TOP_LEVEL:
                    raise BundleError("unknown_field", "unknown top-level field", path)
                if part.key in doc:
                    raise BundleError("invalid_json", "duplicate object key", path)
                if part.streamed:
                    doc[part.key] = records = []
                    continue
                value = _load(part.raw, path)
                deep = _too_deep(value, limits.max_depth - 1, path)
                if deep is not None:
                    raise BundleError("too_deep", f"nesting deeper than {limits.max_depth} levels", deep)
                doc[part.key] = value
                continue
            where = f"$.records[{part.index}]"
            if part.index >= limits.max_records:
                raise BundleError(
                    "too_many_records",
                    f"more than {limits.max_records} records in one bundle",
                    "$.records",
                    413,
                )
            record = _load(part.raw, where)
            deep = _too_deep(record, limits.max_depth - 2, where)
            if deep is not None:
                raise BundleError("too_deep", f"nesting deeper than {limits.max_depth} levels", deep)
            _check_record(record, where, limits)
            assert records is not None
            records.append(record)
    except ValueTooLarge as exc:
        raise BundleError("value_too_large", exc.message, exc.path, 413) from None
    except StreamError as exc:
        raise BundleError("invalid_json", exc.message, exc.path) from None
    if records is None:
        raise BundleError("invalid_type", "must be an array of memory records", "$.records")
    return _finish(doc, records, limits)
