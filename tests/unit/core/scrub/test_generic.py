"""Provider-free rules (acx.core.scrub.generic): secret assignments (a name, then a literal: in log
lines, XML, properties, table rows, shell defaults, command substitutions), random runs (AWS context,
excerpts, descriptive names, hidden inputs, URLs, public blocks, base64 of text), URI credentials,
home paths, and what each of them costs the scan budget. Each section names the behaviour it pins and
the function that carries it.

Planted values are fake, built at run time.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core import scrub
from acx.core.scrub import generic, scan_text
from tests.unit.core.scrub.conftest import RANDOM_RUN_27, named

H32 = "3f2a9c8d7e6b5a4f3e2d1c0b9a8f7e6d"
PW = "Zq8#Lm3$pw!x"  # a person's password: cases, digits, symbols
TOKEN = "Zq8Lm3Xv9Rt2Wp7Ny4Kb"


def _blocked_at(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text) if f.severity == "block"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (f"2024-05-01 12:00:01 INFO Using DD_API_KEY={H32}", H32),
        (f"[boot] Using KEY={H32}", H32),
        (f"Using API_KEY={TOKEN}", TOKEN),
        (f"DEBUG env TWILIO_AUTH_TOKEN={H32} region=us1", H32),
    ],
)
def test_keys_in_log_lines_block(text: str, value: str) -> None:
    assert [offset for _rule, offset in _blocked_at(text)] == [text.index(value)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("password=P@ss;w0rd!9", "P@ss;w0rd!9"),  # a ';' inside an unquoted value
        (f"DB_PASS={PW}", PW),
        (f"secret: {PW}", PW),  # a bare name with a password-shaped value
        (f"secret: '{PW}'", PW),
        (f"token: @{TOKEN}", f"@{TOKEN}"),
        (f"the password is {PW}", PW),
        ("client_secret = &Zq8Lm3Xv9Rt2!", "&Zq8Lm3Xv9Rt2!"),
        ("PASSWORD=%Zq8Lm3Xv9#", "%Zq8Lm3Xv9#"),
        (f"spring.datasource.password: {PW}", PW),
    ],
)
def test_values_with_symbols_after_a_credential_name_block(text: str, value: str) -> None:
    assert text.index(value) in [offset for _rule, offset in _blocked_at(text)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("db_password=Zq8Lm3x9;db_user=admin", "Zq8Lm3x9"),  # the list goes on: the value ends there
        ("PASSWORD=Zq8Lm3x9Q,", "Zq8Lm3x9Q"),
    ],
)
def test_an_unquoted_value_ends_before_the_next_pair(text: str, value: str) -> None:
    found = [f for f in scan_text(text) if f.severity == "block"]
    assert {f.offset for f in found} == {text.index(value)}


@pytest.mark.parametrize(
    "text",
    [
        f'<add key="ApiKey" value="{TOKEN}" />',  # .NET appSettings
        f'<add key="Password" value="{PW}" />',
        f'<entry key="db.password">{PW}</entry>',  # Java properties as XML
        f"<server><id>nexus</id><username>deploy</username><password>{PW}</password></server>",
        f'<property name="password" value="{PW}"/>',  # Spring beans
        f"<Credential><Secret>{PW}</Secret></Credential>",
        f'<string name="api_key">{TOKEN}</string>',  # Android resources
        f'<parameter name="secretKey">{TOKEN}</parameter>',
        f'<setting name="Password" serializeAs="String"><value>{PW}</value></setting>',  # .NET settings
        f"jdbc.password = {PW}",  # properties
        f"spring.datasource.password={PW}",
    ],
)
def test_credential_stores_written_as_xml_or_properties_block(text: str) -> None:
    assert _blocked_at(text), text


@pytest.mark.parametrize(
    "text",
    [
        '<add key="Environment" value="Production" />',
        '<entry key="db.password">${DB_PASSWORD}</entry>',
        '<string name="api_key_hint">Enter your key</string>',
        '<property name="password" value="{{ vault_password }}"/>',
        '<input type="password" name="password" value="" />',
        '<meta name="csrf-token" content="Zq8Lm3Xv9Rt2Wp7Ny4Kb">',
        "the key difference is speed; the token bucket refills",
        "key: Ctrl+Shift+P opens the palette",
    ],
)
def test_ordinary_xml_and_prose_pass(text: str) -> None:
    assert not _blocked_at(text), text


@pytest.mark.parametrize(
    "text",
    [
        f"commit: {H32}abcd1234",
        f'"gitHead": "{H32}abcd1234"',
        f'"shasum": "{H32}abcd1234"',
        f"checksum = {H32}",
        f"etag: {H32}",
        f"request_id={H32}",
        f"fp: {H32.upper()}",
        f'{{"before": "{H32}abcd1234", "after": "{H32}1234abcd"}}',  # a push event's revisions
        f"blob {H32}abcd1234 and blob: {H32}abcd1234",
        f"keyid is ed25519:{H32}{H32}",
        f"merged {H32}abcd1234 into main",
    ],
)
def test_hex_that_names_a_digest_or_revision_passes(text: str) -> None:
    assert not _blocked_at(text), text


@pytest.mark.parametrize(
    "text", [f'const k = "{H32}abcd1234"', f"k: {H32}", f'{{"signingKey": "{H32}"}}', f"hmac_key={H32}"]
)
def test_hex_assigned_to_a_name_blocks(text: str) -> None:
    assert _blocked_at(text), text


# --- a command substitution is a command, but what it is given is a literal (check_assignment) ----


SHORT = "hQzkWpLs9x"  # 10 characters: a literal only the assignment rule can judge (no run, no provider)


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
    assert ("secret-assignment", at) in named(text)


@pytest.mark.parametrize(
    "text",
    [
        "API_TOKEN=`vault read -field=token secret/ci`\n",
        "API_TOKEN=`cat token.txt`\n",
        "DB_PASSWORD=`aws ssm get-parameter --name db-password --query Parameter.Value`\n",
    ],
)
def test_a_command_substitution_that_reads_a_secret_from_a_store_passes(text: str) -> None:
    assert named(text) == []


@pytest.mark.parametrize(
    "command",
    ["cat /run/secrets/db_token", "gpg --decrypt key.gpg", "pass show db/prod", "vault read -f x/y"],
)
def test_a_backticked_command_is_a_command_substitution_not_a_literal(command: str) -> None:
    """``token = `cat /run/secrets/db_token``` runs a command: the secret is not in the text."""
    assert named(f"token = `{command}`\n") == []


# --- a quoted literal keeps its closing punctuation (check_assignment) ----------------------------


@pytest.mark.parametrize("quote", ['"', "'", "`"])
@pytest.mark.parametrize("word", ["dragon}", "letmein>", "sunshine)"])
def test_a_quoted_password_keeps_its_closing_punctuation(quote: str, word: str) -> None:
    """Inside double quotes, single quotes or backticks the value is a literal, closing bracket and
    all: ``password = `dragon}``` is a password with a symbol, named at the value's first byte."""
    assert named(f"password = {quote}{word}{quote}\n") == [("secret-assignment", 12)]


