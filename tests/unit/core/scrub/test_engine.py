"""The scrub engine (acx/core/scrub/engine.py): rules run over the text, candidates are checked, and
findings are placed."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import random
import re
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core.scrub import MIN_SECRET_LEN, engine, generic, scan_any, scan_text
from acx.core.scrub.engine import BLOCK, WARN, _check_value, _keyword_at_word_edge, compiled
from acx.core.scrub.rules import RULES
from tests.unit.core.scrub.conftest import RANDOM_RUN_27, named
from tests.unit.core.scrub.test_triggers import cases

TWITTER_BEARER = (
    "AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAAA0%2BuSeid%2BULvsea4JtiGRiSDSJSI%3D"
    "EUifiRBkKG5E2XzMDjRfl76ZC9Ub0wnz4XsNiRVBChTYbJcE3F"
)


@pytest.mark.parametrize("zeros", [300, 600, 3000, 30000])
def test_a_base64_blob_with_a_long_run_of_zero_bytes_is_clean(zeros: int) -> None:
    """A data URI of a file with many zero bytes (an icon, a font, a wasm module): one long run of
    ``A`` between ordinary base64, and a blob that starts with it. Neither is a secret, and neither
    spends the scan budget (the run is one candidate, not one per byte)."""
    tail = bytes(range(1, 40)) * 3
    inner = base64.b64encode(b"\x89PNG header" + bytes(zeros) + tail).decode()
    leading = base64.b64encode(bytes(zeros) + tail).decode()
    assert named(f"icon: data:image/png;base64,{inner}") == []
    assert named(f"icon: data:image/png;base64,{leading}") == []
    assert named("pad: " + "A" * zeros + "==") == []


@pytest.mark.parametrize("template", ["{}", "x {}", 'token = "{}"', "Authorization=Bearer {}"])
def test_a_twitter_bearer_token_is_still_named_wherever_it_stands(template: str) -> None:
    """A real bearer token (21 A, then its random part) is named by its rule at its own offset, at the
    start of a text and after any separator, and so is one following a long A run's separator."""
    text = template.format(TWITTER_BEARER)
    assert ("twitter-bearer-token", text.index("AAAA")) in named(text)


def test_a_twitter_bearer_token_after_a_zero_blob_is_named() -> None:
    """The zero-byte run before it does not hide a token standing after it (each is its own candidate)."""
    blob = base64.b64encode(bytes(3000)).decode()
    text = f"{blob} {TWITTER_BEARER}"
    assert named(text) == [("twitter-bearer-token", len(blob) + 1)]


def test_a_random_run_of_a_after_the_21_is_still_a_token() -> None:
    """Only a value made of nothing but ``A`` is excused: 21 A and any random rest is a token."""
    rest = (hashlib.sha256(b"twitter").hexdigest() * 2)[:90]
    assert named(f"x {'A' * 21}{rest}") == [("twitter-bearer-token", 2)]


@pytest.mark.parametrize("name", ["myZendeskSecret", "apiZendeskSecret", "zendesk_secret", "ZENDESK_SECRET"])
def test_a_keyword_starting_a_camel_case_word_with_z_is_the_keyword(name: str) -> None:
    """``myZendeskSecret``: a capital after a lowercase letter starts a new camel-case word, Z included,
    so the Zendesk keyword there is at a word edge and its rule names the value."""
    value = hashlib.sha256(b"zendesk").hexdigest()[:40]
    assert named(f"{name} = {value}") == [("zendesk-secret-key", len(name) + 3)]


ROOT = Path(__file__).resolve().parents[4]
CORPUS = ROOT.parent / "shared" / "corpora" / "secrets-gitleaks.json"
_LONGEST = 400  # reference matches longer than this are cut by the window after a trigger (by design)
_SHORT_KEYWORD = {i for i, r in enumerate(RULES) if r.keyword and r.id == "intra42-client-secret"}


def reference(buf: bytes) -> set[tuple[str, int, int]]:
    """Every provider rule's regex over the whole buffer (no prefilter, no window), value-checked."""
    c = compiled()
    out: set[tuple[str, int, int]] = set()
    for index in range(len(RULES)):
        regex = c.rule(index)
        for m in regex.finditer(buf):
            s, e = m.span(regex.groups)
            if s >= 0 and _check_value(index, m, buf):
                out.add((RULES[index].id, s, e))
    return out


