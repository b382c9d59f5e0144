"""Generic scrub rules (generic.py): each branch and window of the assignment, URI and
random-run rules pinned by its stated contract (an XML element needs its ``<`` and its closing tag
within 600 bytes, a table row needs its ``|`` within 8 bytes, a name is read up to 64 bytes back),
over families of inputs rather than one drawn mutant at a time.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from acx.core.scrub import scan_text

VALUE = "Zq8Lm3Xv9Rt2Wp7Ny4K"  # 19 characters: below the 20 of a random run, judged only by its name


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


# --- check_assignment: an XML element ``<name>value</name>`` -------------------------------------


@pytest.mark.parametrize("name", ["password", "db_password", "client_secret", "apiKey"])
@pytest.mark.parametrize("lead", ["", "x", "<root>\n  "])
def test_an_xml_element_holding_a_secret_blocks_at_its_value(name: str, lead: str) -> None:
    """``<password>...</password>``: the element's text is the value, found at its first byte."""
    text = f"{lead}<{name}>{VALUE}</{name}>\n"
    assert _rules(text) == [("secret-assignment", len(lead) + len(name) + 2)]


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
    assert _rules(text) == []


@pytest.mark.parametrize(
    ("closing_at", "found"), [(598, True), (599, True), (600, True), (601, False), (640, False)]
)
def test_the_closing_tag_must_start_within_600_bytes_of_the_opening_one(closing_at: int, found: bool) -> None:
    """The closing ``</name`` is looked for in the 600 bytes after the opening tag's ``>``."""
    head = f"<password>{VALUE}"
    text = head + " " * (closing_at - len(head)) + "</password>"
    assert text.index("</password>") == closing_at
    assert _rules(text) == ([("secret-assignment", 10)] if found else [])


@pytest.mark.parametrize(("prefix", "found"), [(62, True), (63, True), (64, True), (65, False), (70, False)])
def test_an_element_name_is_read_up_to_64_bytes_before_its_secret_word(prefix: int, found: bool) -> None:
    """The name is the run of name characters at most 64 bytes back from the stem; a longer one is
    cut there, so its ``<`` is not where the element's name starts and it is not an element."""
    name = "x" * prefix + "password"
    text = f"<{name}>{VALUE}</{name}>"
    assert _rules(text) == ([("secret-assignment", len(name) + 2)] if found else [])


# --- check_assignment: a table row ``| NAME | value |`` ----------------------------------------


@pytest.mark.parametrize(
    ("pad", "found"), [(0, True), (1, True), (6, True), (7, True), (8, False), (12, False)]
)
def test_a_table_row_needs_its_bar_within_8_bytes_before_the_name(pad: int, found: bool) -> None:
    text = "|" + " " * pad + f"DB_PASSWORD | {VALUE} |"
    assert _rules(text) == ([("secret-assignment", text.index(VALUE))] if found else [])


@pytest.mark.parametrize("lead", ["| ", "|`", "text\n| ", "| a | b |\n|---|---|\n| "])
def test_a_table_cell_naming_a_secret_blocks_its_neighbour_cell(lead: str) -> None:
    text = f"{lead}DB_PASSWORD | {VALUE} |\n"
    assert _rules(text) == [("secret-assignment", text.index(VALUE))]


@pytest.mark.parametrize(
    "text", [f"echo $DB_PASSWORD | {VALUE}", f"DB_PASSWORD | {VALUE}", f"x DB_PASSWORD | {VALUE} |"]
)
def test_a_pipe_without_a_table_bar_before_the_name_is_no_assignment(text: str) -> None:
    assert _rules(text) == []


# --- check_assignment: the name ---------------------------------------------------------------


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
    assert _rules(text) == expected


# --- check_assignment: after a candidate is rejected, the next one of the same word is judged ---

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
    found = _rules(text)
    assert found[-1] == ("secret-assignment", text.index(SECOND))
    assert found[:-1] == ([("secret-assignment", text.index(VALUE))] if VALUE in first else [])


# --- check_assignment: a value on the next line ---------------------------------------------------


@pytest.mark.parametrize(
    "text", [f"password:\n  {VALUE}\n", f"api_key =\n{VALUE}\n", f"secret:\r\n    {VALUE}\n"]
)
def test_a_name_ending_its_line_is_not_given_the_next_line_as_its_value(text: str) -> None:
    """``password:`` then a new line: the next line is not its value (YAML's nested mapping, a
    heading); only an element or a ``value:`` key carries its value across the line break."""
    assert _rules(text) == []