@pytest.mark.parametrize("word", ["dragon}", "letmein>"])
def test_an_unquoted_word_before_a_closing_bracket_is_code_not_a_password(word: str) -> None:
    """Unquoted, the bracket closes the code around it (``{password = dragon}``): what is left is a
    word, not a literal secret."""
    assert named(f"password = {word}\n") == []


# --- an XML element <name>value</name> (check_assignment) -----------------------------------------


VALUE = "Zq8Lm3Xv9Rt2Wp7Ny4K"  # 19 characters: below the 20 of a random run, judged only by its name


@pytest.mark.parametrize("name", ["password", "db_password", "client_secret", "apiKey"])
@pytest.mark.parametrize("lead", ["", "x", "<root>\n  "])
def test_an_xml_element_holding_a_secret_blocks_at_its_value(name: str, lead: str) -> None:
    """``<password>...</password>``: the element's text is the value, found at its first byte."""
    text = f"{lead}<{name}>{VALUE}</{name}>\n"
    assert named(text) == [("secret-assignment", len(lead) + len(name) + 2)]


@pytest.mark.parametrize(
    "text",
    [
        f"password>{VALUE}</password>",  # no ``<`` before the name: a comparison, not an element
        f"password>{VALUE}</password> <",  # ... even when the text ends in ``<`` (no wrap-around)
        f"<password>{VALUE}",  # no closing tag
        f"<password>{VALUE}</passwd>",  # another element closes
        f"x password>{VALUE}</password>",  # a space before the name, not ``<``
        f"=password>{VALUE}</password>",
        f";password>{VALUE}</password>",
    ],
)
def test_a_greater_than_sign_is_no_element_without_its_open_and_closing_tags(text: str) -> None:
    assert named(text) == []


@pytest.mark.parametrize(
    ("closing_at", "found"), [(598, True), (599, True), (600, True), (601, False), (640, False)]
)
def test_the_closing_tag_must_start_within_600_bytes_of_the_opening_one(closing_at: int, found: bool) -> None:
    """The closing ``</name`` is looked for in the 600 bytes after the opening tag's ``>``."""
    head = f"<password>{VALUE}"
    text = head + " " * (closing_at - len(head)) + "</password>"
    assert text.index("</password>") == closing_at
    assert named(text) == ([("secret-assignment", 10)] if found else [])


@pytest.mark.parametrize(("prefix", "found"), [(62, True), (63, True), (64, True), (65, False), (70, False)])
def test_an_element_name_is_read_up_to_64_bytes_before_its_secret_word(prefix: int, found: bool) -> None:
    """The name is the run of name characters at most 64 bytes back from the stem; a longer one is
    cut there, so its ``<`` is not where the element's name starts and it is not an element."""
    name = "x" * prefix + "password"
    text = f"<{name}>{VALUE}</{name}>"
    assert named(text) == ([("secret-assignment", len(name) + 2)] if found else [])


# --- a table row | NAME | value | (check_assignment) ----------------------------------------------


@pytest.mark.parametrize(
    ("pad", "found"), [(0, True), (1, True), (6, True), (7, True), (8, False), (12, False)]
)
def test_a_table_row_needs_its_bar_within_8_bytes_before_the_name(pad: int, found: bool) -> None:
    text = "|" + " " * pad + f"DB_PASSWORD | {VALUE} |"
    assert named(text) == ([("secret-assignment", text.index(VALUE))] if found else [])


@pytest.mark.parametrize("lead", ["| ", "|`", "text\n| ", "| a | b |\n|---|---|\n| "])
def test_a_table_cell_naming_a_secret_blocks_its_neighbour_cell(lead: str) -> None:
    text = f"{lead}DB_PASSWORD | {VALUE} |\n"
    assert named(text) == [("secret-assignment", text.index(VALUE))]


@pytest.mark.parametrize(
    "text", [f"echo $DB_PASSWORD | {VALUE}", f"DB_PASSWORD | {VALUE}", f"x DB_PASSWORD | {VALUE} |"]
)
def test_a_pipe_without_a_table_bar_before_the_name_is_no_assignment(text: str) -> None:
    assert named(text) == []


# --- the name before a value (check_assignment) ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key = {VALUE}", [("secret-assignment", 6)]),
        (f"akey = {VALUE}", []),  # ``akey`` is one word, not the bare name ``key``
        (f"monkey = {VALUE}", []),
        (f"x akey = {VALUE}", []),
        (f"token = {VALUE}", [("secret-assignment", 8)]),
        (f"atoken = {VALUE}", [("secret-assignment", 9)]),  # ... but a word ending in token names one
    ],
)
def test_a_name_glued_to_its_stem_at_the_start_of_a_text_is_read_whole(text: str, expected: list) -> None:
    assert named(text) == expected


@pytest.mark.parametrize("name", ["monkey", "turkey", "hotkey", "donkey"])
def test_a_name_that_only_ends_in_key_is_no_secret_name(name: str) -> None:
    """``monkey = "..."`` ends in ``key`` but names no key: its value is not an assignment finding."""
    assert named(f'{name} = "Zq8Lm3Xv9Rt2Wp7"\n') == []
    assert named('api_key = "Zq8Lm3Xv9Rt2Wp7"\n') == [("secret-assignment", 11)]


AWS_SECRET = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9"  # 40 characters of mixed-case base64


@pytest.mark.parametrize(("filler", "rule"), [(55, "aws-secret-access-key"), (56, "aws-secret-access-key")])
def test_aws_at_the_start_of_a_64_byte_name_names_an_aws_secret(filler: int, rule: str) -> None:
    """A name is read 64 bytes back from its ``key``: ``aws`` inside them makes a 40-character value
    an AWS secret access key."""
    text = f'aws{"x" * filler}_api_key = "{AWS_SECRET}"\n'
    assert named(text) == [(rule, text.index(AWS_SECRET))]


