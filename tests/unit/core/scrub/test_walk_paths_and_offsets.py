"""Document-level scrub behaviour: home paths written with
only one kind of slash, finding offsets in a bundle with many findings, and cutting pretty-printed JSON.
"""

from __future__ import annotations

import itertools
import json

import pytest

from acx.core.scrub import scan_any, scan_bundle, scan_raw_json_fast, scan_text, split_raw_json

GITHUB_PAT = "ghp_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"


@pytest.mark.parametrize(
    "text", ["logs in /home/alice/app", "see /Users/bob/x", "C:\\Users\\carol\\y", "under ~/notes"]
)
def test_a_home_path_warns_with_one_kind_of_slash_alone(text: str) -> None:
    """A Unix home path holds no backslash, a Windows one no slash: each alone is named."""
    assert [(f.rule, f.severity) for f in scan_text(text)] == [("home-path", "warn")]


@pytest.mark.parametrize("count", [3, 70])
def test_every_finding_of_a_large_bundle_is_at_its_offset_in_its_own_string(count: int) -> None:
    """Many strings are scanned as one joined buffer and each finding is mapped back to its string:
    with a few findings or with more than 64 (another way to find the string), each token is reported
    at its own record, path and offset within that string, not within the joined buffer."""
    records = [{"id": f"r{i}", "text": f"k {GITHUB_PAT} end"} for i in range(count)]
    report = scan_bundle(records)
    found = [(f.rule, f.location, f.path, f.offset) for f in report.findings]
    assert found == [("github-pat", f"record:r{i}", "$.text", 2) for i in range(count)]


def test_pretty_printed_json_is_cut_before_members_after_their_indentation() -> None:
    """``json.dumps(..., indent=2)`` puts a newline and spaces between each ``,`` and the next member's
    quote: the cuts still fall just before such quotes (the whitespace is skipped back to the comma),
    every range is clean alone, and the ranges cover the file."""
    data = json.dumps([{"id": f"r{i}", "text": "note " * 20} for i in range(200)], indent=2).encode()
    ranges = split_raw_json(data, 4)
    assert len(ranges) == 4
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    for start, _end in ranges[1:]:
        assert data[start : start + 1] == b'"'
        assert data[:start].rstrip()[-1:] in (b",", b"[", b"{")
    assert all(scan_raw_json_fast(data[a:b]) for a, b in ranges)


@pytest.mark.parametrize("doc", [[], {"records": []}, {"records": [], "knowledge": [], "skills": []}])
def test_an_empty_bundle_is_a_clean_report(doc: object) -> None:
    """No records, no files: nothing to scan, a clean report (not an error)."""
    assert scan_any(doc).to_dict() == {"blocked": False, "findings": [], "warnings": []}
    assert scan_bundle([]).to_dict() == {"blocked": False, "findings": [], "warnings": []}


def test_a_plain_record_is_scanned_as_a_record_and_a_skills_only_bundle_as_a_bundle() -> None:
    """``scan_any`` takes a dict holding ``records``, ``knowledge`` or ``skills`` as a bundle, and any
    other dict as one record: a token in a plain record is reported at ``record:<id>``, one in a
    skills-only bundle at its skill file."""
    record = scan_any({"id": "r1", "text": f"k {GITHUB_PAT}"})
    assert [(f.rule, f.location, f.path, f.offset) for f in record.findings] == [
        ("github-pat", "record:r1", "$.text", 2)
    ]
    bundle = scan_any({"skills": [{"path": "s.md", "body": f"k {GITHUB_PAT}"}]})
    assert [(f.rule, f.location, f.offset) for f in bundle.findings] == [("github-pat", "file:s.md", 2)]