@pytest.mark.parametrize(
    "text",
    [
        f"<password>\n  {VALUE}\n</password>\n",
        f"- name: DB_PASSWORD\n  value: {VALUE}\n",
        f"- name: DB_PASSWORD\n  value:\n    {VALUE}\n",
    ],
)
def test_an_element_or_a_value_key_carries_its_value_across_the_line_break(text: str) -> None:
    assert _rules(text) == [("secret-assignment", text.index(VALUE))]


# --- check_assignment: judging costs with the length judged (one unit per 64 bytes) -------------

WORDS = " ".join(["word"] * 200)


def _first_refused(length: int) -> int:
    """The fewest ``password = "<length bytes of words>"`` lines the scan budget refuses."""
    value = WORDS[:length]
    lo, hi = 1, 400
    while lo < hi:
        mid = (lo + hi) // 2
        if _rules(f'password = "{value}"\n' * mid) == [("scan-budget", 0)]:
            hi = mid
        else:
            lo = mid + 1
    return lo


def test_a_value_costs_one_budget_unit_per_whole_64_bytes() -> None:
    """503- and 504-byte values cost the same (7 units each: 504 // 64 == 7), a 512-byte one costs one
    more (8) than a 511-byte one: a buffer holds as many of the first two, fewer of the last."""
    assert _first_refused(504) == _first_refused(503)
    assert _first_refused(512) < _first_refused(511)


# --- _check_run: AWS context, names, excerpts, the 4096-byte cap, the cost of judging -------------

AWS_SECRET = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9"  # 40 characters of mixed-case base64
RANDOM_RUN = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d"


@pytest.mark.parametrize(
    ("gap", "rule"), [(55, "aws-secret-access-key"), (57, "aws-secret-access-key"), (58, "high-entropy")]
)
def test_aws_words_count_within_64_bytes_before_a_40_character_run(gap: int, rule: str) -> None:
    """``aws`` ending its line 64 bytes before the run makes a 40-character base64 run an AWS secret
    key; one byte further it is only a random run (``aws`` at the very start of the text counts)."""
    text = "aws" + " " * gap + "x = " + AWS_SECRET
    assert _rules(text) == [(rule, text.index(AWS_SECRET))]


def test_a_name_that_says_fingerprint_excuses_even_a_run_after_aws_words() -> None:
    """``AWS KMS key fingerprint: ...``: the name says what the value is (a hash of a public key)."""
    assert _rules(f"AWS KMS key fingerprint: {AWS_SECRET}") == []


@pytest.mark.parametrize("name", ["rotationSchedule", "backupWindowList", "eu-west-1"])
def test_a_descriptive_name_does_not_excuse_a_40_character_run_after_aws_words(name: str) -> None:
    """A descriptive name excuses a random run (``rookTable = ...``), but not the AWS secret key
    shape in AWS context: that check comes first."""
    text = f"AWS backup {name} = {AWS_SECRET}"
    assert _rules(text) == [("aws-secret-access-key", text.index(AWS_SECRET))]


@pytest.mark.parametrize(
    ("text", "excerpt"),
    [
        (f"{RANDOM_RUN}...", True),
        (f"{RANDOM_RUN}\u2026", True),
        (f"...{RANDOM_RUN}", True),
        (f"see \u2026{RANDOM_RUN} here", True),
        (f"{RANDOM_RUN}... more", True),
        (f"{RANDOM_RUN}....", True),
        (f"{RANDOM_RUN}..", False),
        (f"{RANDOM_RUN}.", False),
        (f"{RANDOM_RUN}. ...", False),
        (f"..{RANDOM_RUN}", False),
    ],
)
def test_a_random_run_cut_short_by_an_ellipsis_is_an_excerpt(text: str, excerpt: bool) -> None:
    """``ops_eyJzaWdu...``: three dots (or ``…``) right after or right before the run mark an excerpt
    shown for reference; two dots, or dots further away, do not."""
    assert _rules(text) == ([] if excerpt else [("high-entropy", text.index(RANDOM_RUN))])