def test_aws_further_back_than_64_bytes_from_the_key_is_not_part_of_its_name() -> None:
    """One byte further, ``aws`` is outside the name: the value is a generic assignment (and random)."""
    text = f'aws{"x" * 57}_api_key = "{AWS_SECRET}"\n'
    start = text.index(AWS_SECRET)
    assert named(text) == [("high-entropy", start), ("secret-assignment", start)]


# --- after a candidate, the next one of the same word is judged (check_assignment) ----------------


SECOND = "Pq7Ny4Kb9Qa5Hc0d2Lm"


@pytest.mark.parametrize(
    "first",
    [
        "echo $DB_PASSWORD | base64",  # a shell pipe, not a table row
        "password>x",  # a comparison, not an element
        "public_pass: Zq8Lm3Xv9Rt2",  # a name that says it is no credential
        "password:\n  enabled",  # a name with its value on the next line
        "the password is ready",  # prose whose value is a word
        "password = `openssl rand -hex 16`",  # a command substitution
        'password = "changeme"',  # a stand-in
        f'smtp_pass: "{VALUE}"',  # a secret (found too)
    ],
)
def test_after_any_candidate_the_next_assignment_of_the_same_word_is_judged(first: str) -> None:
    """Each way a ``password`` candidate ends (rejected at any check, or found) hands the scan back
    the place to go on from: the real assignment after it is still judged and blocks at its value."""
    text = f'{first}\nsmtp_pass: "{SECOND}"\n'
    found = named(text)
    assert found[-1] == ("secret-assignment", text.index(SECOND))
    assert found[:-1] == ([("secret-assignment", text.index(VALUE))] if VALUE in first else [])


def test_an_assignment_after_a_value_holding_the_same_word_is_still_found() -> None:
    """``api_key = "...key..."`` then ``secret_key = "..."``: the ``key`` inside the first value is
    skipped (it was read as that value), and the next ``key`` assignment is judged on its own."""
    text = 'api_key = "Xk9vkey7Lm3Qz8Rt2Wp"\nsecret_key = "Pq7Ny4Kb9Qa5Hc0d2Lm"\n'
    assert named(text) == [("secret-assignment", 11), ("secret-assignment", 46)]


@pytest.mark.parametrize("name", ["password", "client_secret", "api_key"])
def test_a_value_is_read_once_even_when_it_repeats_its_own_name(name: str) -> None:
    """``password = "Qx7!password: ..."``: the whole quoted value is the secret, one finding at its
    first byte; the name repeated inside it is part of what was read, not a second assignment."""
    text = f'{name} = "Qx7!{name}: Zq8Lm3Xv9Rt2Wp7"\n'
    assert named(text) == [("secret-assignment", len(name) + 4)]


def test_a_shell_pipe_after_a_token_variable_is_no_assignment_and_the_next_one_is_judged() -> None:
    """``echo $GITHUB_TOKEN | base64`` pipes a variable (no literal), and the ``auth_token = "..."``
    on the next line is still read and blocks at its value."""
    text = 'echo $GITHUB_TOKEN | base64\nauth_token = "Zq8Lm3Xv9Rt2Wp7Ny4K"\n'
    assert named(text) == [("secret-assignment", 42)]


def test_a_keyword_right_where_the_last_read_stopped_is_still_judged() -> None:
    # the element is never closed, so ``<token>`` reads no value and stops at its '>'; the next
    # ``token=`` starts exactly there and is its own assignment
    assert named("<token>token=hQzkWpLs93x\n") == [("secret-assignment", 13)]


keyword_texts = st.lists(
    st.sampled_from(
        [
            "pass",
            "PassWord",
            "wd",
            "phrase",
            "pwd",
            "secret",
            "token",
            "key",
            "auth",
            "cred",
            "creds",
            "entials",
            "db_",
            "api",
            "_",
            "'",
            '"',
            " ",
            "\t",
            ":",
            "=",
            "Zx9!kq2Lm",
            "hunter2",
            "x1",
            "\n",
        ]
    ),
    max_size=25,
).map(lambda parts: "".join(parts).encode())


@settings(max_examples=500, deadline=None)
@given(keyword_texts)
def test_keyword_pass_still_sees_a_planted_assignment_after_any_prefix(buf: bytes) -> None:
    """Skipping past what was read never skips a later assignment: one planted at the end is found."""
    text = buf + b"\n db_password=Zx9!kq2Lm"
    spans: list[tuple[str, int, int, str]] = []
    generic.scan_assignments(text, text.lower(), spans, [10**6])
    assert ("secret-assignment", len(text) - 9, len(text), "block") in spans
    for _rule, s, e, _sev in spans:
        assert 0 <= s < e <= len(text)


# --- a value on the next line (check_assignment) --------------------------------------------------


@pytest.mark.parametrize(
    "text", [f"password:\n  {VALUE}\n", f"api_key =\n{VALUE}\n", f"secret:\r\n    {VALUE}\n"]
)
def test_a_name_ending_its_line_is_not_given_the_next_line_as_its_value(text: str) -> None:
    """``password:`` then a new line: the next line is not its value (YAML's nested mapping, a
    heading); only an element or a ``value:`` key carries its value across the line break."""
    assert named(text) == []


@pytest.mark.parametrize(
    "text",
    [
        f"<password>\n  {VALUE}\n</password>\n",
        f"- name: DB_PASSWORD\n  value: {VALUE}\n",
        f"- name: DB_PASSWORD\n  value:\n    {VALUE}\n",
    ],
)
def test_an_element_or_a_value_key_carries_its_value_across_the_line_break(text: str) -> None:
    assert named(text) == [("secret-assignment", text.index(VALUE))]


# --- weak contexts, prose and bare names, need a drawn value (check_assignment) -------------------


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ('export TOKEN="the token is m8bgnrkuokcoyqqnqyccj51t"\n', 27),
        ('token = "my token is m8bgnrkuokcoyqqnqyccj51t"\n', 21),
        ('auth: "auth is m8bgnrkuokcoyqqnqyccj51t"\n', 15),
        ('key: "key = m8bgnrkuokcoyqqnqyccj51t"\n', 12),
    ],
)
def test_a_sentence_given_to_a_bare_name_is_searched_for_its_own_assignment(text: str, offset: int) -> None:
    """A bare ``TOKEN=`` given a sentence is no literal, but the sentence says ``the token is X``:
    that is judged as it would be standing alone (it blocks at X): the ``token`` inside the sentence
    is searched too."""
    assert named(text) == [("secret-assignment", offset)]
    assert named(text.replace("m8bgnrkuokcoyqqnqyccj51t", "dragon")) == []


