"""The document walker of the scrub gate, pinned by its stated contracts over wide classes of input.

- ``split_raw_json``: each cut is the first opening quote at or after the k-th equal share of the file
  (and after the previous cut) that stands outside every string and follows ``,``, ``[`` or ``{``
  (whitespace between allowed); the ranges cover the file in order. Checked against that statement,
  computed here by a plain walk of the bytes, on generated JSON documents of every shape.
- A bundle is scanned as one NUL-joined buffer: every finding is reported in its own string, at the
  offset a scan of that string alone gives (corpus texts as the strings, few findings and many).
- The shapes ``scan_any`` and the file lists accept, each reaching the string that holds a secret.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core.scrub import scan_any, scan_bundle, scan_record, scan_text, split_raw_json

ROOT = Path(__file__).resolve().parents[4]
CORPUS = ROOT.parent / "shared" / "corpora" / "secrets-gitleaks.json"
GITHUB_PAT = "ghp_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"


def _cut_points(data: bytes) -> list[int]:
    """Every place a cut may go: an opening quote outside strings after ``,`` ``[`` ``{`` (+ blanks)."""
    points, inside, last = [], False, b""
    for i, ch in enumerate(data):
        c = bytes([ch])
        if c == b'"':
            if not inside and last in (b",", b"[", b"{"):
                points.append(i)
            inside = not inside
            last = c
        elif inside or c not in b" \t\r\n":
            last = c
    return points


def _expected(data: bytes, parts: int) -> list[tuple[int, int]]:
    n = len(data)
    if parts < 2 or b"\\" in data:
        return [(0, n)]
    points, cuts = _cut_points(data), [0]
    for k in range(1, parts):
        lo = max(cuts[-1] + 1, n * k // parts)
        later = [p for p in points if p >= lo]
        if later:
            cuts.append(later[0])
    cuts.append(n)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


_TEXT = st.text(st.characters(blacklist_characters='"\\', blacklist_categories=("Cc", "Cs")), max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-99, 99) | _TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(doc=_JSON, indent=st.sampled_from([None, 0, 1, 2, "\t"]), parts=st.integers(0, 9))
def test_split_raw_json_cuts_at_the_first_member_quote_after_each_share(
    doc: object, indent: object, parts: int
) -> None:
    data = json.dumps(doc, indent=indent, ensure_ascii=False).encode()
    assert split_raw_json(data, parts) == _expected(data, parts)


@pytest.mark.parametrize("parts", [2, 3, 5, 8])
def test_split_raw_json_on_small_and_odd_documents(parts: int) -> None:
    for data in [
        b'{"a":1}',
        b'["x","y"]',
        b'[ "x" , "y" ]',
        b'{"a":"b","c":"d"}',
        b'"x"',
        b"[]",
        b"",
        b'{"a": "\\n"}',
    ]:
        assert split_raw_json(data, parts) == _expected(data, parts), data


def _corpus_texts() -> list[str]:
    if not CORPUS.exists():
        pytest.skip("shared corpus not present")
    items = json.loads(CORPUS.read_text(encoding="utf-8"))
    return [it["text"] for it in items if "\x00" not in it["text"]]


@pytest.mark.parametrize("count", [10, 70])
def test_each_string_of_a_bundle_is_reported_as_when_scanned_alone(count: int) -> None:
    """One record holding many corpus texts: its findings are each text's own findings, at the text's
    path and at the offset a scan of that text alone reports (with 10 texts, and with 120: more than 64
    findings are mapped back another way)."""
    texts = _corpus_texts()
    for first in range(0, 600, count * 2):
        chunk = texts[first : first + count]
        record = {"id": "r1", "texts": chunk}
        got = sorted((f.path, f.offset, f.rule) for f in scan_record(record))
        want = sorted((f"$.texts[{i}]", f.offset, f.rule) for i, t in enumerate(chunk) for f in scan_text(t))
        assert got == want


def test_a_string_holding_a_nul_is_scanned_one_string_at_a_time() -> None:
    """A NUL inside a string would shift every later string's place in the joined buffer: then each
    string is scanned alone, and each finding still names its own string and offset."""
    report = scan_bundle([{"id": "r1", "a": "x\x00y", "b": f"k {GITHUB_PAT}", "c": [f"{GITHUB_PAT}"]}])
    assert [(f.path, f.offset, f.rule) for f in report.findings] == [
        ("$.b", 2, "github-pat"),
        ("$.c[0]", 0, "github-pat"),
    ]


def test_a_budget_refusal_names_only_the_string_that_ran_out() -> None:
    """The scan budget belongs to each string: the dense file is refused alone with ``scan-budget``
    at offset 0 (nothing of it was judged), named by its own path; the record beside it is judged
    normally and, being clean, is not named at all."""
    flood = "sk_ " * 20000
    report = scan_any({"records": [{"id": "r1", "t": "hello"}], "knowledge": {"k.md": flood}})
    assert [(f.rule, f.location, f.path, f.offset) for f in report.findings] == [
        ("scan-budget", "file:k.md", "", 0),
    ]


# --- the shapes accepted ----------------------------------------------------------------------


def _where(report: object) -> list[tuple[str, str, str, int]]:
    return [(f.rule, f.location, f.path, f.offset) for f in report.findings]  # type: ignore[attr-defined]


SECRET = f"k {GITHUB_PAT}"


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        (SECRET, [("github-pat", "text", "", 2)]),
        ([{"id": "a", "t": SECRET}], [("github-pat", "record:a", "$.t", 2)]),
        ([SECRET], [("github-pat", "records[0]", "$.value", 2)]),
        ([{"id": "a"}, [SECRET]], [("github-pat", "records[1]", "$.value[0]", 2)]),
        ({"records": {"id": "a", "t": SECRET}}, [("github-pat", "record:a", "$.t", 2)]),
        ({"records": [SECRET]}, [("github-pat", "records[0]", "$.value", 2)]),
        ({"records": [], "note": SECRET}, [("github-pat", "bundle", "$.note", 2)]),
        ({"knowledge": {"k.md": SECRET}}, [("github-pat", "file:k.md", "", 2)]),
        ({"knowledge": {"k.md": {"x": SECRET}}}, [("github-pat", "file:k.md", "", 4)]),
        ({"skills": [{"path": "s.md", "body": SECRET}]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [{"name": "s.md", "content": SECRET}]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [{"path": "s.md", "markdown": SECRET}]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [{"body": SECRET}]}, [("github-pat", "file:[0]", "", 2)]),
        (
            {"skills": [{"path": "s.md", "body": "ok", "extra": SECRET}]},
            [("github-pat", "file:s.md", "", 11)],
        ),
        (
            {"skills": [{"path": "s.md", "body": 7, "t": SECRET}]},
            [("github-pat", "file:s.md", "", 19), ("github-pat", "file:s.md", "", 64)],
        ),
        ({"skills": [["s.md", SECRET]]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [SECRET]}, [("github-pat", "file:[0]", "", 2)]),
        ({"skills": [["a", "b", SECRET]]}, [("github-pat", "file:[0]", "", 6)]),
        ({"id": "a", "t": SECRET}, [("github-pat", "record:a", "$.t", 2)]),
        (12345, []),
        (None, []),
    ],
)
def test_every_accepted_shape_reaches_the_secret(doc: object, where: list) -> None:
    assert _where(scan_any(doc)) == where


def test_a_number_given_as_a_document_is_scanned_as_its_text() -> None:
    assert [f.rule for f in scan_any(10**40).findings] == []
    report = scan_any(True)
    assert report.to_dict() == {"blocked": False, "findings": [], "warnings": []}


# --- where a finding is reported: location and JSON path -----------------------------------------


def _at(record: dict) -> list[tuple[str, str, str, int]]:
    return [(f.rule, f.location, f.path, f.offset) for f in scan_record(record)]


def test_paths_name_keys_as_identifiers_or_quoted_and_list_items_by_index() -> None:
    record = {"id": "r1", "a": {"b c": ["x", {"ключ": SECRET}], "ok_key": SECRET}}
    assert _at(record) == [
        ("github-pat", "record:r1", '$.a["b c"][1]["\\u043a\\u043b\\u044e\\u0447"]', 2),
        ("github-pat", "record:r1", "$.a.ok_key", 2),
    ]


def test_a_key_that_is_a_secret_is_named_by_its_position_and_so_is_what_is_under_it() -> None:
    assert _at({"id": "r1", GITHUB_PAT: "v"}) == [("github-pat", "record:r1", "$.<key#1>", 0)]
    assert _at({"id": "r1", GITHUB_PAT: {"x": SECRET}}) == [
        ("github-pat", "record:r1", "$.<key#1>", 0),
        ("github-pat", "record:r1", "$.<key#1>.x", 2),
    ]


@pytest.mark.parametrize(
    "record",
    [
        {"id": GITHUB_PAT, "t": "x"},
        {"a": "x", "id": GITHUB_PAT},
        {"a": "x", "b": {"c": "d", "e": ["f", "g"]}, "id": GITHUB_PAT},
    ],
)
def test_a_record_whose_id_is_a_secret_is_named_by_its_index(record: dict) -> None:
    """The id names the place, so when the id itself matched the record is ``records[i]``, wherever
    the id key stands among the record's keys."""
    assert ("github-pat", "records[0]", "$.id", 0) in _at(record)
    assert all(loc == "records[0]" for _, loc, _, _ in _at(record))


def test_only_a_record_whose_own_id_matched_is_named_by_its_index() -> None:
    """A number id names the record; a secret elsewhere in the batch (even the batch's first string,
    or a record's second) never makes another record lose its name; a boolean is no id."""
    report = scan_bundle([{GITHUB_PAT: "v"}, {"id": 7, "t": SECRET}, {"id": 8, GITHUB_PAT: "v"}])
    assert [(f.location, f.path) for f in report.findings] == [
        ("records[0]", "$.<key#0>"),
        ("record:7", "$.t"),
        ("record:8", "$.<key#1>"),
    ]
    assert _at({"id": True, "t": SECRET}) == [("github-pat", "records[0]", "$.t", 2)]
    bundle = scan_bundle([{"id": "a"}], first_index=10, other={"id": "b", "t": SECRET})
    assert [(f.location, f.path) for f in bundle.findings] == [("bundle", "$.t")]
    numbered = scan_bundle([{"id": "a"}, {"x": SECRET}, {"y": SECRET}], first_index=10)
    assert [f.location for f in numbered.findings] == ["records[11]", "records[12]"]


@pytest.mark.parametrize(
    ("key", "value", "found"),
    [
        ("db_password", "Xk9mQ2vL7pRt4Wz", True),
        ("db_password", "Xk9m", True),
        ("db_password", "Xk9", False),  # too short to judge
        ("token", "Xk9mQ2vL7pRt4Wz", False),  # a bare name needs a value shaped like a credential
        ("token", "Xk9mQ2vL7pRt4Wz8", True),
        (" Token ", "Xk9mQ2vL7pRt4Wz", False),
        ("db_password", "${DB_PASSWORD}", False),
        ("colour", "Xk9mQ2vL7pRt4Wz8", False),
    ],
)
def test_a_secret_like_key_with_a_literal_secret_is_reported_at_the_key(
    key: str, value: str, found: bool
) -> None:
    expected = [("secret-assignment", "record:r1", f"$[{json.dumps(key)}]" if " " in key else f"$.{key}", 0)]
    assert (_at({"id": "r1", key: value}) == expected) is found


def test_a_text_under_two_bytes_holds_nothing_to_report() -> None:
    assert scan_text("a", forbidden=["a"]) == []
    assert [(f.rule, f.offset) for f in scan_text("ab", forbidden=["AB"])] == [("forbidden-literal", 0)]
