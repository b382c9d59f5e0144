"""Scrub verdicts: the Arabic letter mark and the Hangul fillers
hidden inside a token, the extra fields of a knowledge file given as an object, and which Slack and
Lob triggers are judged once a flood of bare prefixes has spent the scan budget.
"""

from __future__ import annotations

import hashlib

import pytest

from acx.core.scrub import scan_any, scan_text
from acx.core.scrub.normalise import is_ignorable, normalise_bytes

GITHUB_PAT = "ghp_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


@pytest.mark.parametrize("cp", [0x061C, 0x115F, 0x1160])
def test_the_arabic_letter_mark_and_the_hangul_fillers_are_ignorable(cp: int) -> None:
    """U+061C ARABIC LETTER MARK, U+115F HANGUL CHOSEONG FILLER and U+1160 HANGUL JUNGSEONG FILLER are
    Default_Ignorable_Code_Points: dropped by normalisation, so one typed into a GitHub token does not
    hide it from its own rule."""
    assert is_ignorable(chr(cp))
    norm = normalise_bytes(f"a{chr(cp)}b".encode())
    assert norm is not None and norm.data == b"ab"
    hidden = GITHUB_PAT[:10] + chr(cp) + GITHUB_PAT[10:]
    assert _rules(f"key {hidden} end") == [("github-pat", 4)]


@pytest.mark.parametrize("cp", [0x061B, 0x061D, 0x115E, 0x1161])
def test_the_characters_next_to_those_ranges_are_kept(cp: int) -> None:
    """ARABIC SEMICOLON, ARABIC END OF TEXT MARK, HANGUL CHOSEONG TIKEUT-RIEUL and HANGUL JUNGSEONG A
    are visible characters, not default-ignorable: normalisation keeps them."""
    assert not is_ignorable(chr(cp))
    norm = normalise_bytes(f"a{chr(cp)}b".encode())
    assert norm is None or norm.data == f"a{chr(cp)}b".encode()


def test_the_extra_fields_of_a_knowledge_file_object_are_scanned_with_its_body() -> None:
    """``{"path", "body", ...}``: the fields besides the name and the body are scanned too, as text
    after the body of that file (a token kept in ``owner`` is found there), and a clean one is not."""
    doc = {"knowledge": [{"path": "notes.md", "body": "hello", "owner": GITHUB_PAT}]}
    found = [(f.rule, f.location, f.offset) for f in scan_any(doc).findings]
    assert found == [("github-pat", "file:notes.md", 12)]
    clean = {"knowledge": [{"path": "notes.md", "body": "hello", "owner": "alice"}]}
    assert scan_any(clean).findings == []


SLACK_REFRESH = "xoxe-1-" + "".join(hashlib.sha256(bytes([i])).hexdigest() for i in range(3))[:146]
SLACK_USER = "xoxe-1234567890-2345678901-3456789012-Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2Lm"


@pytest.mark.parametrize(
    ("token", "rule"), [(SLACK_REFRESH, "slack-config-refresh-token"), (SLACK_USER, "slack-user-token")]
)
def test_past_the_budget_both_rules_behind_the_first_xoxe_hit_are_judged(token: str, rule: str) -> None:
    """``xoxe-`` announces two Slack formats, user tokens and configuration refresh tokens. With the
    budget spent by 1,000 bare ``xoxe-`` prefixes the buffer is refused and only the first hit is
    judged; both rules behind that hit run, so a token of either format standing first is named."""
    flood = "xoxe- " * 1000
    assert _rules(f"{token} {flood}") == [("scan-budget", 0), (rule, 0)]


LOB_TEST_PUB = "test_pub_" + hashlib.sha256(b"lob").hexdigest()[:31]


def test_past_the_budget_a_lob_key_after_a_bare_test_pub_prefix_is_not_searched_for() -> None:
    """A Lob publishable key starts at its ``test_pub_`` hit: it is named standing alone, and with the
    budget spent by bare ``test_pub_`` prefixes one standing after a bare prefix is not searched for
    (only the first hit is judged, anchored at that hit): the buffer is refused, nothing else named."""
    flood = "test_pub_ " * 1000
    assert _rules(f"k {LOB_TEST_PUB}") == [("lob-pub-api-key", 2)]
    assert _rules(f"test_pub_ {LOB_TEST_PUB} {flood}") == [("scan-budget", 0)]


RANDOM_RUN = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9R"


@pytest.mark.parametrize("filler", ["~", "%"])
@pytest.mark.parametrize(("gap", "blocked"), [(511, False), (512, False), (513, True)])
def test_a_name_excuses_a_random_value_512_value_bytes_away(filler: str, gap: int, blocked: bool) -> None:
    """``sha256=`` says its value is a digest, not a secret, even when value characters (``~``, ``%``)
    run between the name and a random run: up to 512 of them. Farther back the name is not looked for,
    and the random run is blocked by the generic entropy check at its own offset."""
    text = "sha256=" + filler * gap + RANDOM_RUN
    assert _rules(text) == ([("high-entropy", 7 + gap)] if blocked else [])


LOB_LIVE_PUB = "live_pub_" + hashlib.sha256(b"lob").hexdigest()[:31]


def test_a_live_lob_publishable_key_is_named_by_its_rule() -> None:
    """A live Lob publishable key is named by its own rule, as the test one is (it was not: the gocardless
    regex trigger live_[a-z0-9_=-]{4} took the prefilter's hit at that position)."""
    assert _rules(f"k {LOB_LIVE_PUB}") == [("lob-pub-api-key", 2)]


def test_a_live_lob_secret_key_is_named_though_gocardless_trigger_matches_there_too() -> None:
    """``live_`` + hex matches gocardless' regex trigger and Lob's, and RE2 reports one alternative
    per position: the later trigger is tried too, so a live Lob secret key is named (it was not)."""
    key = "live_" + "0123456789abcdef" * 2 + "012"
    assert _rules(f"lob_key = {key}") == [("lob-api-key", 10)]
    assert _rules(f"test key {key.replace('live_', 'test_')}") == [("lob-api-key", 9)]
