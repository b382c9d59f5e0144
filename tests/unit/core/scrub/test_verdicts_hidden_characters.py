"""Scrub verdicts: a variation selector hidden inside a token, an
Airtable personal access token on its own, and the cost of bare ``sentry.io`` hosts against the scan
budget.
"""

from __future__ import annotations

import hashlib

import pytest

from acx.core.scrub import judge, scan_any, scan_text
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


@pytest.mark.parametrize("run", ["abcdefg", "nopqrst", "tuvwxyz", "TUVWXYZ"])
def test_a_token_holding_seven_letters_in_alphabet_order_is_a_stand_in(run: str) -> None:
    """``ghp_...tuvwxyz...``: seven letters in alphabet order (in any case, the alphabet's last seven
    included) are typed, not drawn, so a token of the right shape holding them is not blocked; the same
    token with its last letter out of order is."""
    token = "ghp_Zq8Lm3Xv9R" + run + "Wp7Ny4Kb9Qa5Hc0d2Lm"
    assert _rules(f"key {token} end") == []
    drawn = "ghp_Zq8Lm3Xv9R" + run[:6] + "A" + "Wp7Ny4Kb9Qa5Hc0d2Lm"
    assert _rules(f"key {drawn} end") == [("github-pat", 4)]


DISCORD_BOT = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"


@pytest.mark.parametrize(("gap", "named"), [(119, True), (120, True), (121, False)])
def test_a_discord_bot_token_is_named_up_to_120_bytes_before_the_word_discord(gap: int, named: bool) -> None:
    """A Discord bot token has no prefix of its own: the word ``discord`` after it names it, when the
    match (the separator before the token) starts at most 120 bytes before that word. Farther away its
    random last part is still blocked, by the generic entropy check."""
    text = "x " + DISCORD_BOT + " " * (gap - 1 - len(DISCORD_BOT)) + "discord"
    assert text.index("discord") - (text.index(DISCORD_BOT) - 1) == gap
    rules = _rules(text)
    assert rules == ([("discord-bot-token", 2)] if named else [("high-entropy", 34)])


FLY_TOKEN = "fo1_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9Rt2"


def test_past_the_budget_only_the_first_trigger_hit_is_judged() -> None:
    """1,000 bare ``fm1`` prefixes spend the budget in the trigger pass: the buffer is refused whole,
    and only the first hit's rules run, anchored at that hit. A Fly.io token standing first is named
    too; the same token after a bare ``fm1`` prefix is not searched for (its own hit comes second)."""
    flood = "fm1 " * 1000
    assert len(FLY_TOKEN) == 47
    assert _rules(f"{FLY_TOKEN} {flood}") == [("flyio-access-token", 0), ("scan-budget", 0)]
    assert _rules(f"fm1 {FLY_TOKEN} {flood}") == [("scan-budget", 0)]
    assert _rules(f"fm1 {FLY_TOKEN} end") == [("flyio-access-token", 4)]


SLACK_USER = "xoxp-1234567890-2345678901-3456789012-Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2Lm"


@pytest.mark.parametrize("bare", ["xoxp-", "xoxe-"])
def test_past_the_budget_a_slack_token_after_a_bare_prefix_is_not_searched_for(bare: str) -> None:
    """The same for Slack's user-token prefixes: with the budget spent by 1,000 bare prefixes, a user
    token standing first is named, one standing after a bare prefix is not (only the first hit is
    judged, anchored at that hit), and the buffer is refused either way."""
    flood = f"{bare} " * 1000
    assert _rules(f"{SLACK_USER} {flood}") == [("scan-budget", 0), ("slack-user-token", 0)]
    assert _rules(f"{bare} {SLACK_USER} {flood}") == [("scan-budget", 0)]
    assert _rules(f"{bare} {SLACK_USER} end") == [("slack-token", 6), ("slack-user-token", 6)]


@pytest.mark.parametrize("prefix", ["sbp_", "SBP_", "Sbp_"])
def test_supabase_prefixes_in_any_case_draw_on_the_scan_budget(prefix: str) -> None:
    """The Supabase triggers are case-insensitive literals: 600 ``sbp_`` prefixes in any case are 600
    candidates, more than a 3 KB buffer's budget allows, so the buffer is refused; 20 are not."""
    assert _rules((prefix + " ") * 600) == [("scan-budget", 0)]
    assert _rules((prefix + " ") * 20) == []


@pytest.mark.parametrize("name", ["sumOauthIds", "sumOfIds", "sumOzoneIds"])
def test_a_keyword_ending_inside_a_camel_case_word_from_a_to_z_is_not_the_keyword(name: str) -> None:
    """``sumOauthIds``: the capital O starts the next camel-case word whatever lowercase letter follows
    it (``a`` and ``z`` included), so ``sumo`` there is not the Sumo Logic keyword; ``sumoAuth`` is."""
    value = "suZq8Lm3Xv9Rt2"
    assert _rules(f"{name} = {value}") == []
    assert _rules(f"sumoAuth = {value}") == [("sumologic-access-id", 11)]


def test_knowledge_and_skills_given_as_path_body_pairs_are_scanned_as_files() -> None:
    """``"knowledge": [[path, body]]`` (a JSON pair, or a tuple from Python): each body is scanned as
    the file at that path, its offsets counted in the body, never as an anonymous ``[0]`` entry."""
    doc = {
        "knowledge": [["rom/knowledge/NOTES.md", f"token {GITHUB_PAT}"]],
        "skills": [("a/SKILL.md", GITHUB_PAT)],
    }
    found = [(f.rule, f.location, f.offset) for f in scan_any(doc).findings]
    assert found == [("github-pat", "file:rom/knowledge/NOTES.md", 6), ("github-pat", "file:a/SKILL.md", 0)]


@pytest.mark.parametrize(
    ("value", "token"), [(b"cz80juk3z9", True), (b"q7wx2mzk4r", True), (b"cz80juk3z", False)]
)
def test_an_alnum_token_is_ten_characters_at_least(value: bytes, token: bool) -> None:
    """``the token is cz80juk3z9``: ten mixed letters and digits are already a token; nine are not."""
    assert judge.alnum_token(value) is token


@pytest.mark.parametrize(("value", "wordy"), [(b"DEPLOYTOKEN", True), (b"DEPLOYSECRET", False)])
def test_an_upper_case_word_of_eleven_letters_is_a_word_twelve_are_a_draw(value: bytes, wordy: bool) -> None:
    """``DEPLOYTOKEN`` (11 capitals) reads as a word; from 12 capitals on, a run without digits is a
    base32 draw (``AKIAAVIHWGUCPXMMZTBE``), not a word."""
    assert judge.is_wordy(value) is wordy
