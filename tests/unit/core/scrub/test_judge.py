"""Value judgements (acx.core.scrub.judge): a placeholder is known by its form, never by a word
inside it; hex printed in one case is a key; a key block's body is a stand-in only by its form.

Planted values are fake, built at run time, and shaped like real credentials.
"""

from __future__ import annotations

import pytest

from acx.core.scrub import judge, scan_text

# Every word the placeholder judgement has ever known: none of them, inside a value, may open the gate.
WORDS = (
    "changeme change_me change-me redacted placeholder example sample dummy none null nil undefined "
    "empty todo tbd fixme secret password passwd token xxx your_token your_password hidden masked "
    "omitted notset not_set unset required optional string str bytes int true false test testing "
    "foobar foo bar baz replaceme replace_me insert_here value your here"
).split()


def _alnum(word: str) -> str:
    return "".join(c for c in word if c.isalnum())


def _planted(word: str) -> list[str]:
    """Real-looking secrets with ``word`` inside, in the syntaxes notes carry them in."""
    w = _alnum(word)
    aws = ("wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + w.upper() + "K7Q2MX9ZPA")[:40]
    ghp = ("A1b2C3d4E5" + w + "f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0")[:36]
    return [
        f"DB_PASSWORD={w.capitalize()}2024!x",
        f'api_key = "Kq7{w}Zp93xT2mVb8"',
        f"aws_secret_access_key = {aws}",
        f"stripe key sk_live_4eC39HqLyjW{w}DarjtT1zdp7dc",
        f"token ghp_{ghp}",
        f"password: 'Tr0ub4dor&{w}3'",
    ]


@pytest.mark.parametrize("word", WORDS)
def test_a_word_inside_a_real_looking_secret_never_opens_the_gate(word: str) -> None:
    for text in _planted(word):
        found = [f for f in scan_text(text) if f.severity == "block"]
        assert found, f"passed with {word!r} inside"
        assert all(word not in f.rule for f in found if len(word) > 6)


@pytest.mark.parametrize("word", WORDS)
def test_a_word_inside_a_value_is_no_placeholder(word: str) -> None:
    value = f"Kq7{_alnum(word)}Zp93xT2mVb8".encode()
    assert not judge.is_placeholder(value)
    assert judge.is_secret_value(value, True)


@pytest.mark.parametrize(
    "text",
    [
        "set AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE for the pipeline",
        "DB_PASSWORD=Example2024!x",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ],
)
def test_documented_example_keys_are_secrets(text: str) -> None:
    assert any(f.severity == "block" for f in scan_text(text))


@pytest.mark.parametrize(
    "value",
    [
        b"xxxxxxxxxxxxxxxx",  # a run of one character
        b"****************",
        b"0000000000000000",
        b"abababababababab",  # a short unit repeated
        b"EXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE",  # a longer unit five times
        b"<your-api-key>",  # template syntax
        b"${API_KEY}",
        b"{{ api_key }}",
        b"$(vault read -field=key secret/x)",
        b"%API_KEY%",
        b"YOUR_API_KEY",  # a CONSTANT_CASE name: a variable's name, not its value
        b"",  # an empty value
        b"abc",  # too short to be a secret
        b"sk-...",  # cut short with a mask
    ],
)
def test_placeholders_are_known_by_their_form(value: bytes) -> None:
    assert judge.is_placeholder(value)


def test_a_value_equal_to_its_key_is_a_placeholder() -> None:
    assert judge.is_placeholder(b"ACCESS_TOKEN", b"access_token")
    assert not judge.is_secret_value(b"Kq7Zp93xT2mVb8", True, b"kq7zp93xt2mvb8")
    assert judge.is_secret_value(b"Kq7Zp93xT2mVb8", True, b"kq7zp93xt2mvb9")


def test_a_password_repeated_three_times_is_still_a_password() -> None:
    """Three copies of a unit is how people lengthen a password (the standard's own
    ``hunter2hunter2hunter2``); only five or more read as a mask."""
    assert not judge.is_placeholder(b"hunter2hunter2hunter2")
    assert judge.is_placeholder(b"hunter2hunter2hunter2hunter2hunter2")


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        (b"0123456789abcdef0123456789abcdef01234567", True),  # the ACX standard's own hex test
        (b"3F2A9C8D7E6B5A4F3E2D1C0B9A8F7E6D", True),  # upper case, 32 digits
        (b"3f2a9c8d7e6b5a4f3e2d1c0b9a8f7e6", False),  # 31: too short to judge as a key
        (b"3f2A9c8d7e6b5a4f3e2d1c0b9a8f7e6d", False),  # mixed case: typed, hex is printed in one case
        (b"12345678901234567890123456789012", False),  # digits only: a number
        (b"abababababababababababababababab", False),  # a mask
        (b"aaaaaaaaaa1111111111bbbbbbbbbb2222222222", False),  # runs of one character
    ],
)
def test_hex_in_one_case_is_a_key(value: bytes, secret: bool) -> None:
    assert judge.hex_secret(value) is secret


def test_hex_assigned_to_a_secret_name_blocks_even_when_typed_in_order() -> None:
    assert judge.is_secret_value(b"0123456789abcdef0123456789abcdef01234567", True, b"api_key")


@pytest.mark.parametrize(
    ("body", "stand_in"),
    [
        (b"", True),
        (b"\n", True),
        (b"...", True),
        (b"\nanything\n", True),
        (b"\nyour key here\n", True),
        (b"\n<private key>\n", True),
        (b"\nMIIB...\n", False),  # an excerpt of key material: the start of a real key
        (b"\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n", False),
    ],
)
def test_a_key_blocks_body_is_a_stand_in_only_by_its_form(body: bytes, stand_in: bool) -> None:
    assert judge.stand_in_body(body) is stand_in


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (b"REDACTED", True),  # one word in capitals
        (b"see vault", True),
        (b"your-api-key-here", True),
        (b"AKIAAVIHWGUCPXMMZTBE", False),  # 12+ capitals: a base32 draw
    ],
)
def test_plain_words_are_a_reference_not_a_literal(value: bytes, words: bool) -> None:
    assert judge.is_reference_or_words(value, True) is words
