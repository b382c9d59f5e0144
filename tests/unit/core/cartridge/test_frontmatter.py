"""SKILL.md frontmatter as a verifier reads it from an untrusted file: only a block that opens the file,
top-level ``key: value`` lines (blank, indented, nested and colon-less lines skipped), values losing
one pair of matching quotes.
"""

from __future__ import annotations

from acx.core.cartridge import parse_frontmatter


def test_frontmatter_values_lose_one_pair_of_matching_quotes() -> None:
    text = '---\nname: "deploy"\ndesc: \'x y\'\nodd: "a\'\nq: ""\nlone: \'\n---\nbody: no\n'
    assert parse_frontmatter(text) == {"name": "deploy", "desc": "x y", "odd": "\"a'", "lone": "'"}


def test_blank_lines_and_nested_keys_in_frontmatter_are_skipped() -> None:
    text = "---\nname: deploy-helper\n\nmetadata:\n  name: nested\n  owner: team\ndescription: Deploys\n---\n"
    assert parse_frontmatter(text) == {"name": "deploy-helper", "description": "Deploys"}


def test_a_line_without_a_colon_is_not_a_key() -> None:
    assert parse_frontmatter("---\njust words\nname: x\n---\n") == {"name": "x"}


def test_text_without_an_opening_frontmatter_line_has_no_frontmatter() -> None:
    assert parse_frontmatter("no frontmatter here") == {}
    assert parse_frontmatter("# Title\nname: x\n---\n") == {}
    assert parse_frontmatter("") == {}


def test_indented_frontmatter_lines_are_not_top_level_keys() -> None:
    text = "---\nname: deploy\n  nested: no\n\tdesc: tab\n:\nlicense: MIT\n---\n"
    assert parse_frontmatter(text) == {"name": "deploy", "license": "MIT"}
