"""Provider-free rules (acx.core.scrub.generic): keys in log lines, values with symbols after a
credential name, credential stores written as XML or properties, hex assigned to a name.

Planted values are fake, built at run time.
"""

from __future__ import annotations

import pytest

from acx.core.scrub import scan_text

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
