"""Scrub verdicts the mutation run found unguarded: a variation selector hidden inside a token, an
Airtable personal access token on its own, and the cost of bare ``sentry.io`` hosts against the scan
budget.
"""

from __future__ import annotations

import hashlib

import pytest

from acx.core.scrub import scan_text
from acx.core.scrub.normalise import is_ignorable, normalise_bytes

GITHUB_PAT = "ghp_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"
AIRTABLE_PAT = "patQz8Lm3Xv9Rt2Wp." + hashlib.sha256(b"airtable").hexdigest()


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


@pytest.mark.parametrize("cp", [0xFE00, 0xFE07, 0xFE0F])
def test_every_variation_selector_is_ignorable(cp: int) -> None:
    """U+FE00..U+FE0F (VARIATION SELECTOR-1..16) are default-ignorable, the first one included:
    normalisation drops them, and the characters either side of the block are kept."""
    assert is_ignorable(chr(cp))
    norm = normalise_bytes(f"a{chr(cp)}b".encode())
    assert norm is not None and norm.data == b"ab"
    assert not is_ignorable("\ufdff") and not is_ignorable("\ufe10")


@pytest.mark.parametrize("cp", [0xFE00, 0xFE0F])
def test_a_variation_selector_inside_a_token_does_not_hide_it(cp: int) -> None:
    """An invisible VARIATION SELECTOR typed into a GitHub token is removed before matching, so the
    token is still named by its own rule at its own offset (not left to the generic entropy check)."""
    hidden = GITHUB_PAT[:10] + chr(cp) + GITHUB_PAT[10:]
    assert _rules(f"key {GITHUB_PAT} end") == [("github-pat", 4)]
    assert _rules(f"key {hidden} end") == [("github-pat", 4)]


@pytest.mark.parametrize("template", ["{}", "token {} end", "value: {};"])
def test_an_airtable_personal_access_token_is_named_by_its_rule(template: str) -> None:
    """``pat`` + 14 letters or digits + ``.`` + 64 hex digits is an Airtable personal access token,
    found wherever it stands (its trigger is the small regex of that prefix)."""
    text = template.format(AIRTABLE_PAT)
    assert _rules(text) == [("airtable-personal-access-token", text.index("pat"))]


@pytest.mark.parametrize("host", ["sentry.io ", "SENTRY.IO ", "Sentry.io "])
def test_bare_sentry_hosts_draw_on_the_scan_budget(host: str) -> None:
    """``sentry.io`` is the Sentry DSN rule's trigger, a literal matched in any case: each bare host
    runs that rule as well as the ``sentry`` keyword rules. 200 of them (2,000 bytes, a budget of 519)
    are refused as ``scan-budget``; 150 pass."""
    assert _rules(host * 200) == [("scan-budget", 0)]
    assert _rules(host * 150) == []


def test_a_look_alike_host_does_not_draw_the_dsn_rule() -> None:
    """``sentry-io`` is no Sentry host: it fires the ``sentry`` keyword rules only, so 200 of them
    stay inside the budget that 200 ``sentry.io`` hosts exceed."""
    assert _rules("sentry-io " * 200) == []
    assert _rules("sentry.io " * 200) == [("scan-budget", 0)]
