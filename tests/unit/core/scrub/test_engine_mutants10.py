"""The value judgement of the command-line and config rules (``engine._check_value``): their values are
delimited exactly by the rule's own regex (a quote, whitespace), so they are judged as QUOTED values.

Quoted means two things the tests below pin, each for every rule of the group:
- prose in a quoted value (``default = "Ask the admin. See the vault."``) is a sentence, not a secret;
- nothing is trimmed off the end: ``curl -u ci:sunshine,`` sends the password ``sunshine,`` (the comma
  is part of the shell word), so it is judged as ``sunshine,``, not as the dictionary word ``sunshine``.
"""

from __future__ import annotations

import pytest

from acx.core.scrub import scan_text

_PROSE = "Ask the admin. See the vault."


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


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
    assert _rules(template.format(v=_PROSE)) == []
    # The same place with a drawn value blocks, at the value: the rule does reach this text.
    secret = template.format(v="k7Qz9pLm2Xw4")
    assert _rules(secret) == [(rule, secret.index("k7Qz"))]


@pytest.mark.parametrize("tail", [",", "]", "}"])
@pytest.mark.parametrize("password", ["sunshine", "12345"])
def test_a_curl_password_is_judged_with_the_punctuation_glued_to_it(password: str, tail: str) -> None:
    # Without the glued character the password is a word / a short number: not judged a secret.
    plain = f"curl -u ci:{password} https://example.com/x"
    assert _rules(plain) == []
    glued = f"curl -u ci:{password}{tail} https://example.com/x"
    assert _rules(glued) == [("curl-auth-user", glued.index("ci:"))]