@pytest.mark.parametrize("value", ["token1token2", "kq7kq7mz8mz8", "kkqq77zzmm88"])
def test_prose_or_a_bare_key_discloses_only_a_value_random_enough_to_be_drawn(value: str) -> None:
    """``the token is X`` and ``KEY=X`` are weak contexts: X counts when it is drawn (3+ bits a
    character), not a repeated or word-made value of 2.6 bits a character."""
    assert named(f"the token is {value}") == []
    assert named(f"KEY={value}") == []
    drawn = "m8bgnrkuokcoyqqnqyccj51t"
    assert named(f"the token is {drawn}") == [("secret-assignment", 13)]
    assert named(f"KEY={drawn}") == [("secret-assignment", 4)]


# --- a shell or compose default is a literal (check_assignment) -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"POSTGRES_PASSWORD: ${{POSTGRES_PASSWORD:-{VALUE}}}\n",  # docker-compose
        f'DB_PASSWORD="${{DB_PASSWORD:-{VALUE}}}"\n',  # a shell script
        f"export API_KEY=${{API_KEY={VALUE}}}\n",
        f"client_secret = '${{CLIENT_SECRET:-{VALUE}}}'\n",
        'export PGPASSWORD="${PGPASSWORD:-hunter2}"\n',
    ],
)
def test_a_secret_given_as_the_default_of_a_parameter_expansion_blocks_at_the_default(text: str) -> None:
    """``${DB_PASSWORD:-s3cret}``: the expansion is template syntax, but its default is a literal
    shipped with the file and used whenever the variable is unset, so it is judged as a value."""
    default = VALUE if VALUE in text else "hunter2"
    assert named(text) == [("secret-assignment", text.index(default))]


@pytest.mark.parametrize(
    "text",
    [
        "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}\n",
        "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-}\n",
        "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-changeme}\n",
        "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}\n",
        "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-$FALLBACK_PASSWORD}\n",
        'DB_PASSWORD="${DB_PASSWORD:-${VAULT_DB_PASSWORD}}"\n',
    ],
)
def test_a_parameter_expansion_without_a_literal_default_is_still_template_syntax(text: str) -> None:
    assert named(text) == []


# --- what judging costs the scan budget -----------------------------------------------------------


WORDS = " ".join(["word"] * 200)


def _first_refused(length: int) -> int:
    """The fewest ``password = "<length bytes of words>"`` lines the scan budget refuses."""
    value = WORDS[:length]
    lo, hi = 1, 400
    while lo < hi:
        mid = (lo + hi) // 2
        if named(f'password = "{value}"\n' * mid) == [("scan-budget", 0)]:
            hi = mid
        else:
            lo = mid + 1
    return lo


def test_a_value_costs_one_budget_unit_per_whole_64_bytes() -> None:
    """503- and 504-byte values cost the same (7 units each: 504 // 64 == 7), a 512-byte one costs one
    more (8) than a 511-byte one: a buffer holds as many of the first two, fewer of the last."""
    assert _first_refused(504) == _first_refused(503)
    assert _first_refused(512) < _first_refused(511)


PROSE = " ".join(["word"] * 100)[:500]


def test_long_values_draw_on_the_scan_budget_by_their_length() -> None:
    """Each assigned value costs one unit per 64 bytes judged: 50 assignments of 500-byte prose are
    honest text, 100 of them exceed the buffer's budget and the buffer is refused (fail closed)."""
    assert named("".join(f'password = "{PROSE}"\n' for _ in range(50))) == []
    assert named("".join(f'password = "{PROSE}"\n' for _ in range(100))) == [("scan-budget", 0)]


def test_each_keyword_match_costs_one_unit_of_the_stated_budget() -> None:
    """``pass:`` followed by no value, k times: k matches, each costing one unit of the engine's budget
    (512 + len // 256, its docstring). At k equal to the budget the scan finishes, one more is refused."""
    for k, refused in ((524, False), (525, True)):
        text = "pass: " * k
        assert 512 + len(text) // 256 == 524
        assert (named(text) == [("scan-budget", 0)]) is refused


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
    assert [r for r, _ in named(_random_runs(100, 512))] == ["high-entropy"] * 100
    assert named(_random_runs(120, 512)) == [("scan-budget", 0)]


def test_each_random_run_judged_costs_4_budget_units() -> None:
    """Every random-looking run costs 4 units (its placeholder and base64-text judgements) of the
    buffer's 512 + n // 256: 125 of them (500 units, budget 528) are scanned and each blocks, 140
    (560 units, budget 530) are refused as a whole, fail closed."""
    assert len(named(_random_runs(125, 32))) == 125
    assert named(_random_runs(140, 32)) == [("scan-budget", 0)]


def _notes_with_random_runs(count: int, seed: int = 5) -> str:
    import random

    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    runs = ["".join(rng.choice(alphabet) for _ in range(24)) for _ in range(count)]
    return "".join(f"note {i:04d} about the build: {x}\n" for i, x in enumerate(runs))


def test_a_buffer_dense_with_random_runs_is_refused_by_the_budget_not_judged_run_by_run() -> None:
    """Each random run costs the shared budget (``512 + len // 256``); 200 of them in 10 kB spend it
    and the buffer is refused whole (fail closed, one finding); 60 in 3 kB are each reported."""
    dense = scan_text(_notes_with_random_runs(200))
    assert [(f.rule, f.offset) for f in dense] == [("scan-budget", 0)]
    sparse = scan_text(_notes_with_random_runs(60))
    assert len(sparse) == 60 and {f.rule for f in sparse} == {"high-entropy"}


def test_each_at_sign_costs_one_unit_of_the_budget() -> None:
    """400 ``a@b`` addresses in 1,600 bytes are within the budget (512 + n // 256); 600 are not."""
    assert named("a@b " * 400) == []
    assert named("a@b " * 600) == [("scan-budget", 0)]


def test_the_at_sign_that_spends_the_budget_is_not_judged() -> None:
    """``a@b`` addresses then a URI with credentials: while the budget lasts the credentials block;
    from the first buffer it does not cover, the refusal is the whole report (the ``@`` that spent the
    budget is not judged on credit)."""
    cred = "x://u:Zq8Lm3pw@h"
    first = next(k for k in range(300, 800) if ("scan-budget", 0) in named("a@b " * k + cred))
    assert named("a@b " * (first - 1) + cred) == [("uri-credentials", 4 * (first - 1) + 6)]
    assert named("a@b " * first + cred) == [("scan-budget", 0)]


