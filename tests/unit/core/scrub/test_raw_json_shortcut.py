"""Scrub behaviour: the CLI's
raw-JSON shortcut looks for the forbidden literals too."""

from __future__ import annotations

import json

from acx.core.scrub import scan_raw_json_fast, scan_text


def test_the_raw_json_shortcut_is_not_clean_when_a_forbidden_literal_is_in_it() -> None:
    """Bytes with no secret but a forbidden literal (any case) must go to the full scan, which reports
    it; without forbidden literals (or with others) the same bytes are provably clean."""
    summary = "moved from GitHub.com/Acme/Secret-Repo last week"
    raw = json.dumps({"records": [{"id": "a", "summary": summary}]}).encode()
    assert scan_raw_json_fast(raw) is True
    assert scan_raw_json_fast(raw, ["acme/elsewhere"]) is True
    assert scan_raw_json_fast(raw, ["github.com/acme/secret-repo"]) is False
    assert scan_raw_json_fast(raw, ["SECRET-REPO", ""]) is False
    assert [f.rule for f in scan_text(summary, forbidden=["secret-repo"])] == ["forbidden-literal"]
