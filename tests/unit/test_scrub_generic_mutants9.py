"""Generic scrub rules (generic.py), sixth round: each branch and window of the assignment, URI and
random-run rules pinned by its stated contract (an XML element needs its ``<`` and its closing tag
within 600 bytes, a table row needs its ``|`` within 8 bytes, a name is read up to 64 bytes back),
over families of inputs rather than one drawn mutant at a time.
"""

from __future__ import annotations

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