def test_long_runs_are_allowed_up_to_512_plus_one_per_40_bytes() -> None:
    """A word run of 20 characters and a space, 1,077 times (22,617 bytes: 512 + 565 runs allowed), is
    judged and passes; 1,078 of them (22,638 bytes, 512 + 565 allowed) are refused as ``scan-budget``."""
    tok = "configurationmanager "
    assert 512 + len(tok * 1077) // 40 == 1077
    assert named(tok * 1077) == []
    assert 512 + len(tok * 1078) // 40 == 1077
    assert named(tok * 1078) == [("scan-budget", 0)]


# --- random runs: AWS context, excerpts, the 4096-byte cap (_check_run) ---------------------------


RANDOM_RUN_28 = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d"


@pytest.mark.parametrize(
    ("gap", "rule"), [(55, "aws-secret-access-key"), (57, "aws-secret-access-key"), (58, "high-entropy")]
)
def test_aws_words_count_within_64_bytes_before_a_40_character_run(gap: int, rule: str) -> None:
    """``aws`` ending its line 64 bytes before the run makes a 40-character base64 run an AWS secret
    key; one byte further it is only a random run (``aws`` at the very start of the text counts)."""
    text = "aws" + " " * gap + "x = " + AWS_SECRET
    assert named(text) == [(rule, text.index(AWS_SECRET))]


def test_a_name_that_says_fingerprint_excuses_even_a_run_after_aws_words() -> None:
    """``AWS KMS key fingerprint: ...``: the name says what the value is (a hash of a public key)."""
    assert named(f"AWS KMS key fingerprint: {AWS_SECRET}") == []


@pytest.mark.parametrize("name", ["rotationSchedule", "backupWindowList", "eu-west-1"])
def test_a_descriptive_name_does_not_excuse_a_40_character_run_after_aws_words(name: str) -> None:
    """A descriptive name excuses a random run (``rookTable = ...``), but not the AWS secret key
    shape in AWS context: that check comes first."""
    text = f"AWS backup {name} = {AWS_SECRET}"
    assert named(text) == [("aws-secret-access-key", text.index(AWS_SECRET))]


def test_an_aws_secret_key_in_context_is_named_as_one_without_an_assignment() -> None:
    """40 base64 characters after ``aws``/``secret access`` within 64 bytes before it: the AWS rule,
    not the generic entropy one (an operator needs the precise rule to know what to rotate)."""
    key = "wJalrXUtnFEMIK7MDENGbPxRfiCYq3t8s9d2k4v6"
    assert len(key) == 40
    assert named(f"aws secret {key}") == [("aws-secret-access-key", 11)]
    assert named(f"AWS {key}") == [("aws-secret-access-key", 4)]
    assert named(key) == [("high-entropy", 0)]  # no context: still blocked, by the generic rule
    far = "aws " + "and then a long unrelated sentence of plain words, " * 2
    assert named(far + key) == [("high-entropy", len(far))]


@pytest.mark.parametrize(
    ("text", "excerpt"),
    [
        (f"{RANDOM_RUN_28}...", True),
        (f"{RANDOM_RUN_28}\u2026", True),
        (f"...{RANDOM_RUN_28}", True),
        (f"see \u2026{RANDOM_RUN_28} here", True),
        (f"{RANDOM_RUN_28}... more", True),
        (f"{RANDOM_RUN_28}....", True),
        (f"{RANDOM_RUN_28}..", False),
        (f"{RANDOM_RUN_28}.", False),
        (f"{RANDOM_RUN_28}. ...", False),
        (f"..{RANDOM_RUN_28}", False),
    ],
)
def test_a_random_run_cut_short_by_an_ellipsis_is_an_excerpt(text: str, excerpt: bool) -> None:
    """``ops_eyJzaWdu...``: three dots (or ``…``) right after or right before the run mark an excerpt
    shown for reference; two dots, or dots further away, do not."""
    assert named(text) == ([] if excerpt else [("high-entropy", text.index(RANDOM_RUN_28))])


RANDOM_RUN_32 = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Qa5Hc"  # a random run with no word, sequence or pattern in it


@pytest.mark.parametrize("ellipsis", ["...", "\u2026"])
def test_a_random_run_after_an_ellipsis_is_an_excerpt(ellipsis: str) -> None:
    """``...6wqX6fNU``: a value shown cut short (three dots or the one-character ellipsis before it) is
    a reference excerpt; the same run without it is blocked as high entropy."""
    assert named(f"excerpt: {RANDOM_RUN_32} end") == [("high-entropy", 9)]
    assert named(f"excerpt: {ellipsis}{RANDOM_RUN_32} end") == []
    assert named(f"excerpt: {ellipsis} {RANDOM_RUN_32} end") == [
        ("high-entropy", 10 + len(ellipsis.encode()))
    ]


