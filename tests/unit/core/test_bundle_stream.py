"""Reading a bundle as a stream: any chunking gives the same bundle as the whole document, errors name
their JSON path, limits are enforced before a value is held, and the read stops at the first bad record."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core.bundle import SCHEMA_VERSION, BundleError, Limits, parse_bundle, parse_bundle_stream
from acx.core.jsonstream import StreamError, ValueTooLarge, split_object
from tests.unit.core.test_bundle import bundle, record


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in points:
        out.append(data[last:p])
        last = p
    out.append(data[last:])
    return out


def refused(data: bytes, limits: Limits = Limits(), size: int = 7) -> BundleError:  # noqa: B008
    with pytest.raises(BundleError) as info:
        parse_bundle_stream([data[i : i + size] for i in range(0, len(data), size)], limits)
    return info.value


TRICKY = [
    record(0, title='a "quoted" {brace} [bracket] \\ back\\slash', summary="\\"),
    record(1, summary="日本語 🚀 \u2028 tab\tnew\nline", tags=["é", "z", "\\]"]),
    record(2, xpAwarded=0, tags=[]),
]

text_strategy = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    titles=st.lists(text_strategy, min_size=0, max_size=5),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    indent=st.sampled_from([None, 1, "\t"]),
    ascii_only=st.booleans(),
)
def test_any_chunking_gives_the_same_bundle_as_the_whole_document(titles, cuts, indent, ascii_only):
    doc = bundle(
        records=[record(i, title=t) for i, t in enumerate(titles)] + TRICKY,
        knowledge=[{"path": "NOTES.md", "content": "# {not json] \\"}],
    )
    data = json.dumps(doc, indent=indent, ensure_ascii=ascii_only).encode()
    parsed = parse_bundle_stream(chunked(data, cuts))
    assert parsed.records == doc["records"]
    assert parsed.knowledge == [("NOTES.md", "# {not json] \\")]
    assert parsed.canonical_bytes() == rfc8785.dumps(doc)


def test_members_in_any_order_and_records_last_or_first():
    doc = {"skills": [], "records": [record(0)], "knowledge": [], "schemaVersion": SCHEMA_VERSION}
    assert parse_bundle_stream([json.dumps(doc).encode()]).records == [record(0)]
    empty = {"records": [], "schemaVersion": SCHEMA_VERSION}
    assert parse_bundle_stream([json.dumps(empty).encode()]).records == []


@pytest.mark.parametrize(
    ("data", "code", "path"),
    [
        (b"[]", "invalid_json", "$"),
        (b'{"schemaVersion": "acx.memory-bundle/1", "records": []} x', "invalid_json", "$"),
        (b'{"schemaVersion": "acx.memory-bundle/1" "records": []}', "invalid_json", "$.schemaVersion"),
        (b'{"schemaVersion": "acx.memory-bundle/1", "records": [', "invalid_json", "$.records[0]"),
        (b'{"records": [], "records": []}', "invalid_json", "$.records"),
        (b'{"secretz": 1, "records": []}', "unknown_field", "$.secretz"),
        (b'{"records": {}}', "invalid_type", "$.records"),
        (b'{"records": []}', "invalid_schema_version", "$.schemaVersion"),
        (b'{"schemaVersion": "acx.memory-bundle/1"}', "invalid_type", "$.records"),
        (b'{"schemaVersion": "acx.memory-bundle/1", "records": [1, 2]}', "invalid_record", "$.records[0]"),
    ],
)
def test_malformed_structure_is_refused_with_its_path(data, code, path):
    error = refused(data)
    assert (error.code, error.path, error.status) == (code, path, 422)


def test_a_bad_record_is_named_by_index_and_field():
    doc = bundle(records=[record(0), record(1, portable="true")])
    error = refused(json.dumps(doc).encode())
    assert (error.code, error.path) == ("invalid_record", "$.records[1].portable")
    dup = json.dumps(doc).replace('"title"', '"id": "x", "title"', 2).encode()
    error = refused(dup)
    assert (error.code, error.path) == ("invalid_json", "$.records[0].id")


def test_nesting_is_counted_from_the_document_root():
    deep: object = "x"
    for _ in range(14):
        deep = [deep]
    ok = bundle(records=[record(0)], vectors=None)
    ok.pop("vectors")
    bad = bundle(records=[record(0, tags=deep)])
    assert refused(json.dumps(bad).encode()).code == "too_deep"
    assert parse_bundle_stream([json.dumps(ok).encode()]).records == [record(0)]


def test_limits_refuse_before_holding_the_value():
    limits = Limits(max_record_bytes=600, max_member_bytes=100)
    big = bundle(records=[record(0), record(1, summary="x" * 2000)])
    error = refused(json.dumps(big).encode(), limits)
    assert (error.code, error.path, error.status) == ("value_too_large", "$.records[1]", 413)
    files = bundle(knowledge=[{"path": "A.md", "content": "y" * 500}])
    error = refused(json.dumps(files).encode(), limits)
    assert (error.code, error.path, error.status) == ("value_too_large", "$.knowledge", 413)
    data = json.dumps(bundle()).encode()
    error = refused(data, Limits(max_body_bytes=len(data) - 1))
    assert (error.code, error.status) == ("body_too_large", 413)
    many = bundle(records=[record(i) for i in range(4)])
    error = refused(json.dumps(many).encode(), Limits(max_records=3))
    assert (error.code, error.status) == ("too_many_records", 413)


def test_the_read_stops_at_the_first_bad_record():
    good = [record(i) for i in range(50)]
    doc = bundle(records=[record(0, impact="great"), *good])
    data = json.dumps(doc).encode()
    consumed = []

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(data), 64):
            consumed.append(i)
            yield data[i : i + 64]

    with pytest.raises(BundleError) as info:
        parse_bundle_stream(chunks())
    assert info.value.path == "$.records[0].impact"
    assert len(consumed) < len(data) // 64 // 4  # most of the document was never read


def test_inline_bytes_and_stream_agree_on_errors():
    data = json.dumps(bundle(records=[record(0), record(1, xpAwarded=-1)])).encode()
    with pytest.raises(BundleError) as whole:
        parse_bundle(data)
    assert whole.value.path == refused(data).path == "$.records[1].xpAwarded"


def test_split_object_yields_members_and_elements_in_order():
    data = b' { "a" : 1 , "r" : [ {"x": "]"} , 2 , "s" ] , "b" : {"k": [true]} } \n'
    parts = list(
        split_object(
            [data[i : i + 3] for i in range(0, len(data), 3)], "r", max_member_bytes=99, max_element_bytes=99
        )
    )
    assert [(p.key, p.index, p.raw, p.streamed) for p in parts] == [
        ("a", None, b"1", False),
        ("r", None, b"", True),
        ("r", 0, b'{"x": "]"}', True),
        ("r", 1, b"2", True),
        ("r", 2, b'"s"', True),
        ("b", None, b'{"k": [true]}', False),
    ]


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b'{"a"', b'{"a":', b'{"a": "x', b'{"a": [1, {"b": "\\', b'{"a" 1}', b"{1: 2}", b'{"a": 1,}'],
)
def test_split_object_refuses_truncated_or_malformed_input(data):
    with pytest.raises(StreamError):
        list(split_object([data], "r", max_member_bytes=99, max_element_bytes=99))


def test_split_object_checks_the_size_of_a_value_still_arriving():
    endless = (b'{"a": "' if i == 0 else b"x" * 1000 for i in range(100))
    with pytest.raises(ValueTooLarge) as info:
        list(split_object(endless, "r", max_member_bytes=5000, max_element_bytes=99))
    assert info.value.path == "$.a"


_hostile_text = st.text(alphabet=st.sampled_from(list('ab"\\{}[]:, \n\té🚀')), max_size=12)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _hostile_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_hostile_text, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    elements=st.lists(_json_values, max_size=5),
    cuts=st.lists(st.integers(min_value=0, max_value=2_000), max_size=10),
    ascii_only=st.booleans(),
)
def test_split_object_cuts_each_element_exactly_under_any_chunking(elements, cuts, ascii_only):
    """Each element's bytes are exactly its text in the document, whatever its strings hold (quotes,
    backslashes, brackets) and wherever the chunks end (a chunk may end inside a string or an escape)."""
    texts = [json.dumps(e, ensure_ascii=ascii_only).encode() for e in elements]
    data = b'{"r": [' + b", ".join(texts) + b'], "k": ' + (texts[0] if texts else b"[]") + b"}"
    parts = list(split_object(chunked(data, cuts), "r", max_member_bytes=10**6, max_element_bytes=10**6))
    assert [p.raw for p in parts if p.index is not None] == texts
    assert [json.loads(p.raw) for p in parts if p.index is not None] == elements
    assert parts[-1].raw == (texts[0] if texts else b"[]")


@pytest.mark.parametrize("size", [1, 4, 1 << 16])
def test_a_container_of_exactly_the_limit_is_cut_and_one_byte_more_is_refused(size):
    element = b'{"s": "' + b"x" * 50 + b'", "t": ["]", "{"]}'
    data = b'{"r": [' + element + b"]}"
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    got = [p.raw for p in split_object(chunks, "r", max_member_bytes=99, max_element_bytes=len(element))]
    assert got == [b"", element]
    with pytest.raises(ValueTooLarge) as info:
        list(split_object(chunks, "r", max_member_bytes=99, max_element_bytes=len(element) - 1))
    assert info.value.path == "$.r[0]"
