"""Value judgements: is this captured value a placeholder, a reference, plain words, or random enough?

Every function takes bytes no longer than the engine's value cap (512), so each regex here runs on a
bounded input and costs at most a few microseconds: Python's ``re`` is safe on them (no nested
quantifiers that can overlap, and the input is bounded anyway).

What these judgements do NOT stop: a real secret that happens to look like a placeholder (``xxxx``
runs, template syntax), or a password of plain words (``your-key-here``, ``password=dragon``).
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections import Counter

# Placeholders are judged by FORM only, never by a word inside the value: a person may well put
# ``example``, ``test`` or ``changeme`` in a real password (``DB_PASSWORD=Example2024!x``).
# Anchored at the start only (each alternative fails fast): no ``.*X.*`` forms, which backtrack.
_PLACEHOLDER = re.compile(
    rb"""^(?:<[^>]*>?$|\$\{|\$\(|\$[A-Za-z_][A-Za-z0-9_]*$|\{\{|\{[A-Za-z_][\w.]*\}$|%\(?[a-z_]*\)?s$
    |%[A-Za-z_][A-Za-z0-9_]*%$|\[.*\]$|\.\.\.|\*)""",
    re.X | re.S | re.I,
)
# A CONSTANT_CASE name of letters only (``YOUR_API_KEY``, ``DB_PASSWORD``): a reference to a
# variable, the shape of a template slot; a drawn secret mixes in digits or lower case.
_CONSTANT_NAME = re.compile(rb"^[A-Z]+(?:_[A-Z]+)+$")
_INFIXES = (b"***", b"xxxxxx", b"####", b"\xe2\x80\xa6")  # masks; ... as one character too
_SUFFIXES = (b"...",)
_CODE_REF = re.compile(
    rb"""^(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(.*|\[.*)?
    |[A-Za-z_][A-Za-z0-9_]*\(.*|[A-Za-z_][A-Za-z0-9_]*\[.*|(?:arn|ssm|vault|secretsmanager|op|env)
    :.*|[a-z]+://.*|~?\.{0,2}/.*|`.*`)$""",
    re.X | re.S,
)
# Plain words: lower case, Capitalised, or one word in capitals of up to 11 letters (``REDACTED``;
# 12 or more capitals are read as a base32 draw, as in ``is_wordy``).
_WORDS = re.compile(rb"^(?:[A-Za-z][a-z]*|[A-Z]{2,11})(?:[ _-](?:[A-Za-z]?[a-z]*|[A-Z]{2,11}))*[.!?]?$")
_DIGITS = re.compile(rb"^[0-9]+$")
_PATHLIKE = re.compile(rb"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?$")
_PIECES = re.compile(rb"[-_/.]")
# a version, or a dependency's version range (npm ``^7.1.2`` / ``~1.2.0``, pip ``>=2.31``, ``==1.4.2``)
_VERSION = re.compile(rb"^(?:[\^~]|[<>]=?|[=~!]=)?v?[0-9]+(?:\.[0-9]+){1,3}(?:[-+][0-9A-Za-z.-]*)?$")
_UUID = re.compile(rb"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(rb"^[0-9a-fA-F]+$")
_SEQUENCES = (b"0123456789", b"abcdefghijklmnopqrstuvwxyz", b"9876543210")
# Stand-in shapes a random draw essentially never produces: 6 digits or 7 letters in alphabet order,
# a character 6 times in a row, a 2- or 3-character unit repeated (``123123123123``), a unit of 4-8
# characters 5 times (``EXAMPLEEXAMPLE...``; three times is a person's password: ``hunter2`` x3).
_RUNS = re.compile(
    b"|".join(re.escape(s[i : i + 6]) for s in (b"0123456789", b"9876543210") for i in range(5))
    + b"|"
    + b"|".join(re.escape(_a[i : i + 7]) for _a in (b"abcdefghijklmnopqrstuvwxyz",) for i in range(20))
    + rb"|(.)\1{5,}|(..)\2{4,}|(...)\3{3,}|(.{4,8})\4{4,}"
)
_MASK_RUNS = re.compile(
    rb"[x*0#.]{6,}|(..)\1{4,}|(...)\2{3,}|(.{4,8})\3{4,}|"
    + b"|".join(re.escape(_a[i : i + 7]) for _a in (b"abcdefghijklmnopqrstuvwxyz",) for i in range(20)),
    re.I,
)
_ANY_RUN = re.compile(rb"(.)\1{5,}")
_EXPRESSION = re.compile(rb"\s[=:+]\s|\s=$|^[$`]|[-:@]v?[0-9]+\.[0-9]+(?:\.[0-9]+)?$")
_CAMEL_WORDS = re.compile(rb"^(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z]))+$")


def shannon_entropy(data: bytes) -> float:
    """Bits per symbol of ``data``; random base64 sits near 5-6, words and paths near 3.5-4."""
    if not data:
        return 0.0
    n = len(data)
    return math.log2(n) - sum(c * math.log2(c) for c in Counter(data).values()) / n


def _masked(low: bytes, strict: bool) -> bool:
    if strict:
        return _RUNS.search(low) is not None
    m = _MASK_RUNS.search(low)
    return m is not None and (m.lastindex is None or len(set(m.group(m.lastindex))) > 1)


def is_placeholder(value: bytes, key: bytes = b"", strict: bool = True) -> bool:
    """A stand-in by its form: template syntax (``<TOKEN>``, ``${VAR}``, ``{{ x }}``, ``$(cmd)``,
    ``%VAR%``), masks (runs of x/X/*/0/#, ``...``), a CONSTANT_CASE name, too few distinct characters
    or too short to be a secret, a value equal to its own key name, and (``strict``) characters typed
    in keyboard or alphabet order. Never a word inside the value: documented example keys
    (``AKIAIOSFODNN7EXAMPLE``) are secrets to this gate, as the ACX standard's tests say."""
    v = value.strip(b"\"'` ")
    if len(v) < 4:
        return True
    low = v.lower()
    if _PLACEHOLDER.match(v) or low.endswith(_SUFFIXES) or _CONSTANT_NAME.match(v):
        return True
    if any(piece in low for piece in _INFIXES):
        return True
    if key and low == key.strip(b"\"'` ").lower():
        return True  # ACCESS_TOKEN=ACCESS_TOKEN
    body = low
    if low.count(b"_") == 1:  # ``ghp_xxxx``: judge the part after a short prefix, not a piece of it
        head, tail = low.split(b"_", 1)
        body = tail if len(tail) >= len(head) else low
    if len(set(body)) <= 2 or len(set(v)) <= 3:
        return True  # ghp_xxxxxxxx..., AKIA0000..., aaaaaaa
    if _masked(low, strict):
        return True
    if strict and _ascending(low):
        return True  # abc123, AbCeFG123: letters and digits each in order, typed, not drawn
    return strict and any(seq in low for seq in _SEQUENCES if len(low) < 2 * len(seq))


def stand_in_body(body: bytes) -> bool:
    """The body of a key block between its BEGIN and END lines is a stand-in by its form: nothing,
    no letter or digit (``...``), plain words (``anything``, ``your key here``) or template syntax
    (``<key>``, ``${KEY}``). An excerpt of key material (``MIIB...``) is not: it starts a real key."""
    v = body.strip()
    if not v or not any(48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 for b in v):
        return True
    return _WORDS.match(v) is not None or v.startswith((b"<", b"${", b"{{"))


def _ascending(low: bytes) -> bool:
    """Five or more letters in strictly rising order and the digits (if any) rising too: a stand-in
    typed along the alphabet. A random draw of 5 letters is in order about once in 120."""
    letters = [b for b in low if 97 <= b <= 122]
    digits = [b for b in low if 48 <= b <= 57]
    if len(letters) < 5 or len(low) > 24 or len(letters) + len(digits) < len(low) - 1:
        return False
    rising = all(a < b for a, b in itertools.pairwise(letters))
    return rising and all(a <= b for a, b in itertools.pairwise(digits))


def is_wordy(value: bytes) -> bool:
    """Every long piece is plain words (``AgencyIdentificationCodeContentType``, ``Slack_BOT_TOKEN``):
    an identifier that starts like a token prefix, not a token. Random draws mix case and digits."""
    # digit-only pieces are ids (``clm05613520:AgencyIdentificationCode...``), not the random part
    pieces = [p for p in re.split(rb"[^A-Za-z0-9]+", value) if len(p) >= 6 and not p.isdigit()]
    if not pieces or any(p.isupper() and p.isalpha() and len(p) >= 12 for p in pieces):
        return False  # AKIAAVIHWGUCPXMMZTBE: a base32 draw without digits is no word
    return all(_CAMEL_WORDS.match(p) for p in pieces)


def is_reference_or_words(value: bytes, quoted: bool) -> bool:
    """Not a literal: code references (``os.environ[...]``, ``settings.X``), store paths and ARNs,
    URLs, file paths, plain words (``see vault``), short numbers, versions."""
    v = value.strip().replace(b"\\-", b"-")  # roff and shell escapes: ``my\-value`` is my-value
    if not quoted:
        v = v.rstrip(b").,;:]}>")
    v = v.rstrip(b":")
    if len(v) < 4 or _EXPRESSION.search(v):
        return True  # ``name = ...`` pasted as a value, `$cmd`, a package coordinate ``x:y-1.2.3``
    if _CODE_REF.match(v) or _WORDS.match(v) or _VERSION.match(v):
        return True
    if quoted and b" " in v and all(_WORDS.match(w) for w in v.split()):
        return True
    if _DIGITS.match(v) and len(v) < 6:
        return True
    return bool(_PATHLIKE.match(v) and max(len(p) for p in v.split(b"/")) < 16)


def hex_secret(value: bytes) -> bool:
    """32 or more hex digits printed in one case (a key, an HMAC secret, a hex token), not a mask
    (``000...``, ``abababab...``). Sequences typed along the alphabet count: the ACX standard's own
    example (``0123456789abcdef0123456789abcdef01234567``) is a secret to its gate."""
    v = value.strip(b"\"'` ")
    if len(v) < 32 or len(v) > 512 or _HEX.match(v) is None or not (v.islower() or v.isupper()):
        return False  # digits only: a number; mixed case: typed, hex is printed in one case
    return len(set(v)) > 3 and _ANY_RUN.search(v) is None and not _masked(v.lower(), strict=False)


def is_secret_value(value: bytes, quoted: bool, key: bytes = b"") -> bool:
    """A literal secret assigned to a secret-like name: none of the above."""
    if len(value) >= 32 and _HEX.match(value) is not None and not value.isdigit():
        # mixed-case hex (``acdeFf05b1...``): hex is printed in one case, this was typed
        return hex_secret(value) and not (key and value.strip().lower() == key.strip().lower())
    return not (is_placeholder(value, key) or is_reference_or_words(value, quoted))


_CLASS_RUNS = re.compile(rb"[A-Z]+|[a-z]+|[0-9]+|[^A-Za-z0-9]+")


def _flips(core: bytes) -> int:
    """How often the character class (upper, lower, digit, other) changes, plus one (C speed)."""
    return len(_CLASS_RUNS.findall(core))


def looks_random(tok: bytes) -> bool:
    """High-entropy blob check for one run of base64-alphabet bytes (mixed case; hex is not judged).

    Needs both letter cases, a long unbroken piece (paths, ``stack-Name-1A2B3C`` ids and
    ``snake_case`` names break into short pieces), frequent case/digit flips (CamelCase rarely flips)
    and a Shannon entropy near what random base64 of that length reaches (1st percentile).
    """
    core = tok.strip(b"=")
    n = len(core)
    if core.isupper():
        return False  # ULIDs, Crockford base32 ids, CONSTANT_NAMES: only provider rules judge these
    if n < 24 or core.islower():
        return looks_random_lower(core)
    longest = max(_PIECES.split(core), key=len)
    upper = len(core) - len(core.translate(None, _UPPER))
    if upper < 3:
        return False  # one or two capitals in lower-case text (``fBnetworkservices``: a roff font escape)
    if len(longest) < 16 or longest.islower() or longest.isupper():
        return False  # rec_01HZX3KQ9M8N7P6R5S4T (ULID), my-stack-Api-1A2B3C
    if n < 40 and not any(48 <= b <= 57 for b in core):
        return False  # CamelCaseIdentifiersWithoutDigits
    if _flips(core) < n * 0.3:
        return False
    return shannon_entropy(core) >= 0.82 * math.log2(min(n, 64))


def looks_random_lower(tok: bytes, min_len: int = 20) -> bool:
    """A one-case token of letters AND digits, well mixed: ``h9eco54ny4xb6xq8mrl86msar``.

    Hex digests (commit SHAs, sha256) never qualify: only letters a-f. Identifiers such as
    ``python311`` or ``mem00001234`` flip class once or twice; random draws flip every 2-3 chars.
    """
    core = tok.strip(b"=")
    if not core.islower():
        return False
    n = len(core)
    if n < min_len or n > 256 or not core.isalnum() or _HEX.match(core):
        return False
    digits = sum(1 for b in core if 48 <= b <= 57)
    if digits < 3 or n - digits < 6:
        return False
    if _flips(core) < max(6, n * 0.28):
        return False
    return shannon_entropy(core) >= 0.8 * math.log2(min(n, 36))


def token_like(value: bytes) -> bool:
    """Shaped like a generated credential: 16+ characters with no spaces, letters AND digits (hex
    and UUIDs included), or random by :func:`looks_random`; not a placeholder, word, path or version."""
    v = value.strip()
    if len(v) < 16 or b" " in v or is_placeholder(v) or is_reference_or_words(v, True):
        return False
    if looks_random(v) or looks_random_lower(v, 16):
        return True
    letters = len(v) - len(v.translate(None, _LETTERS))
    digits = len(v) - len(v.translate(None, _DIGIT_BYTES))
    return letters >= 4 and digits >= 4 and not is_wordy(v)


_PASSWORD_SYMBOLS = b"!@#$%^&*?~;,"


def password_like(value: bytes) -> bool:
    """Shaped like a person's password: 8-64 characters without white space, with upper and lower
    case letters, a digit and a symbol (``Zq8#Lm3$pw!x``, ``P@ss;w0rd!9``). What a bare ``secret:``
    or ``the password is`` discloses when it is not shaped like a generated token."""
    v = value.strip()
    if not 8 <= len(v) <= 64 or not v.isascii() or any(b in b" \t\n\r" for b in v):
        return False
    if v.translate(None, _PASSWORD_SYMBOLS) == v or is_placeholder(v):
        return False
    return v.lower() != v and v.upper() != v and v.translate(None, _DIGIT_BYTES) != v


def alnum_token(value: bytes) -> bool:
    """One unbroken word of 10+ letters and digits, at least 2 digits and 4 letters, not an
    identifier (``m8bgnrkuokcoyqqnqyccj51t``, ``cz80juk3z9i6fzq``): what ``the token is X`` or a bare
    ``KEY=X`` discloses. ``python311``, ``sha256``, ``v2``, ``ed25519`` are too short or wordy."""
    v = value.strip()
    if len(v) < 10 or len(v) > 128 or not v.isalnum() or not v.isascii() or is_placeholder(v):
        return False
    digits = len(v) - len(v.translate(None, _DIGIT_BYTES))
    if digits < 2 or len(v) - digits < 4 or _HEX.match(v) or is_wordy(v):
        return False
    return shannon_entropy(v) >= 3.0


def weak_value(value: bytes) -> bool:
    """For keyword-gated shapes (hex, digits, uuid next to "datadog", "discord"...): a stand-in."""
    v = value.strip()
    hexish = v.translate(None, b"-:").lower().strip(b"0123456789abcdef") == b""
    if hexish and v.lower() != v and v.upper() != v:
        return True  # hex is printed in one case: ``acdeFf05...`` is no generator's output
    # ``is_wordy`` finds identifiers; a hex value cannot spell one (``cafebabe:deadbeef`` are hex words)
    if is_placeholder(v, strict=False) or (not hexish and is_wordy(v)) or v.isalpha() or _ANY_RUN.search(v):
        return True
    if _UUID.match(v):
        return v.replace(b"-", b"").strip(b"0") == b""
    counts = sorted((v.count(b) for b in set(v)), reverse=True)
    return bool(counts) and counts[0] > len(v) * 0.5


_B62 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_UPPER = _B62[10:36]
_LETTERS = _B62[10:]
_DIGIT_BYTES = _B62[:10]


def crc32_base62_ok(token: bytes) -> bool:
    """GitHub/npm token checksum: the last 6 characters are the base62 CRC32 of the 30 before them."""
    body = token.split(b"_", 1)[-1]
    if len(body) != 36:
        return False
    value = zlib.crc32(body[:30])
    out = bytearray()
    while value:
        value, rem = divmod(value, 62)
        out.insert(0, _B62[rem])
    return bytes(out).rjust(6, b"0") == body[30:]