def prefiltered(buf: bytes) -> set[tuple[str, int, int]]:
    spans: list = []
    engine._scan_providers(buf, compiled(), spans, [1 << 30])
    return {(rule, s, e) for rule, s, e, _ in spans}


def _comparable(found: set[tuple[str, int, int]]) -> set[tuple[str, int, int]]:
    return {(r, s, e) for r, s, e in found if e - s <= _LONGEST and r not in engine._LONG_RULES}


# --- keyword rules: where the keyword may stand (engine._keyword_at_word_edge) -------------------
# The byte before the keyword is not an ASCII letter, unless it is a lower-case letter and the keyword
# starts with a capital (a camel-case word starts there); and the keyword does not end in a capital with
# a lower-case letter right after it (it would end inside the next camel-case word), unless the keyword
# is all capitals. Checked on every byte at both edges against that statement in ``bytes`` methods.

_ALL = range(256)


def _letter(b: int) -> bool:
    return bytes([b]).isalpha()


def _lower(b: int) -> bool:
    return bytes([b]).islower()


def _upper(b: int) -> bool:
    return bytes([b]).isupper()


def _start_ok(prev: int, first: int) -> bool:
    return not _letter(prev) or (_lower(prev) and _upper(first))


def _end_ok(keyword: bytes, nxt: int) -> bool:
    return not (_lower(nxt) and _upper(keyword[-1]) and not keyword.isupper())


@pytest.mark.parametrize("first", [ord(c) for c in "aAzZmM_0"] + [64, 91, 96, 123])
def test_the_byte_before_a_keyword_decides_its_start_edge(first: int) -> None:
    keyword = bytes([first]) + b"key"
    for prev in _ALL:
        buf = b"x" + bytes([prev]) + keyword + b" = v"
        assert _keyword_at_word_edge(buf, 2, 2 + len(keyword)) == _start_ok(prev, first), (prev, first)


@pytest.mark.parametrize(
    "keyword", [b"keY", b"keA", b"keZ", b"KEY", b"kEY", b"Key", b"key", b"ke@", b"ke[", b"KE`", b"ke{", b"k"]
)
def test_the_byte_after_a_keyword_decides_its_end_edge(keyword: bytes) -> None:
    for nxt in _ALL:
        buf = b" " + keyword + bytes([nxt]) + b"x"
        assert _keyword_at_word_edge(buf, 1, 1 + len(keyword)) == _end_ok(keyword, nxt), (keyword, nxt)


def test_a_keyword_at_either_end_of_the_buffer_is_at_an_edge() -> None:
    for keyword in (b"Key", b"keY", b"KEY", b"key"):
        assert _keyword_at_word_edge(keyword, 0, len(keyword))
        assert _keyword_at_word_edge(b"a" + keyword, 1, 1 + len(keyword)) == _start_ok(ord("a"), keyword[0])
        assert _keyword_at_word_edge(keyword + b"a", 0, len(keyword)) == _end_ok(keyword, ord("a"))


VALUE = hashlib.sha256(b"twitter").hexdigest()[:50]


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("twitter_secret", True),
        ("TWITTER_SECRET", True),
        ("myTwitterSecret", True),
        ("my_twitter_secret", True),
        ("mytwitter_secret", False),  # inside another word
        ("MYTWITTER_SECRET", False),
        ("twitterSecret", True),
    ],
)
def test_a_keyword_rule_names_a_value_only_when_its_keyword_stands_at_a_word_edge(
    name: str, named: bool
) -> None:
    text = f"{name} = {VALUE}"
    rules = {f.rule for f in scan_text(text)}
    assert ("twitter-api-secret" in rules) is named, rules


# --- the value check after a provider rule matched (engine._check_value) --------------------------

_B62 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _github(body30: str) -> str:
    """A GitHub token as GitHub mints them: 30 random characters, then their CRC32 in 6 base62 digits."""
    value, digits = zlib.crc32(body30.encode()), bytearray()
    while value:
        value, rem = divmod(value, 62)
        digits.insert(0, _B62[rem])
    return "ghp_" + body30 + bytes(digits).rjust(6, b"0").decode()


RANDOM36 = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc0d12"  # no valid checksum
GITHUB_TOKEN = f"ghp_{RANDOM36}"


def _rules_at(text: str) -> set[tuple[str, int]]:
    return {(f.rule, f.offset) for f in scan_text(text)}