def _long_run(n: int) -> str:
    return base64.b64encode(hashlib.shake_256(b"run").digest(3 * (n // 4 + 1))).decode()[:n]


@pytest.mark.parametrize(("n", "excerpt"), [(4095, True), (4096, True), (4097, False), (4200, False)])
def test_only_the_first_4096_bytes_of_a_run_are_judged(n: int, excerpt: bool) -> None:
    """A run is judged by its first 4096 bytes: an ellipsis right after them marks an excerpt; after
    a longer run it is not right after what was judged, and the run still blocks (fail closed)."""
    text = _long_run(n) + "..."
    assert _rules(text) == ([] if excerpt else [("high-entropy", 0)])
    assert _rules(_long_run(n)) == [("high-entropy", 0)]


def _random_runs(k: int) -> str:
    """``k`` distinct 32-character random base64 runs (letters and digits only), one space apart."""
    return " ".join(
        base64.b64encode(hashlib.sha256(str(i).encode()).digest())
        .decode()[:32]
        .replace("+", "a")
        .replace("/", "b")
        for i in range(k)
    )


def test_each_random_run_judged_costs_4_budget_units() -> None:
    """Every random-looking run costs 4 units (its placeholder and base64-text judgements) of the
    buffer's 512 + n // 256: 125 of them (500 units, budget 528) are scanned and each blocks, 140
    (560 units, budget 530) are refused as a whole, fail closed."""
    assert len(_rules(_random_runs(125))) == 125
    assert _rules(_random_runs(140)) == [("scan-budget", 0)]


# --- check_assignment: a shell / compose default is a literal ------------------------------------


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
    assert _rules(text) == [("secret-assignment", text.index(default))]


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
    assert _rules(text) == []


# --- scan_uris ----------------------------------------------------------------------------------


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
    assert _rules(text) == [("uri-credentials", text.index(password))]


def test_the_at_sign_that_spends_the_budget_is_not_judged() -> None:
    """``a@b`` addresses then a URI with credentials: while the budget lasts the credentials block;
    from the first buffer it does not cover, the refusal is the whole report (the ``@`` that spent the
    budget is not judged on credit)."""
    cred = "x://u:Zq8Lm3pw@h"
    first = next(k for k in range(300, 800) if ("scan-budget", 0) in _rules("a@b " * k + cred))
    assert _rules("a@b " * (first - 1) + cred) == [("uri-credentials", 4 * (first - 1) + 6)]
    assert _rules("a@b " * first + cred) == [("scan-budget", 0)]


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
    assert _rules(text) == ([("uri-credentials", 12)] if blocks else [])


def test_an_at_sign_in_a_url_path_does_not_end_the_search_for_credentials() -> None:
    """``https://example.org/users/@alice`` has ``://`` before its ``@`` but no credentials; the URI
    with a password after it is still judged."""
    text = "see https://example.org/users/@alice and redis://app:Zq8Lm3pw@cache/0"
    assert _rules(text) == [("uri-credentials", text.index("Zq8Lm3pw"))]


# --- _encoded_text: base64 of plain text is judged by what it says --------------------------------


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
        assert _rules(line) == []


def test_a_16_character_base64_piece_is_long_enough_to_be_read_as_text() -> None:
    """``aGVsbG8gd29ybGQh`` is 16 characters (``hello world!``): the longest piece of the run, read as
    text, and the short piece glued to it with ``-`` is no random part."""
    run = _b64(b"hello world!") + "-Xk9Lm3Qz"
    assert _rules(f"x = {run}") == []


def test_base64_text_glued_to_a_random_part_still_blocks() -> None:
    """``<base64 text>_<random signature>``: the text does not excuse the random part beside it."""
    run = _b64(b"hello there, see you soon").rstrip("=") + "_Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5"
    assert _rules(f"x = {run}") == [("high-entropy", 4)]


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
    assert _rules(f"x = {run}") == ([] if is_text else [("high-entropy", 4)])


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
    assert _rules(f"x = {run}") == [(rule, 4) for rule in rules]


# --- _descriptive_name: a name of two or more words, starting with a letter -----------------------


@pytest.mark.parametrize(
    "name", ["averageLength", "zoneOffsetList", "AverageLength", "ZoneOffsetList", "wrongLength"]
)
def test_a_descriptive_name_starting_with_any_letter_excuses_a_random_run(name: str) -> None:
    """``averageLength = ...``: two words, none naming a credential, from the first letter of the
    alphabet to the last, in either case: the name says what the value is."""
    assert _rules(f"{name} = {RANDOM_RUN}") == []


@pytest.mark.parametrize("name", ["_averageLength", "1averageLength", "-zoneOffsetList", ".ZoneOffsetList"])
def test_a_name_starting_with_no_letter_is_not_descriptive(name: str) -> None:
    text = f"{name} = {RANDOM_RUN}"
    assert _rules(text) == [("high-entropy", text.index(RANDOM_RUN))]
