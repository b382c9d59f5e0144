"""Property tests on the parsers that take untrusted bytes: the bundle parser and the cartridge reader.

The bundle parser must return a Bundle or raise BundleError, never anything else. A truncated or
byte-flipped cartridge, or one with a mangled signature envelope, must give CartridgeError or a
``tampered``/``legacy`` verdict (or, for a flip that changes no content, the original verdict over the
original manifest), never another exception. Bounded examples: ACX_FUZZ_EXAMPLES scales them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acx.core.bundle import Bundle, BundleError, Limits, parse_bundle
from acx.core.cartridge import CartridgeError, CartridgeReader
from acx.core.export import build_cartridge
from acx.core.signing import LocalEd25519Signer
from acx.core.trust import evaluate
from tests.factories import memory

SCALE = max(1, int(os.environ.get("ACX_FUZZ_EXAMPLES", "12")) // 12)
FUZZ = settings(
    max_examples=60 * SCALE,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def record(i: int) -> dict[str, Any]:
    return memory(
        f"fz-{i}",
        title=f"lesson {i}",
        summary="retry with backoff",
        sourceType="review",
        repoLabel="api",
        projectLabel="Acme",
        timestamp="2026-01-01T00:00:00Z",
        xpAwarded=i,
        tags=["x", "y"],
    )


VALID = {
    "schemaVersion": "acx.memory-bundle/1",
    "records": [record(0), record(1)],
    "knowledge": [{"path": "knowledge/a.md", "content": "# a\n"}],
    "skills": [{"path": "skills/s1/SKILL.md", "content": "---\nname: s1\ndescription: d\n---\n"}],
    "vectors": {"engine": {"id": "e", "dim": 2}, "items": [{"id": "fz-0", "vector": [0.5, 1]}]},
}
SMALL = Limits(
    max_body_bytes=64 * 1024,
    max_records=8,
    max_title=32,
    max_summary=64,
    max_string=48,
    max_tags=4,
    max_tag_length=8,
    max_depth=6,
    max_files_bytes=256,
)


DEFAULT_LIMITS = Limits()


def _parses_or_refuses(data: Any, limits: Limits = DEFAULT_LIMITS) -> None:
    try:
        result = parse_bundle(data, limits)
    except BundleError as exc:
        assert isinstance(exc.path, str) and exc.path.startswith("$")
        assert exc.status in (400, 413, 422)
        return
    assert isinstance(result, Bundle)
    result.canonical_bytes()  # what ingest stores next must not fail either


# -- bundle parser

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data: bytes) -> None:
    _parses_or_refuses(data)


@FUZZ
@given(json_values)
def test_arbitrary_json_documents(doc: Any) -> None:
    _parses_or_refuses(json.dumps(doc).encode())
    _parses_or_refuses(doc)  # the dict entry point (presigned uploads already parsed)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


ALL_PATHS = list(_paths(VALID))


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head = path[0]
    if not (isinstance(doc, dict) and head in doc) and not (
        isinstance(doc, list) and isinstance(head, int) and head < len(doc)
    ):
        return doc  # an earlier mutation replaced this part
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[path[0]] = _replace(doc[path[0]], path[1:], new)
    return copy


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(ALL_PATHS), json_values), min_size=1, max_size=3))
def test_mutated_valid_bundles(mutations: list[tuple[tuple[Any, ...], Any]]) -> None:
    doc: Any = VALID
    for path, new in mutations:
        doc = _replace(doc, path, new)
    _parses_or_refuses(doc)
    _parses_or_refuses(doc, SMALL)
    try:
        raw = json.dumps(doc, allow_nan=True).encode()
    except (TypeError, ValueError):
        return
    _parses_or_refuses(raw)


@FUZZ
@given(st.data())
def test_byte_mutations_of_a_valid_bundle(data: st.DataObject) -> None:
    raw = bytearray(json.dumps(VALID).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        if action == "flip":
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "delete":
            del raw[at]
        elif action == "insert":
            raw[at:at] = data.draw(
                st.sampled_from([b"[", b"{", b'"', b"\\u", b"\xff", b"\x00", b"1e999", b",,"])
            )
        else:
            del raw[at:]
        if not raw:
            raw = bytearray(b" ")
    _parses_or_refuses(bytes(raw))


def test_valid_bundle_parses() -> None:
    assert len(parse_bundle(json.dumps(VALID).encode()).records) == 2


# -- cartridge reader and trust verdict


@pytest.fixture(scope="module")
def cartridge() -> Iterator[tuple[bytes, str, str]]:
    """A valid signed cartridge's bytes, its verdict and its manifest hash."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "valid.acx"
        build_cartridge(
            path,
            [record(0), record(1), record(2)],
            [
                ("rom/knowledge/A.md", b"# a\n"),
                ("rom/skills/s1/SKILL.md", b"---\nname: s1\ndescription: d\n---\n"),
            ],
            signer=LocalEd25519Signer(),
            publisher_id="com.example.fuzz",
            artifact_id="fuzz",
            artifact_version="1",
        )
        with CartridgeReader(path) as reader:
            manifest = reader.recompute().manifest_hash
        verdict = evaluate(path).verdict
        assert verdict not in ("tampered", "legacy")
        yield path.read_bytes(), verdict, manifest