def test_a_token_with_a_valid_checksum_is_named_even_when_it_looks_typed() -> None:
    """Eight equal characters in a row are typed, not drawn (a stand-in), unless the GitHub checksum
    holds: then it is a real token whatever it looks like. Without the checksum it is a stand-in."""
    real = _github("aaaaaaaa" + "Zq8Lm3Xv9Rt2Wp7Ny4Kb9R")
    assert ("github-pat", 2) in _rules_at(f"x {real} y")
    forged = real[:-1] + ("A" if real[-1] != "A" else "B")
    assert ("github-pat", 2) not in _rules_at(f"x {forged} y")
    assert ("github-pat", 2) in _rules_at(f"x ghp_{RANDOM36} y")


@pytest.mark.parametrize("tail", ["####", "****", "xxxx", "XXXX", "...."])
def test_a_token_running_on_into_a_mask_is_a_masked_example(tail: str) -> None:
    """``ghp_...####``: the four bytes right after the match are a mask, so the token is an example
    with its end blanked out. Three mask characters are not a mask: the token is named."""
    token = f"ghp_{RANDOM36}"
    assert ("github-pat", 2) not in _rules_at(f"x {token}{tail} y")
    assert ("github-pat", 2) not in _rules_at(f"x {token}{tail}")
    if tail[0] in "#*.":
        assert ("github-pat", 2) in _rules_at(f"x {token}{tail[:3]} y")


@pytest.mark.parametrize("ext", ["png", "jpg", "jpeg", "ico", "css", "js", "map", "woff2", "html"])
def test_a_token_shaped_asset_fingerprint_is_a_file_name(ext: str) -> None:
    """``ghp_<36>.png`` is a fingerprinted asset file name; ``.pngx`` is not an asset extension."""
    token = f"ghp_{RANDOM36}"
    assert ("github-pat", 2) not in _rules_at(f"x {token}.{ext} y")
    assert ("github-pat", 2) in _rules_at(f"x {token}.{ext}x y")


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("twitteRish_secret", False),
        ("TWITTERish_secret", True),
        ("twitter_Secret", True),
        ("xtwitter_secret", False),
    ],
)
def test_the_keyword_itself_decides_the_edge_not_the_whole_match(name: str, named: bool) -> None:
    """The edge is judged at the keyword (``twitteR`` then ``ish``: inside a camel-case word), never
    at the end of the value or of the whole match."""
    text = f"{name} = {VALUE}"
    assert (("twitter-api-secret", len(name) + 3) in _rules_at(text)) is named


@pytest.mark.parametrize("value", ["a" * 50, "0" * 50, "example" * 7 + "x"])
def test_a_weak_value_after_a_keyword_is_not_named(value: str) -> None:
    assert ("twitter-api-secret", 17) not in _rules_at(f"twitter_secret = {value}")


PASSWORD = "Xk9mQ2vL7pRt4Wz"


CURL = "curl-auth-user"
MYSQL = "mysql-cli-password"


@pytest.mark.parametrize(
    ("rule", "command", "named"),
    [
        (CURL, f"curl -u admin:{PASSWORD} https://api.example", True),
        (CURL, f"curl -u admin:{PASSWORD[:7]}:{PASSWORD[7:]} https://api.example", True),  # a colon in it
        (CURL, f'curl -u ":{PASSWORD}" https://api.example', True),  # no user
        (CURL, f'curl -u "{PASSWORD}:" https://api.example', True),  # the password given as the user
        (CURL, f"curl -u <username>:{PASSWORD} https://api.example", False),  # template syntax
        (CURL, "curl -u admin:<password> https://api.example", False),
        (CURL, "curl -u admin:$PASSWORD https://api.example", False),
        (CURL, "curl -u admin:{password} https://api.example", False),
        (CURL, "curl -u admin:[password] https://api.example", False),
        (CURL, "curl -u admin:password https://api.example", False),
        (MYSQL, f"mysql -u root -p{PASSWORD} shop", True),
        (MYSQL, "mysql -u root -p$DB_PASSWORD shop", False),
        (MYSQL, "mysql -u root -p{{db_password}} shop", False),
        (MYSQL, "mysql -u root -p%DB_PASSWORD% shop", False),
        (MYSQL, "mysql -u root -ppassword shop", False),
    ],
)
def test_a_password_on_a_command_line_is_named_only_when_it_is_a_literal(
    rule: str, command: str, named: bool
) -> None:
    """``curl -u user:password`` and ``mysql -p<password>``: a literal is named by the command's rule;
    template syntax, a variable or the bare word ``password`` is not."""
    text = f"run: {command}"
    assert (rule in {r for r, _ in _rules_at(text)}) is named, _rules_at(text)


