"""Skill and knowledge files given as [path, body] pairs: a body that is not text is still scanned
(fail closed), every string inside it, and a text body is scanned under its path."""

from __future__ import annotations

from acx.core.scrub import scan_any

GITHUB_PAT = "ghp_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"


def test_a_pair_whose_body_is_an_object_still_blocks_on_the_secret_inside() -> None:
    report = scan_any({"skills": [["s.md", {"note": f"k {GITHUB_PAT}"}]]})
    assert report.blocked
    assert [f.rule for f in report.findings] == ["github-pat"]


def test_a_pair_with_a_text_body_is_scanned_under_its_path() -> None:
    report = scan_any({"knowledge": [["notes.md", f"k {GITHUB_PAT}"]]})
    assert [(f.rule, f.location, f.offset) for f in report.findings] == [("github-pat", "file:notes.md", 2)]