def _judge(data: bytes, original: tuple[bytes, str, str]) -> None:
    _, good_verdict, good_manifest = original
    fd, name = tempfile.mkstemp(suffix=".acx")
    os.close(fd)
    path = Path(name)
    try:
        path.write_bytes(data)
        try:
            opened = CartridgeReader(path)
        except CartridgeError:
            return
        try:
            with opened as reader:
                verdict = evaluate(reader)
                manifest = reader.recompute().manifest_hash
                reader.memory_records()
                reader.file_names()
        except CartridgeError:
            return
        if verdict.verdict in ("tampered", "legacy"):
            return
        # A flip in free space or slack changes no content: then nothing about the verdict may change.
        assert (verdict.verdict, manifest) == (good_verdict, good_manifest), verdict.reasons
    finally:
        path.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(name + suffix).unlink(missing_ok=True)


CARTRIDGE_FUZZ = settings(FUZZ, max_examples=40 * SCALE)


@CARTRIDGE_FUZZ
@given(st.data())
def test_truncated_cartridges(cartridge: tuple[bytes, str, str], data: st.DataObject) -> None:
    raw = cartridge[0]
    _judge(raw[: data.draw(st.integers(0, len(raw) - 1))], cartridge)


@CARTRIDGE_FUZZ
@given(st.data())
def test_byte_flipped_cartridges(cartridge: tuple[bytes, str, str], data: st.DataObject) -> None:
    raw = bytearray(cartridge[0])
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] ^= data.draw(st.integers(1, 255))
    _judge(bytes(raw), cartridge)


ENVELOPES = st.one_of(
    st.text(max_size=80),
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {
            "payload": json_scalars,
            "payloadType": json_scalars,
            "signatures": st.lists(
                st.dictionaries(st.sampled_from(["keyid", "sig"]), json_scalars), max_size=2
            ),
        }
    ).map(json.dumps),
)


@CARTRIDGE_FUZZ
@given(
    envelope=ENVELOPES,
    pem=st.one_of(st.none(), st.text(max_size=40), st.just("-----BEGIN PUBLIC KEY-----\nAA==\n")),
)
def test_bad_envelopes(cartridge: tuple[bytes, str, str], envelope: str, pem: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.acx"
        path.write_bytes(cartridge[0])
        con = sqlite3.connect(path)
        with con:
            if pem == "":
                con.execute("DELETE FROM signatures")
            else:
                con.execute("UPDATE signatures SET envelope = ?, public_key_pem = ?", (envelope, pem))
        con.close()
        _judge(path.read_bytes(), (cartridge[0], "tampered", ""))


def test_reader_refuses_invalid_utf8_in_the_schema(cartridge: tuple[bytes, str, str], tmp_path: Path) -> None:
    raw = bytearray(cartridge[0])
    at = raw.find(b"tablesignaturessignatures")
    assert at > 0
    raw[at + 6] = 0xFF  # first byte of the table's name in its sqlite_master row
    path = tmp_path / "bad-name.acx"
    path.write_bytes(bytes(raw))
    with pytest.raises(CartridgeError):
        CartridgeReader(path)