HEADER = "-----BEGIN RSA PRIVATE KEY-----"
KEY_LINE = "MIIEowIBAAKCAQEA0Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8"


@pytest.mark.parametrize("lead", ["", "key: ", "x" * 70 + "\n"])
def test_a_private_key_header_is_named_unless_an_empty_block_follows(lead: str) -> None:
    """The header alone counts (a key cut off); a block whose END line follows with no key material
    between is a stand-in, wherever the header stands; key material between is a key."""
    at = len(lead)
    assert ("private-key", at) in _rules_at(f"{lead}{HEADER}\n")
    assert ("private-key", at) not in _rules_at(f"{lead}{HEADER}\n-----END RSA PRIVATE KEY-----\n")
    assert ("private-key", at) not in _rules_at(f"{lead}{HEADER}\nanything\n-----END RSA PRIVATE KEY-----\n")
    assert ("private-key", at) in _rules_at(f"{lead}{HEADER}\n{KEY_LINE}\n-----END RSA PRIVATE KEY-----\n")


@pytest.mark.parametrize(("gap", "named"), [(392, False), (393, True)])
def test_an_end_line_counts_only_within_400_bytes_of_the_header(gap: int, named: bool) -> None:
    """``-----END`` must begin within the 400 bytes after the header (and end inside them) to make
    an empty block of it; further on, the header stands alone and is named."""
    filler = ("word " * 100)[: gap - 1] + "\n"
    text = f"{HEADER}{filler}-----END CERTIFICATE-----\n"
    assert text.index("-----END") - len(HEADER) == gap
    assert (("private-key", 0) in _rules_at(text)) is named


# --- offsets of a normalised (non-ASCII) buffer map back to its own bytes (engine.scan_bytes) ------


@pytest.mark.parametrize("template", ["é x {} ü", "é {}", "ü{}é", "{} — done"])
def test_a_finding_in_a_non_ascii_buffer_spans_the_secret_in_the_original_bytes(template: str) -> None:
    """A buffer that is not ASCII is normalised before the scan: each span is mapped back, start and
    end, to the original bytes (the end of the buffer when the secret ends it)."""
    buf = template.format(GITHUB_TOKEN).encode()
    start = buf.index(b"ghp_")
    assert engine.scan_bytes(buf) == [("github-pat", start, start + len(GITHUB_TOKEN), BLOCK)]


def test_a_finding_inside_one_expanded_character_covers_that_whole_character() -> None:
    """NFKC expands the ligature ``ﬁ`` (3 bytes) into ``fi``: a match of ``f`` maps back onto that one
    character, all three of its bytes (a span never cuts a character, nor is it empty)."""
    buf = "aa ﬁ bb".encode()
    assert engine.scan_bytes(buf, re.compile(b"f")) == [("forbidden-literal", 3, 6, BLOCK)]
    assert engine.scan_bytes(buf, re.compile(b"fi")) == [("forbidden-literal", 3, 6, BLOCK)]


# --- the scan budget: 512 + len // 256 steps (engine docstring) -----------------------------------


@pytest.mark.parametrize(("pad", "refused"), [(250, False), (249, True), (0, True)])
def test_the_budget_is_512_plus_one_step_per_256_bytes(pad: int, refused: bool) -> None:
    """Each ``Q~`` (the Azure AD client-secret trigger) is one candidate and runs its one rule: two
    steps. 258 of them are 516 steps: a buffer of 1,024 bytes (a budget of 512 + 4) holds them and is
    judged (clean), one of 1,023 bytes (512 + 3) is refused whole."""
    text = "Q~ " * 258 + " " * pad
    assert ([f.rule for f in scan_text(text)] == ["scan-budget"]) is refused
    assert [f.rule for f in scan_text("Q~ " * 257)] == []


def test_a_trigger_one_byte_into_another_is_a_candidate_of_its_own() -> None:
    """``bintray`` (a JFrog keyword) holds ``intra`` (intra42's) one byte in: each word is two
    candidates, and 120 of them spend the budget that 120 ``jfrog`` words of the same length (one
    candidate each, the same rules) do not."""
    assert [f.rule for f in scan_text("bintray " * 120)] == ["scan-budget"]
    assert [f.rule for f in scan_text("jfrog   " * 120)] == []


