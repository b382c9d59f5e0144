"""Generic scrub rules (generic.py): a literal inside a command substitution is still judged, and
what a long random run costs the scan budget (one unit per 256 bytes, no more than 16 for one run),
pinned both on the rule itself and on the refusal it causes.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from acx.core.scrub import generic, scan_text

SHORT = "hQzkWpLs9x"  # 10 characters: a literal only the assignment rule can judge (no run, no provider)


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


# --- check_assignment: a command substitution is a command, but what it is given is a literal --------


@pytest.mark.parametrize(
    ("text", "inner"),
    [
        # the outer name ends with the same stem as the inner one (token / token, password / password)
        (f"API_TOKEN=`gh api --token={SHORT}`\n", "--token="),
        (f"DB_PASSWORD=`mysql --password={SHORT} -e status`\n", "--password="),
        (f"export GITHUB_TOKEN=`curl -s --token={SHORT} https://ci.internal`\n", "--token="),
        (f"client_secret = `fetch --client_secret={SHORT} now`\n", "--client_secret="),
    ],
)
def test_a_secret_given_to_a_command_in_backticks_blocks_at_its_value(text: str, inner: str) -> None:
    at = text.index(inner) + len(inner)
    assert ("secret-assignment", at) in _rules(text)


@pytest.mark.parametrize(
    "text",
    [
        "API_TOKEN=`vault read -field=token secret/ci`\n",
        "API_TOKEN=`cat token.txt`\n",
        "DB_PASSWORD=`aws ssm get-parameter --name db-password --query Parameter.Value`\n",
    ],
)
def test_a_command_substitution_that_reads_a_secret_from_a_store_passes(text: str) -> None:
    assert _rules(text) == []


# --- scan_runs: a run draws on the budget by its length, up to 16 units ----------------------------


@pytest.mark.parametrize(
    ("length", "units"),
    [(255, 0), (256, 1), (511, 1), (512, 2), (4095, 15), (4096, 16), (4097, 16), (8192, 16)],
)
def test_a_run_costs_one_budget_unit_per_256_bytes_up_to_16(length: int, units: int) -> None:
    budget = [1000]
    spans: list[generic.Span] = []
    generic.scan_runs(b"a" * length, spans, budget)  # one run, not random: only its length is charged
    assert (spans, 1000 - budget[0]) == ([], units)


def _random_runs(k: int, length: int) -> str:
    """``k`` distinct random runs of letters and digits, each ``length`` characters, one space apart."""
    out = []
    for i in range(k):
        run = b""
        j = 0
        while len(run) < length:
            digest = base64.b64encode(hashlib.sha256(f"{i}:{j}".encode()).digest())
            run += digest.replace(b"+", b"a").replace(b"/", b"b").rstrip(b"=")
            j += 1
        out.append(run[:length].decode())
    return " ".join(out)


def test_long_random_runs_are_refused_sooner_than_short_ones_would_be() -> None:
    """512-byte runs cost 2 units each for their length on top of their judgement: 100 are judged one
    by one, 120 exhaust the budget (512 + 1 per 256 bytes) and the buffer is refused, fail closed."""
    assert [r for r, _ in _rules(_random_runs(100, 512))] == ["high-entropy"] * 100
    assert _rules(_random_runs(120, 512)) == [("scan-budget", 0)]


# --- _descriptive_name: two or more words, none naming a credential ---------------------------------


@pytest.mark.parametrize(
    ("name", "descriptive"),
    [
        (b"aBc", True),
        (b"aB", False),  # under 3 characters
        (b"AbcDef", True),
        (b"ZetaRange", True),
        (b"alphaBeta", True),
        (b"zetaRange", True),
        (b"Z9rowCount", True),  # only the first character must be a letter
        (b"ZetaRange9", True),
        (b"z9rowCount", True),
        (b"zetaRange9", True),
        (b"@fooBar", False),  # the bytes around the letters are no letters
        (b"[fooBar", False),
        (b"`fooBar", False),
        (b"{fooBar", False),
        (b"1rowCount", False),
        (b"_rowCount", False),
        (b"rowcount", False),  # one word
        (b"rowCount", True),
        (b"row22count", True),  # a number between two words
        (b"row2", False),  # a number is no second word
        (b"rowToken", False),  # names a credential
    ],
)
def test_a_descriptive_name_is_two_words_none_naming_a_credential(name: bytes, descriptive: bool) -> None:
    assert generic._descriptive_name(name) is descriptive


# --- _not_secret_name: the value of a name that says it is no secret -------------------------------

_HIDDEN = b'name="authenticity" '
_RUN = b"k9Q2xW7mP4nR8tZ1aB3c"


def _hidden_input(gap: int) -> tuple[bytes, int]:
    """An anti-forgery hidden input whose ``name=`` starts ``20 + gap + 7`` bytes before its value."""
    buf = _HIDDEN + b" " * gap + b'value="' + _RUN
    return buf, len(_HIDDEN) + gap + 7


@pytest.mark.parametrize(
    ("name", "not_secret"),
    [(b"publicKey", True), (b"issuerKeyHash", True), (b"csrf_token", True), (b"db_password", False)],
)
def test_a_name_that_says_public_or_hash_is_no_secret(name: bytes, not_secret: bool) -> None:
    assert generic._not_secret_name(b"", 0, name) is not_secret


def test_a_hidden_input_is_read_up_to_100_bytes_before_its_value() -> None:
    near, at = _hidden_input(73)
    assert at == 100 and generic._not_secret_name(near, at, b"value") is True  # name= at offset 0
    far, at = _hidden_input(74)
    assert at == 101 and generic._not_secret_name(far, at, b"value") is False
    buf, at = _hidden_input(0)
    assert generic._not_secret_name(buf, at, b"value") is True
    assert generic._not_secret_name(buf, at, b"api_token") is False  # only a ``value`` attribute
    assert generic._not_secret_name(b'value="' + _RUN, 7, b"value") is False  # no hidden input


# --- _in_url: a run inside a URL's path ----------------------------------------------------------------


def test_a_run_is_in_a_url_up_to_200_bytes_after_its_scheme() -> None:
    for gap, inside in ((200, True), (201, False)):
        buf = b"see https://cdn.example/" + b"a" * (gap - len("://cdn.example/")) + b"Z"
        pos = len(buf) - 1
        assert (pos - buf.find(b"://"), generic._in_url(buf, pos)) == (gap, inside)


@pytest.mark.parametrize(
    ("buf", "pos", "inside"),
    [
        (b"://cdn.example/files/" + _RUN, 21, True),  # a '://' at the very start
        (b"https://x.io/files/" + _RUN, 19, True),
        (b"no url here " + _RUN, 12, False),
        (b"https://x.io/a b/" + _RUN, 17, False),  # a space ends the URL
        (b"https://user@x.io/" + _RUN, 18, False),  # userinfo: the URI rule's job
    ],
)
def test_a_run_is_in_a_url_only_without_a_break_after_the_scheme(buf: bytes, pos: int, inside: bool) -> None:
    assert generic._in_url(buf, pos) is inside


# --- scan_assignments: every keyword match draws one unit; the search resumes where the read stopped --


def test_each_keyword_match_costs_one_unit_of_the_stated_budget() -> None:
    """``pass:`` followed by no value, k times: k matches, each costing one unit of the engine's budget
    (512 + len // 256, its docstring). At k equal to the budget the scan finishes, one more is refused."""
    for k, refused in ((524, False), (525, True)):
        text = "pass: " * k
        assert 512 + len(text) // 256 == 524
        assert (_rules(text) == [("scan-budget", 0)]) is refused


def test_a_keyword_right_where_the_last_read_stopped_is_still_judged() -> None:
    # the element is never closed, so ``<token>`` reads no value and stops at its '>'; the next
    # ``token=`` starts exactly there and is its own assignment
    assert _rules("<token>token=hQzkWpLs93x\n") == [("secret-assignment", 13)]


# --- _public_ranges: a public block without its END line is public to the end of the buffer ----------


def test_a_public_key_block_without_its_end_line_is_public_to_the_end() -> None:
    run = base64.b64encode(hashlib.sha256(b"x").digest()).decode()
    assert _rules(run) == [("high-entropy", 0)]
    assert _rules(f"-----BEGIN PUBLIC KEY-----\n{run}\n") == []
    closed = f"-----BEGIN PUBLIC KEY-----\n{run}\n-----END PUBLIC KEY-----\n"
    assert _rules(closed + run + "\n") == [("high-entropy", len(closed))]


def test_a_sops_value_is_closed_only_by_a_bracket_within_64_kib() -> None:
    """The ``]`` that ends a SOPS ciphertext is looked for in the 65,536 bytes from ``ENC[``; one
    further away does not close it, and the ciphertext is then public to the end of the buffer."""
    run = base64.b64encode(hashlib.sha256(b"x").digest()).decode()
    head = "ENC[AES256_GCM,data:"
    for gap, findings in ((65535, [("high-entropy", 65537)]), (65536, [])):
        text = head + "A" * (gap - len(head)) + "] " + run
        assert text.index("]") == gap
        assert _rules(text) == findings


# --- _random_piece: a one-case random piece of 20 characters or more, glued with - _ . / + = ---------


@pytest.mark.parametrize(
    ("template", "at"),
    [("{}-21txuqo", 0), ("deploy-{}-prod", 0), ("run {}-ab today", 4), ("ref: {}_qa", 5)],
)
def test_a_glued_random_lower_piece_blocks_from_twenty_characters(template: str, at: int) -> None:
    """``looks_random_lower``'s floor is 20 characters, and a piece of a glued run is judged from that
    length on: 20 blocks the run where it starts, 19 does not."""
    piece = "s6xul08pmeofq0o5qczw"
    assert len(piece) == 20
    assert _rules(template.format(piece)) == [("high-entropy", at)]
    assert _rules(template.format(piece[:19])) == []
