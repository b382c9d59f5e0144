"""Where a refusal is named, cases the eighth round's fresh draw (seed 29) found unguarded: a truncated
document whose last token is the refused number, and an empty or escape-led string before it."""

from __future__ import annotations

import pytest

from tests.unit.core.test_canonical_locate import _refused_at


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a": NaN', "$.a"),
        ('{"a": [1, 1e999', "$.a[1]"),
        ('["x", 12345678901234567890', "$[1]"),
        ('{"a": {"b": -Infinity', "$.a.b"),
    ],
)
def test_a_refused_number_at_the_very_end_of_a_truncated_document_is_named(text: str, path: str) -> None:
    """The number hook refuses before the parser sees the missing brackets: the path is the number's,
    although the text ends right after it."""
    assert _refused_at(text) == path


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"": 1, "a": NaN}', "$.a"),
        ('["", NaN]', "$[1]"),
        ('{"e": "", "f": [1e999]}', "$.f[0]"),
        ('{"\\"q": 1, "b": Infinity}', "$.b"),
        ('{"k": "\\\\", "b": 1e400}', "$.b"),
    ],
)
def test_a_refusal_after_an_empty_or_escape_led_string_is_named(text: str, path: str) -> None:
    """An empty string (key or value) or one that starts with an escape is read whole: the refusal
    after it names the refused value, not the root."""
    assert _refused_at(text) == path