@pytest.mark.parametrize(("pad", "left"), [(250, 0), (249, -1)])
def test_the_generic_passes_run_while_the_budget_is_not_exceeded(
    monkeypatch: pytest.MonkeyPatch, pad: int, left: int
) -> None:
    """The budget is exceeded when it is below zero: spent exactly (the 258 ``Q~`` above in 1,024
    bytes leave 0), the URI, assignment and random-run passes still run, each seeing what is left;
    one step over (1,023 bytes), none of them runs and the buffer is refused."""
    seen: list[tuple[str, int]] = []
    for name in ("scan_uris", "scan_assignments", "scan_runs"):
        real = getattr(generic, name)

        def record(*args: object, _name: str = name, _real: object = real) -> object:
            seen.append((_name, args[-1][0]))  # type: ignore[index]
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(generic, name, record)
    found = [f.rule for f in scan_text("Q~ " * 258 + " " * pad)]
    if left == 0:
        assert seen == [("scan_uris", 0), ("scan_assignments", 0), ("scan_runs", 0)]
        assert found == []
    else:
        assert seen == []
        assert found == ["scan-budget"]


@pytest.mark.parametrize(("pad", "named"), [(465, False), (466, True)])
def test_each_hit_is_judged_while_the_budget_is_not_exceeded(pad: int, named: bool) -> None:
    """The budget is checked after each hit's rules ran: 258 ``Q~`` (two steps each, after the
    prefilter's 259 candidates) then a GitHub token. In 1,280 bytes (a budget of 517) the Q~ leave it
    spent exactly and the token is still judged and named; in 1,279 bytes (516) they exceed it and
    no later hit is judged. Both are refused."""
    text = "Q~ " * 258 + " " * pad + GITHUB_TOKEN
    found = [(f.rule, f.offset) for f in scan_text(text)]
    assert (
        found == [("scan-budget", 0), ("github-pat", text.index("ghp_"))] if named else [("scan-budget", 0)]
    )


# --- one finding per secret (engine._dedupe) ---------------------------------------------------

_NAMES = ["github-pat", "jwt", "secret-assignment", "high-entropy", "aws-secret-access-key", "home-path"]
_NAMES += ["connection-string-password", "uri-credentials"]
_SPANS = st.lists(
    st.tuples(
        st.sampled_from(_NAMES),
        st.integers(0, 20000),
        st.integers(1, 6000),
        st.sampled_from([BLOCK, WARN]),
    ).map(lambda t: (t[0], t[1], t[1] + t[2], t[3])),
    max_size=12,
)


def _one_per_secret(spans: list) -> list:
    """In offset order (then rule), each (rule, offset) once; a generic finding dropped where a
    specific block finding (any rule not generic) overlaps it; high-entropy dropped on an AWS secret."""
    out, seen = [], set()
    blocks = [(s, e) for rule, s, e, sev in spans if sev == BLOCK and rule not in engine._GENERIC]
    aws = [(s, e) for rule, s, e, _ in spans if rule == "aws-secret-access-key"]
    for rule, s, e, sev in sorted(spans, key=lambda sp: (sp[1], sp[0])):
        if (rule, s) in seen:
            continue
        if rule in engine._GENERIC and any(bs < e and be > s for bs, be in blocks):
            continue
        if rule == "high-entropy" and any(a < e and b > s for a, b in aws):
            continue
        seen.add((rule, s))
        out.append((rule, s, e, sev))
    return out


@settings(max_examples=400, deadline=None)
@given(spans=_SPANS)
def test_findings_are_one_per_secret_in_offset_order(spans: list) -> None:
    assert engine._dedupe(list(spans)) == _one_per_secret(spans)


def test_a_generic_hit_inside_a_long_specific_one_is_dropped_past_a_shorter_one() -> None:
    """The look back walks every specific span that starts before the hit (up to 8 KiB back), not
    only the nearest one: a short span in between does not hide the long one covering the hit."""
    spans = [("private-key", 0, 5000, BLOCK), ("jwt", 100, 200, BLOCK), ("high-entropy", 4000, 4100, BLOCK)]
    assert [sp[0] for sp in engine._dedupe(list(spans))] == ["private-key", "jwt"]
    touching = [
        ("jwt", 100, 200, BLOCK),
        ("high-entropy", 200, 300, BLOCK),
        ("secret-assignment", 50, 100, BLOCK),
    ]
    assert engine._dedupe(list(touching)) == sorted(touching, key=lambda sp: sp[1])