def _long_run(n: int) -> str:
    return base64.b64encode(hashlib.shake_256(b"run").digest(3 * (n // 4 + 1))).decode()[:n]


@pytest.mark.parametrize(("n", "excerpt"), [(4095, True), (4096, True), (4097, False), (4200, False)])
def test_only_the_first_4096_bytes_of_a_run_are_judged(n: int, excerpt: bool) -> None:
    """A run is judged by its first 4096 bytes: an ellipsis right after them marks an excerpt; after
    a longer run it is not right after what was judged, and the run still blocks (fail closed)."""
    text = _long_run(n) + "..."
    assert named(text) == ([] if excerpt else [("high-entropy", 0)])
    assert named(_long_run(n)) == [("high-entropy", 0)]


@pytest.mark.parametrize(
    ("template", "at"),
    [("{}-21txuqo", 0), ("deploy-{}-prod", 0), ("run {}-ab today", 4), ("ref: {}_qa", 5)],
)
def test_a_glued_random_lower_piece_blocks_from_twenty_characters(template: str, at: int) -> None:
    """``looks_random_lower``'s floor is 20 characters, and a piece of a glued run is judged from that
    length on: 20 blocks the run where it starts, 19 does not."""
    piece = "s6xul08pmeofq0o5qczw"
    assert len(piece) == 20
    assert named(template.format(piece)) == [("high-entropy", at)]
    assert named(template.format(piece[:19])) == []


# --- a name that says what its value is (_descriptive_name, _not_secret_name) ---------------------


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


@pytest.mark.parametrize(
    "name", ["averageLength", "zoneOffsetList", "AverageLength", "ZoneOffsetList", "wrongLength"]
)
def test_a_descriptive_name_starting_with_any_letter_excuses_a_random_run(name: str) -> None:
    """``averageLength = ...``: two words, none naming a credential, from the first letter of the
    alphabet to the last, in either case: the name says what the value is."""
    assert named(f"{name} = {RANDOM_RUN_28}") == []


@pytest.mark.parametrize("name", ["_averageLength", "1averageLength", "-zoneOffsetList", ".ZoneOffsetList"])
def test_a_name_starting_with_no_letter_is_not_descriptive(name: str) -> None:
    text = f"{name} = {RANDOM_RUN_28}"
    assert named(text) == [("high-entropy", text.index(RANDOM_RUN_28))]


RANDOM_RUN_41 = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9R"


@pytest.mark.parametrize("name", ["--sumOfExposures", "_wrongLength", "0rookTable", "ab"])
def test_a_name_that_does_not_start_with_a_letter_or_is_short_does_not_excuse_its_value(name: str) -> None:
    """A name of two or more plain words says what its value is (``sumOfExposures = ...``), but only
    a name starting with a letter, three characters or longer: the random value of ``--flagName=``,
    ``_privateName =`` or ``ab =`` is judged and blocks."""
    text = f"{name}={RANDOM_RUN_41}\n"
    assert named(text) == [("high-entropy", len(name) + 1)]
    assert named(f"{name.lstrip('-_0')}={RANDOM_RUN_41}\n") == ([] if len(name) > 2 else named(text))


def test_a_random_value_is_excused_only_by_a_name_of_two_words_none_naming_a_credential() -> None:
    """``wrongLength := "..."``, ``rookTable = ...``: the name says what the value is. A one-word name,
    a name whose second "word" is only digits, or a name with a credential piece keeps it judged."""
    for name in ("wrongLength", "rookTable", "sumOfExposures", "table42x7"):
        assert named(f"{name} = {RANDOM_RUN_27}") == [], name
    for name in ("x", "value", "version2", "build 42"):
        assert ("high-entropy", len(f"{name} = ")) in named(f"{name} = {RANDOM_RUN_27}"), name
    assert named(f"apiToken = {RANDOM_RUN_27}") != []
    assert named(f"sessionTable = {RANDOM_RUN_27}") != []  # "session" names a credential


@pytest.mark.parametrize(
    ("name", "not_secret"),
    [(b"publicKey", True), (b"issuerKeyHash", True), (b"csrf_token", True), (b"db_password", False)],
)
def test_a_name_that_says_public_or_hash_is_no_secret(name: bytes, not_secret: bool) -> None:
    assert generic._not_secret_name(b"", 0, name) is not_secret


@pytest.mark.parametrize("filler", ["~", "%"])
@pytest.mark.parametrize(("gap", "blocked"), [(511, False), (512, False), (513, True)])
def test_a_name_excuses_a_random_value_512_value_bytes_away(filler: str, gap: int, blocked: bool) -> None:
    """``sha256=`` says its value is a digest, not a secret, even when value characters (``~``, ``%``)
    run between the name and a random run: up to 512 of them. Farther back the name is not looked for,
    and the random run is blocked by the generic entropy check at its own offset."""
    text = "sha256=" + filler * gap + RANDOM_RUN_41
    assert named(text) == ([("high-entropy", 7 + gap)] if blocked else [])


# --- an anti-forgery hidden input excuses its value (_not_secret_name) ----------------------------


_HIDDEN = b'name="authenticity" '


_RUN = b"k9Q2xW7mP4nR8tZ1aB3c"


def _authenticity_input(gap: int) -> tuple[bytes, int]:
    """An anti-forgery hidden input whose ``name=`` starts ``20 + gap + 7`` bytes before its value."""
    buf = _HIDDEN + b" " * gap + b'value="' + _RUN
    return buf, len(_HIDDEN) + gap + 7


def test_a_hidden_input_is_read_up_to_100_bytes_before_its_value() -> None:
    near, at = _authenticity_input(73)
    assert at == 100 and generic._not_secret_name(near, at, b"value") is True  # name= at offset 0
    far, at = _authenticity_input(74)
    assert at == 101 and generic._not_secret_name(far, at, b"value") is False
    buf, at = _authenticity_input(0)
    assert generic._not_secret_name(buf, at, b"value") is True
    assert generic._not_secret_name(buf, at, b"api_token") is False  # only a ``value`` attribute
    assert generic._not_secret_name(b'value="' + _RUN, 7, b"value") is False  # no hidden input


def _csrf_input(gap: int) -> tuple[str, int]:
    """An anti-forgery hidden input whose ``name=`` starts ``gap`` bytes before the value."""
    filler = "d" * (gap - len('name="csrf_token" ') - len(' value="'))
    text = f'<input name="csrf_token" {filler} value="{RANDOM_RUN_41}">'
    start = text.index(RANDOM_RUN_41)
    assert start - text.index("name=") == gap
    return text, start


@pytest.mark.parametrize("gap", [26, 60, 99, 100])
def test_a_hidden_csrf_input_within_100_bytes_excuses_its_value(gap: int) -> None:
    """``<input name="csrf_token" ... value="...">``: a token bound to a session cookie, useless
    alone; the ``name`` attribute counts when it starts at most 100 bytes before the value."""
    text, _ = _csrf_input(gap)
    assert named(text) == []


@pytest.mark.parametrize("gap", [101, 102, 140])
def test_a_csrf_name_further_back_does_not_excuse_a_random_value(gap: int) -> None:
    """Further back, the ``name`` belongs to something else: the random value is judged and blocks."""
    text, start = _csrf_input(gap)
    assert named(text) == [("high-entropy", start)]


# --- URLs: a run in a URL's path (_in_url), credentials in a URI (scan_uris) ----------------------


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


@pytest.mark.parametrize(
    "text", [f"://cdn.example.com/files/{RANDOM_RUN_41}", f"https://cdn.example.com/{RANDOM_RUN_41}"]
)
def test_a_run_in_a_url_path_is_not_judged_even_when_the_url_opens_the_text(text: str) -> None:
    """A document id in a URL's path is no credential, also when the ``://`` is the text's first byte
    (a scheme-relative link stored on its own)."""
    assert named(text) == []
    assert named(f"{text} and {RANDOM_RUN_41}") == [("high-entropy", len(text) + 5)]


@pytest.mark.parametrize(
    ("text", "password"),
    [
        ("z39.50r://user:Zq8Lm3pw@host/db", "Zq8Lm3pw"),  # IANA's Z39.50 schemes: a digit after a '.'
        ("see z39.50s://u:Zq8Lm3pw@h", "Zq8Lm3pw"),
        ("postgresql+psycopg2://app:Zq8Lm3pw@db/x", "Zq8Lm3pw"),  # SQLAlchemy's dialect+driver
        ("git+ssh://deploy:Zq8Lm3pw@git.example.org/repo", "Zq8Lm3pw"),
        ("x-my.app+1://u:Zq8Lm3pw@h", "Zq8Lm3pw"),
    ],
)
def test_a_scheme_with_dots_pluses_dashes_and_digits_is_read_whole(text: str, password: str) -> None:
    """The scheme is walked back over letters, digits, ``+``, ``.`` and ``-`` to its first letter."""
    assert named(text) == [("uri-credentials", text.index(password))]


@pytest.mark.parametrize(
    ("password", "blocks"),
    [
        ("xxxx", False),  # a mask of one or two characters
        ("0000", False),
        ("abab", False),
        ("xxxxxxxx", False),
        ("****", False),  # template syntax
        ("${PW}", False),
        ("<password>", False),
        ("changeme", True),  # a stand-in word, but a real (weak) password in a URL: it blocks
        ("Zq8Lm3pw", True),
    ],
)
def test_url_credentials_are_template_syntax_or_masks_or_a_password(password: str, blocks: bool) -> None:
    text = f"redis://app:{password}@cache:6379/0"
    assert named(text) == ([("uri-credentials", 12)] if blocks else [])


def test_an_at_sign_in_a_url_path_does_not_end_the_search_for_credentials() -> None:
    """``https://example.org/users/@alice`` has ``://`` before its ``@`` but no credentials; the URI
    with a password after it is still judged."""
    text = "see https://example.org/users/@alice and redis://app:Zq8Lm3pw@cache/0"
    assert named(text) == [("uri-credentials", text.index("Zq8Lm3pw"))]


@pytest.mark.parametrize(
    ("text", "offset"),
    [("s3://AKID:Zq8Lm3pw@bucket/x", 10), ("x://u:Zq8Lm3pw@h", 6), ("redis://u:Zq8Lm3pw@h", 10)],
)
def test_url_credentials_at_the_very_start_of_a_text_are_found(text: str, offset: int) -> None:
    """The scheme is read back to the text's first byte: ``s3://``, a one-letter scheme too."""
    assert named(text) == [("uri-credentials", offset)]
    assert named(f"see {text}") == [("uri-credentials", offset + 4)]


@pytest.mark.parametrize("scheme", ["s3", "h2", "git+ssh", "postgresql+psycopg2", "redis"])
@pytest.mark.parametrize("before", ["", "url: ", "("])
def test_uri_credentials_are_found_whatever_the_scheme_and_where_it_starts(scheme: str, before: str) -> None:
    """A scheme may hold digits and ``+`` (``s3://``, ``git+ssh://``) and may start the string."""
    text = f"{before}{scheme}://deploy:{RANDOM_RUN_27}@host.example/x"
    at = len(f"{before}{scheme}://deploy:".encode())
    assert ("uri-credentials", at) in named(text)


# --- public blocks: public keys and SOPS values (_public_ranges) ----------------------------------


def test_a_public_key_block_without_its_end_line_is_public_to_the_end() -> None:
    run = base64.b64encode(hashlib.sha256(b"x").digest()).decode()
    assert named(run) == [("high-entropy", 0)]
    assert named(f"-----BEGIN PUBLIC KEY-----\n{run}\n") == []
    closed = f"-----BEGIN PUBLIC KEY-----\n{run}\n-----END PUBLIC KEY-----\n"
    assert named(closed + run + "\n") == [("high-entropy", len(closed))]


def test_a_sops_value_is_closed_only_by_a_bracket_within_64_kib() -> None:
    """The ``]`` that ends a SOPS ciphertext is looked for in the 65,536 bytes from ``ENC[``; one
    further away does not close it, and the ciphertext is then public to the end of the buffer."""
    run = base64.b64encode(hashlib.sha256(b"x").digest()).decode()
    head = "ENC[AES256_GCM,data:"
    for gap, findings in ((65535, [("high-entropy", 65537)]), (65536, [])):
        text = head + "A" * (gap - len(head)) + "] " + run
        assert text.index("]") == gap
        assert named(text) == findings


SOPS = (
    "db-password: ENC[AES256_GCM,data:O+5l4g==,iv:c/dS4BCBMbnKsXYuzBuCuVQt8RV9bOv5HgdpL+iwmns="
    ",tag:KkQfh6OymvCt4uC13p318g==,type:str]"
)


@pytest.mark.parametrize("gap", ["\n", "\n" * 40, " # rotated 2026-11\n"])
@pytest.mark.parametrize(
    ("after", "rule"),
    [
        ("q7Rk2mXv9Lp4Zt8Wn3Bc6Hd1Jf5Gs0Ac", "high-entropy"),
        ("password = 'q7Rk2mXv9Lp4Zt8Wn3Bc6Hd1'", "secret-assignment"),
    ],
)
def test_a_sops_ciphertext_covers_itself_not_the_text_after_it(gap: str, after: str, rule: str) -> None:
    # A SOPS value is encrypted by design (public), up to its closing bracket: a secret after it in
    # the same text is still judged, a bare random token included (the public range is what the
    # random-run rule skips; one reaching the end of the text would have hidden it).
    assert scan_text(SOPS) == []
    assert rule in {f.rule for f in scan_text(after)}
    assert rule in {f.rule for f in scan_text(SOPS + gap + after)}


# --- base64 of plain text is judged by what it says (_encoded_text) -------------------------------


def _b64(text: bytes) -> str:
    return base64.b64encode(text).decode()


@pytest.mark.parametrize(
    "text",
    [
        b"meet me at noon ok!!",  # 20 bytes: 27 base64 characters and one '=' of padding
        b"the cat sat on a mat",
        b"lunch at 12:30 today",
        b"see you at 9 sharp, bring the notes",
    ],
)
def test_base64_of_a_sentence_is_text_padded_or_not(text: bytes) -> None:
    """A run that decodes to printable prose naming no credential is an encoded sentence, not a
    secret, whether its ``=`` padding is kept, dropped, or the run is glued to a name."""
    encoded = _b64(text)
    for line in (f"v = {encoded}", f"v = {encoded.rstrip('=')}", f"v={encoded}"):
        assert named(line) == []


def test_a_16_character_base64_piece_is_long_enough_to_be_read_as_text() -> None:
    """``aGVsbG8gd29ybGQh`` is 16 characters (``hello world!``): the longest piece of the run, read as
    text, and the short piece glued to it with ``-`` is no random part."""
    run = _b64(b"hello world!") + "-Xk9Lm3Qz"
    assert named(f"x = {run}") == []


def test_base64_text_glued_to_a_random_part_still_blocks() -> None:
    """``<base64 text>_<random signature>``: the text does not excuse the random part beside it."""
    run = _b64(b"hello there, see you soon").rstrip("=") + "_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5"
    assert named(f"x = {run}") == [("high-entropy", 4)]


def _prose_with(byte: int, count: int) -> bytes:
    """100 bytes of prose with ``count`` of them (spread out) replaced by ``byte``."""
    text = bytearray((b"the quick brown fox jumps over the lazy dog " * 3)[:100])
    for i in range(count):
        text[5 + i * 30] = byte
    return bytes(text)


@pytest.mark.parametrize(
    ("byte", "count", "is_text"),
    [
        (0x01, 3, True),  # 97 of 100 printable: still text
        (0x01, 4, False),  # 96: binary, judged as a random run
        (0x7F, 4, False),  # DEL is not printable
        (0x1F, 4, False),  # nor the last control character
        (0x80, 4, False),
        (0x7E, 4, True),  # '~' is
        (0x20, 4, True),
        (0x09, 4, True),  # tab, new line and carriage return count as text
        (0x0A, 4, True),
        (0x0D, 4, True),
        (0x0B, 4, False),  # a vertical tab does not
    ],
)
def test_base64_counts_as_text_when_97_percent_of_its_bytes_are_printable(
    byte: int, count: int, is_text: bool
) -> None:
    run = _b64(_prose_with(byte, count))
    assert named(f"x = {run}") == ([] if is_text else [("high-entropy", 4)])


# printable characters of every class, so that their base64 looks random enough to be judged at all
MIXED = b"Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d!Jf6Ug1Se#Oi4Yr7Tw2Qp9Zx8Cv5Bn3Mk6Lj1Hg4Fd7Sa0Pe2Wr5Ty8Ui"


@pytest.mark.parametrize(
    ("text", "rules"),
    [
        (
            b"Send the new PASSWORD (7 chars, 2 digits) to Jo & Kim by 9pm!",
            ["high-entropy"],
        ),  # names a credential
        (b"Send the new TOKEN (7 chars, 2 digits) to Jo & Kim by 9pm!", ["high-entropy"]),
        (b"Send the new NOTE (7 chars, 2 digits) to Jo & Kim by 9pm!!", []),
        (b"alice:" + MIXED[:73], ["high-entropy"]),  # user:password, 79 bytes without a space
        # longer, or with a space, it is text: decoded, the random run inside it is judged as in plain text
        (b"alice:" + MIXED[:74], ["base64:high-entropy"]),
        (b"alice: " + MIXED[:72], ["base64:high-entropy"]),
        (b"Meet Jo & Kim at 9pm (room 42B), bring 3 copies!", []),
    ],
)
def test_base64_text_that_names_a_credential_or_is_a_user_password_pair_still_blocks(
    text: bytes, rules: list[str]
) -> None:
    run = _b64(text)
    assert named(f"x = {run}") == [(rule, 4) for rule in rules]


@pytest.mark.parametrize(
    "sentence",
    [
        b"the quick brown fox jumps over the lazy dog",
        b"meet me at the station at noon",
        b"Hello from the build farm",
    ],
)
def test_base64_of_a_plain_sentence_is_text_not_a_secret(sentence: bytes) -> None:
    """Base64 of printable words (spaces included) says what it is: no credential word, no block."""
    blob = base64.b64encode(sentence).decode()
    assert named(f"blob {blob}\n") == []


# --- home paths (scan_home) and the needle search (find_all) --------------------------------------


NEEDLES = [b"~/", b"Q~", b"\\Users\\", b"dapi", b"eyJ", b"~"]


def plain_find_all(buf: bytes, needle: bytes, step: int = 1) -> list[int]:
    out = []
    i = buf.find(needle)
    while i >= 0:
        out.append(i)
        i = buf.find(needle, i + step)
    return out


def plain_scan_home(buf: bytes) -> list[tuple[str, int, int, str]]:
    """The home-path pass written plainly, one ``find`` loop per trigger (the module folds them into one
    regex pass guarded by memchr)."""
    spans = []
    for trig in (b"/home/", b"/Users/", b"\\Users\\"):
        i = buf.find(trig)
        while i >= 0:
            start = i - 2 if trig == b"\\Users\\" and i >= 2 else i
            m = generic.HOME.match(buf, start)
            if m is not None:
                spans.append(("home-path", start, m.end(), scrub.WARN))
            i = buf.find(trig, i + 1)
    i = buf.find(b"~/")
    while i >= 0:
        if i == 0 or buf[i - 1] in b" \t\n\"'`(=:\x00[{,":
            spans.append(("home-path", i, i + 2, scrub.WARN))
        i = buf.find(b"~/", i + 2)
    return spans


pieces = st.sampled_from(
    ["/home/", "/Users/", "C:\\Users\\", "\\Users\\", "~/", "~", "/", "\\", "home", "Users", "bob", " ", ":"]
)


texts = st.lists(pieces, max_size=30).map(lambda parts: "".join(parts).encode())


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(NEEDLES), st.sampled_from([1, 2]))
def test_find_all_finds_what_a_plain_search_finds(buf: bytes, needle: bytes, step: int) -> None:
    assert list(generic.find_all(buf, needle, step)) == plain_find_all(buf, needle, step)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_home_pass_reports_what_the_per_needle_search_reported(buf: bytes) -> None:
    spans: list[tuple[str, int, int, str]] = []
    generic.scan_home(buf, spans)
    assert sorted(spans) == sorted(plain_scan_home(buf))


def test_overlapping_home_paths_are_all_seen() -> None:
    spans: list[tuple[str, int, int, str]] = []
    generic.scan_home(b"x /home/home/alice ~/a", spans)
    assert sorted(s[1] for s in spans) == [2, 7, 19]


@pytest.mark.parametrize(
    "text", ["logs in /home/alice/app", "see /Users/bob/x", "C:\\Users\\carol\\y", "under ~/notes"]
)
def test_a_home_path_warns_with_one_kind_of_slash_alone(text: str) -> None:
    """A Unix home path holds no backslash, a Windows one no slash: each alone is named."""
    assert [(f.rule, f.severity) for f in scan_text(text)] == [("home-path", "warn")]