# --- the shortest buffer that is scanned (scan_bytes) ---------------------------------------------


def test_a_buffer_of_exactly_the_minimum_length_is_scanned() -> None:
    """``MIN_SECRET_LEN`` bytes can hold a secret assignment (``pwd=`` and four characters): it is
    scanned and blocked; one byte fewer cannot hold a secret and is not judged."""
    assert MIN_SECRET_LEN == 8
    shortest = "pwd=Zq8L"
    assert len(shortest.encode()) == MIN_SECRET_LEN
    assert named(shortest) == [("secret-assignment", 4)]
    assert scan_any(shortest).blocked
    assert named(shortest + " ") == [("secret-assignment", 4)]
    assert named(shortest[:-1]) == []


def test_a_text_under_two_bytes_holds_nothing_to_report() -> None:
    assert scan_text("a", forbidden=["a"]) == []
    assert [(f.rule, f.offset) for f in scan_text("ab", forbidden=["AB"])] == [("forbidden-literal", 0)]


# --- a token running on into a mask is a redacted example (_check_value) --------------------------


@pytest.mark.parametrize("mask", ["####", "****", "...."])
def test_a_token_that_runs_on_into_a_mask_is_a_redacted_example(mask: str) -> None:
    """``xoxb-...-####``: documentation shows the token's shape and masks the rest; the same token
    without the mask, or with the mask after a space (two separate words), is a secret."""
    token = "xoxb-1234567890-1234567890123-" + RANDOM_RUN_27
    assert named(token) == [("slack-bot-token", 0)]
    assert named(token + "-" + mask) == []
    assert named(f"token: {token}-{mask} (redacted)") == []
    assert named(token + " " + mask) == [("slack-bot-token", 0)]


# --- a keyword ending inside the next camel-case word (_keyword_at_word_edge) ---------------------


def test_a_keyword_that_ends_inside_the_next_camel_case_word_is_not_the_keyword() -> None:
    """``sumOfIds``: ``sumo`` is not the Sumo Logic keyword there; ``sumoId``/``SUMO`` are."""
    value = "suZq8Lm3Xv9Rt2"
    assert named(f"sumOfIds = {value}") == []
    assert named(f"sumoId = {value}") == [("sumologic-access-id", 9)]
    assert named(f"SUMO = {value}") == [("sumologic-access-id", 7)]


@pytest.mark.parametrize("name", ["sumOauthIds", "sumOfIds", "sumOzoneIds"])
def test_a_keyword_ending_inside_a_camel_case_word_from_a_to_z_is_not_the_keyword(name: str) -> None:
    """``sumOauthIds``: the capital O starts the next camel-case word whatever lowercase letter follows
    it (``a`` and ``z`` included), so ``sumo`` there is not the Sumo Logic keyword; ``sumoAuth`` is."""
    value = "suZq8Lm3Xv9Rt2"
    assert named(f"{name} = {value}") == []
    assert named(f"sumoAuth = {value}") == [("sumologic-access-id", 11)]


# --- every trigger matching at one position is tried (RE2 reports one alternative) ----------------


LOB_LIVE_PUB = "live_pub_" + hashlib.sha256(b"lob").hexdigest()[:31]


def test_a_live_lob_publishable_key_is_named_by_its_rule() -> None:
    """A live Lob publishable key is named by its own rule, as the test one is, though gocardless' regex
    trigger ``live_[a-z0-9_=-]{4}`` matches at the same position."""
    assert named(f"k {LOB_LIVE_PUB}") == [("lob-pub-api-key", 2)]


def test_a_live_lob_secret_key_is_named_though_gocardless_trigger_matches_there_too() -> None:
    """``live_`` + hex matches gocardless' regex trigger and Lob's, and RE2 reports one alternative
    per position: the later trigger is tried too, so a live Lob secret key is named."""
    key = "live_" + "0123456789abcdef" * 2 + "012"
    assert named(f"lob_key = {key}") == [("lob-api-key", 10)]
    assert named(f"test key {key.replace('live_', 'test_')}") == [("lob-api-key", 9)]


# --- the differential: prefiltered against unfiltered (slowest, last) -----------------------------


@functools.cache
def _generated() -> list[str]:
    texts: list[str] = []
    for index in range(len(RULES)):
        if index in _SHORT_KEYWORD:
            continue
        texts.extend(text for text, _ in cases(index, 6))
    random.Random(9).shuffle(texts)
    return texts


def _chunks(texts: list[str], size: int = 40) -> list[bytes]:
    return ["\n\x00".join(texts[k : k + size]).encode() for k in range(0, len(texts), size)]


def _assert_same(buf: bytes) -> None:
    want, got = _comparable(reference(buf)), _comparable(prefiltered(buf))
    missed = [(r, buf[max(0, s - 30) : e][:120]) for r, s, e in sorted(want - got)]
    extra = [(r, buf[max(0, s - 30) : e][:120]) for r, s, e in sorted(got - want)]
    assert not missed and not extra, (missed[:3], extra[:3])


def test_generated_secrets_of_every_rule_are_reported_exactly_where_the_unfiltered_scan_puts_them() -> None:
    assert len(_generated()) > 5000
    for buf in _chunks(_generated()):
        _assert_same(buf)


def test_generated_secrets_in_upper_and_lower_case_still_match_the_unfiltered_scan() -> None:
    """Providers' names come in any case (``VERCEL_TOKEN``, ``vercel_token``): a literal trigger is
    matched case-insensitively, so a case-insensitive rule's secret is found whatever the case."""
    for variant in (str.upper, str.lower, str.swapcase):
        for buf in _chunks([variant(t) for t in _generated()[::3]]):
            _assert_same(buf)


@pytest.mark.skipif(not CORPUS.exists(), reason="shared corpus not present")
def test_the_gitleaks_corpus_matches_the_unfiltered_scan() -> None:
    texts = [it["text"] for it in json.loads(CORPUS.read_text(encoding="utf-8"))]
    for buf in _chunks(texts, 60):
        _assert_same(buf)


_PROSE = "Ask the admin. See the vault."


@pytest.mark.parametrize(
    ("template", "rule"),
    [
        ('variable "api_token" {{\n  default = "{v}"\n}}', "terraform-variable-default"),
        ('variable "db_password" {{ default = "{v}" }}', "terraform-variable-default"),
        ('<add key="ClearTextPassword" value="{v}" />', "nuget-config-password"),
        ('<add key="password" value="{v}" />', "nuget-config-password"),
    ],
)
def test_a_quoted_sentence_is_prose_and_a_quoted_token_is_a_secret(template: str, rule: str) -> None:
    assert named(template.format(v=_PROSE)) == []
    # The same place with a drawn value blocks, at the value: the rule does reach this text.
    secret = template.format(v="k7Qz9pLm2Xw4")
    assert named(secret) == [(rule, secret.index("k7Qz"))]


@pytest.mark.parametrize("tail", [",", "]", "}"])
@pytest.mark.parametrize("password", ["sunshine", "12345"])
def test_a_curl_password_is_judged_with_the_punctuation_glued_to_it(password: str, tail: str) -> None:
    # Without the glued character the password is a word / a short number: not judged a secret.
    plain = f"curl -u ci:{password} https://example.com/x"
    assert named(plain) == []
    glued = f"curl -u ci:{password}{tail} https://example.com/x"
    assert named(glued) == [("curl-auth-user", glued.index("ci:"))]


@pytest.mark.parametrize(
    ("text", "literal", "spans"),
    [
        ("\u00bdx", "2x", [(0, 3)]),  # ½ grows to 1⁄2: the span covers ½ and x, inside the 3 bytes
        ("a\u00bdxyz", "2xy", [(1, 5)]),
        ("\u00bd\u00bd", "2", [(0, 2), (2, 4)]),
        ("a\u338fb", "kg", [(1, 4)]),  # ㎏ shrinks to kg: the whole character
        ("x\ufb03x", "ff", [(1, 4)]),  # part of ﬃ: the whole character, never a zero-length span
    ],
)
def test_a_finding_in_normalised_text_is_located_on_whole_original_characters_inside_the_text(
    text: str, literal: str, spans: list[tuple[int, int]]
) -> None:
    from acx.core.scrub import _forbidden_pattern

    found = engine.scan_bytes(text.encode(), _forbidden_pattern([literal]))
    assert [(s, e) for _, s, e, _ in found] == spans
    for s, e in spans:
        assert 0 <= s < e <= len(text.encode())
        text.encode()[s:e].decode()  # whole characters: a cut one would not decode
