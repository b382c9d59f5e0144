"""The scrub gate: find secrets in memory records, knowledge files and skill bodies. Fail closed.

Every string (object keys and values at any depth) is scanned; any block finding blocks the whole
bundle, nothing is ever redacted silently. A report names the rule, where (record id + JSON path, or
file) and the byte offset into the UTF-8 encoding of that string, never the secret or any part of it.

How it is fast without being one regex per rule: the text is scanned as UTF-8 bytes by a fixed set
of C-speed passes (``bytes.find`` loops and regexes whose first item is one literal byte, so the
regex engine skips with ``memchr``), each pass a *trigger* for a group of rules. Only a trigger hit
costs Python work: the precise rule regex is run on a small window around it. Long token runs (the
entropy rule) are found on a translated copy of the bytes. Many strings are scanned in one pass by
joining them with NUL, which no rule can match across. All patterns compile once, at first use.

What the gate does NOT stop (by design, documented so nobody relies on it):
- a secret that is split, encoded (base32/rot13/hex without a secret-like name), spelled out,
  or a dictionary-word password (``password=dragon`` reads as prose and passes);
- a secret with no known prefix, shorter than 24 characters and not assigned to a secret-like name;
- case-insensitive matching of forbidden literals folds ASCII letters only.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

BLOCK = "block"
WARN = "warn"

# Strings shorter than this cannot hold a block finding (the shortest is ``pwd=abcd``).
MIN_SECRET_LEN = 8
# A run of token characters at least this long is checked by the entropy rule.
MIN_ENTROPY_RUN = 24
_RUN_PROBE = MIN_ENTROPY_RUN  # shorter runs can never yield a finding (AWS secrets are 40)

_SEP = b"\x00"  # joins many strings into one buffer; every pattern refuses to match it


@dataclass(frozen=True)
class Finding:
    """One hit: the rule id, where it is and the byte offset. Never the secret itself."""

    rule: str
    location: str
    path: str
    offset: int
    severity: str = BLOCK

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "location": self.location,
            "path": self.path,
            "offset": self.offset,
            "severity": self.severity,
        }


@dataclass
class ScrubReport:
    """The gate's verdict: ``blocked`` is true when any block finding exists."""

    blocked: bool = False
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocked": self.blocked,
            "findings": [f.to_dict() for f in self.findings],
            "warnings": [w.to_dict() for w in self.warnings],
        }

    def extend(self, found: Iterable[Finding]) -> None:
        for finding in found:
            if finding.severity == BLOCK:
                self.findings.append(finding)
                self.blocked = True
            else:
                self.warnings.append(finding)


# --------------------------------------------------------------------------------------------------
# Rules. Each structural rule is a named group of ONE regex; the group name maps to the rule id.

_STRUCT_SRC = rb"""
(?<![A-Za-z0-9])(?:
 (?P<aws_access_key_id>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16})(?![A-Za-z0-9])
|(?P<github_fine_grained_pat>github_pat_[A-Za-z0-9_]{22,})
|(?P<github_token>gh[pousr]_[A-Za-z0-9]{36,})
|(?P<gitlab_token>glpat-[A-Za-z0-9_-]{20,})
|(?P<slack_token>xox[abposr]-[A-Za-z0-9-]{10,})
|(?P<google_api_key>AIza[0-9A-Za-z_-]{35})
|(?P<jwt>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)
|(?P<stripe_secret_key>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,})
|(?P<anthropic_api_key>sk-ant-[A-Za-z0-9_-]{20,})
|(?P<openai_api_key>sk-(?:proj-|svcacct-|admin-|None-)[A-Za-z0-9_-]{20,}
   |sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|sk-[A-Za-z0-9]{32,}(?![A-Za-z0-9_-]))
|(?P<npm_token>npm_[A-Za-z0-9]{36})
|(?P<pypi_token>pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{16,})
|(?P<sendgrid_api_key>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})
|(?P<twilio_api_key>SK[0-9a-fA-F]{32})(?![A-Za-z0-9])
|(?P<huggingface_token>hf_[A-Za-z0-9]{34})
|(?P<digitalocean_token>do[por]_v1_[a-f0-9]{64})
|(?P<shopify_token>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})
|(?P<databricks_token>dapi[a-f0-9]{32})
|(?P<vault_token>hv[sb]\.[A-Za-z0-9_-]{24,})
|(?P<age_secret_key>AGE-SECRET-KEY-1[0-9A-Z]{58})
|(?P<heroku_api_key>HRKU-[A-Za-z0-9_-]{20,})
|(?P<azure_client_secret>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})
|(?P<private_key>-----BEGIN[ A-Z0-9]{0,40}PRIVATE\ KEY-----)
|(?P<pgp_private_key>-----BEGIN\ PGP\ PRIVATE\ KEY\ BLOCK-----)
|(?P<putty_private_key>PuTTY-User-Key-File-[0-9]+:)
)
|(?P<slack_webhook>hooks\.slack\.com/services/[A-Za-z0-9_/]{8,})
"""

# Trigger passes over the raw bytes. Each regex starts with one literal byte (memchr-fast); the
# lookarounds pick the few places worth a window search with the structural regex.
_TRIGGER_SRC = (
    rb"_(?:(?<=gh[pousr]_)|(?<=github_pat_)|(?<=[sr]k_live_)|(?<=sk_test_)|(?<=npm_)|(?<=hf_)"
    rb"|(?<=_v1_)|(?<=shp[a-z][a-z]_))",
    rb"-(?:(?<=glpat-)|(?<=xox[abposr]-)|(?<=pypi-)|(?<=HRKU-)|(?<=KEY-)|(?<=sk-)(?<![A-Za-z0-9]sk-))",
    rb"\.(?:(?<=SG\.)|(?<=hvs\.)|(?<=hvb\.)|(?<=hooks\.))",
    rb"A(?:KIA|SIA|BIA|CCA|3T|Iza|GE-SECRET)",
    rb"SK[0-9a-fA-F]{32}",
)
# Plain literal triggers: ``bytes.find`` (two-way search) beats the regex engine on these.
_TRIGGER_LITERALS = (b"dapi", b"eyJ", b"Q~", b"PRIVATE KEY", b"PuTTY-User-Key-File-")
_WINDOW_BEFORE = 48
_WINDOW_AFTER = 800

_STRUCT_RULE_IDS = {
    "aws_access_key_id": "aws-access-key-id",
    "github_fine_grained_pat": "github-fine-grained-pat",
    "github_token": "github-token",
    "gitlab_token": "gitlab-token",
    "slack_token": "slack-token",
    "google_api_key": "google-api-key",
    "jwt": "jwt",
    "stripe_secret_key": "stripe-secret-key",
    "anthropic_api_key": "anthropic-api-key",
    "openai_api_key": "openai-api-key",
    "npm_token": "npm-token",
    "pypi_token": "pypi-token",
    "sendgrid_api_key": "sendgrid-api-key",
    "twilio_api_key": "twilio-api-key",
    "huggingface_token": "huggingface-token",
    "digitalocean_token": "digitalocean-token",
    "shopify_token": "shopify-token",
    "databricks_token": "databricks-token",
    "vault_token": "vault-token",
    "age_secret_key": "age-secret-key",
    "heroku_api_key": "heroku-api-key",
    "azure_client_secret": "azure-client-secret",
    "private_key": "private-key",
    "pgp_private_key": "pgp-private-key",
    "putty_private_key": "putty-private-key",
    "slack_webhook": "slack-webhook",
}

#: Every rule id the gate can report (block rules first, then the warning rule).
RULE_IDS: tuple[str, ...] = (
    *_STRUCT_RULE_IDS.values(),
    "aws-secret-access-key",
    "uri-credentials",
    "secret-assignment",
    "high-entropy",
    "forbidden-literal",
    "home-path",
)

# Secret-like names: the assigned NAME must END with one of these words (``db_password``,
# ``GITHUB_TOKEN``, ``client_secret``, ``api_key``), so ``max_tokens``, ``token_bucket`` and
# ``password_hash`` do not count. Matched on the lowercased bytes; each stem is its own literal-prefix
# regex so the engine skips ahead with memchr.
_KW_STEMS = (b"pass", b"pwd", b"secret", b"token", b"key", b"auth", b"cred")
_KW_TAIL = rb"""(?:(?<=pass)(?:word|wd|phrase)?|(?<=pwd)|(?<=secret)|(?<=token)|(?<=key)|(?<=auth)
    |(?<=cred)(?:s|entials?)?)(?![a-z0-9])["']?\s*[:=]"""
_KW_NAME_BACK = re.compile(rb"[A-Za-z0-9_.-]{0,64}\Z")
_KW_NAME_OK = re.compile(
    rb"""(?:^|[_.-])(?:[a-z0-9]*(?:password|passwd|passphrase|pwd|pass|secret|token|auth|creds?
    |credentials?)|(?:api|apikey|secret|private|access|client|signing|encryption|master|auth
    |account|app|service|license|session|webhook|deploy|ssh|gpg|storage|x-api)[_.-]?key|apikey)$""",
    re.X,
)
_KW_VALUE = re.compile(rb"""\s*(?:"([^"\x00\n]*)"?|'([^'\x00\n]*)'?|([^\s"',;\x00]*))""")

_URI_CRED = re.compile(
    rb"[A-Za-z][A-Za-z0-9+.-]{0,30}://([^\s/?#@:\"'<>\x00]{1,256}):([^\s/?#@\"'<>\x00]{1,256})@\Z"
)
_URI_PLACEHOLDER = re.compile(
    rb"^(?:\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|<[^>]*>|\{\{?[^}]*\}\}?|%s|%\([a-z_]+\)s|\*+)$"
)
_HOME = re.compile(
    rb"(?:/home/|/Users/|[A-Za-z]:\\Users\\)[A-Za-z0-9._-]{1,64}|~/",
)
# One pass for both slash forms (a literal-first regex: the engine skips to each "/"); the lookahead
# keeps the match one byte long, so overlapping occurrences are all found, as with ``bytes.find``.
_HOME_SLASH = re.compile(rb"/(?=home/|Users/)")

_AWS_CONTEXT = re.compile(rb"aws|secret.?access|secretaccess", re.I)

_PLACEHOLDER_WORDS = frozenset(
    b"""changeme change_me change-me redacted placeholder example sample dummy none null nil
    undefined empty todo tbd fixme secret password token xxx your_token your_password hidden
    masked omitted notset not_set unset required optional string str bytes int""".split()
)
_PLACEHOLDER = re.compile(
    rb"""^(?:<[^>]*>?|\$\{[^}]*\}?|\$\(.*|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*|%\(?[a-z_]*\)?s|\[.*\]
    |(.)\1*|\.\.\.+.*|[Yy]our[_ -].*|REPLACE[_-]?ME.*|<?redacted>?|\*+.*)$""",
    re.X | re.S,
)
_CODE_REF = re.compile(
    rb"""^(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(.*|\[.*)?
    |[A-Za-z_][A-Za-z0-9_]*\(.*|[A-Za-z_][A-Za-z0-9_]*\[.*|(?:arn|ssm|vault|secretsmanager|op|env)
    :.*|[a-z]+://.*|~?\.{0,2}/.*)$""",
    re.X | re.S,
)
_WORDS = re.compile(rb"^[A-Za-z][a-z]*(?:[ _-][A-Za-z]?[a-z]*)*[.!?]?$")
_DIGITS = re.compile(rb"^[0-9]+$")
_PATHLIKE = re.compile(rb"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?$")
_PIECES = re.compile(rb"[-_/]")

_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"


class _Compiled:
    """All compiled state, built once on first use (module import stays cheap)."""

    def __init__(self) -> None:
        self.struct = re.compile(_STRUCT_SRC, re.X)
        self.triggers = [re.compile(src, re.X) for src in _TRIGGER_SRC]
        self.keywords = [re.compile(re.escape(stem) + _KW_TAIL, re.X) for stem in _KW_STEMS]
        table = bytearray(b" " * 256)
        for byte in _RUN_CHARS:
            table[byte] = ord("a")
        self.run_table = bytes(table)
        self.run_probe = b"a" * _RUN_PROBE


_compiled: _Compiled | None = None


def _rules() -> _Compiled:
    global _compiled
    if _compiled is None:
        _compiled = _Compiled()
    return _compiled


_forbidden_cache: dict[tuple[str, ...], re.Pattern[bytes] | None] = {}


def _forbidden_pattern(forbidden: Sequence[str]) -> re.Pattern[bytes] | None:
    key = tuple(forbidden)
    if key in _forbidden_cache:
        return _forbidden_cache[key]
    literals = sorted(
        {lit.lower().encode("utf-8") for lit in forbidden if lit and lit.strip() and "\x00" not in lit},
        key=len,
        reverse=True,
    )
    pattern = re.compile(b"|".join(re.escape(lit) for lit in literals)) if literals else None
    if len(_forbidden_cache) > 64:
        _forbidden_cache.clear()
    _forbidden_cache[key] = pattern
    return pattern


# --------------------------------------------------------------------------------------------------
# Value judgements


def shannon_entropy(data: bytes) -> float:
    """Bits per symbol of ``data``; random base64 sits near 5-6, words and paths near 3.5-4."""
    if not data:
        return 0.0
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in (data.count(b) for b in set(data)))


def _looks_random(tok: bytes) -> bool:
    """High-entropy blob check for one run of base64-alphabet bytes (hex is NOT judged here).

    Needs both letter cases, a long unbroken piece (paths, ``stack-Name-1A2B3C`` ids and
    ``snake_case`` names break into short pieces), frequent case/digit flips (CamelCase rarely flips)
    and a Shannon entropy near what random base64 of that length reaches (1st percentile).
    """
    core = tok.strip(b"=")
    n = len(core)
    if n < MIN_ENTROPY_RUN or core.islower() or core.isupper():
        return False  # hex digests, paths, CONSTANT_NAMES never qualify
    longest = max(_PIECES.split(core), key=len)
    if len(longest) < 16 or longest.islower() or longest.isupper():
        return False  # rec_01HZX3KQ9M8N7P6R5S4T (ULID), my-stack-Api-1A2B3C
    if n < 40 and not any(48 <= b <= 57 for b in core):
        return False  # CamelCaseIdentifiersWithoutDigits
    flips = 0
    prev = 0
    for b in core:
        cls = 1 if 65 <= b <= 90 else 2 if 97 <= b <= 122 else 3 if 48 <= b <= 57 else 4
        if cls != prev:
            flips += 1
            prev = cls
    if flips < n * 0.3:
        return False
    return shannon_entropy(core) >= 0.82 * math.log2(min(n, 64))


def _is_secret_value(value: bytes, quoted: bool) -> bool:
    """Decide whether the value assigned to a secret-like name is a literal secret.

    Not secrets: empty/short values, placeholders (``<...>``, ``${VAR}``, ``xxx``, ``changeme``),
    references to code or stores (``os.environ[...]``, ``settings.X``, ``arn:...``, URLs, paths),
    and plain words (``secret: see vault``). A dictionary-word password is NOT stopped by this rule.
    """
    value = value.strip()
    if not quoted:
        value = value.rstrip(b").,;:]}>")
    if len(value) < 4:
        return False
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or _PLACEHOLDER.match(value) or _CODE_REF.match(value):
        return False
    if _WORDS.match(value):
        return False  # one or more plain words, e.g. "see vault", "rotated", "str"
    if quoted and b" " in value and all(_WORDS.match(w) for w in value.split()):
        return False
    if _DIGITS.match(value) and len(value) < 6:
        return False
    if _PATHLIKE.match(value) and max(len(p) for p in value.split(b"/")) < 16:
        return False  # a store path or name: prod/db/password, secret/data/app
    return True


# --------------------------------------------------------------------------------------------------
# The engine: returns (rule, start, end, severity) spans over ``buf``.

_Span = tuple[str, int, int, str]
_GENERIC = frozenset({"secret-assignment", "high-entropy", "aws-secret-access-key"})


def _scan_bytes(buf: bytes, forbidden: re.Pattern[bytes] | None = None) -> list[_Span]:
    n = len(buf)
    spans: list[_Span] = []
    if n < 2:
        return spans
    if n >= 2 and (b"/" in buf or b"\\" in buf):
        _scan_home(buf, spans)
    low = buf.lower()
    if forbidden is not None:
        for m in forbidden.finditer(low):
            spans.append(("forbidden-literal", m.start(), m.end(), BLOCK))
    if n < MIN_SECRET_LEN:
        return spans
    rules = _rules()
    seen: set[tuple[str, int]] = set()
    struct_search = rules.struct.search
    # 1. structural rules, via trigger passes and a window search around each hit
    for t in _trigger_positions(buf, rules):
        lo = t - _WINDOW_BEFORE if t > _WINDOW_BEFORE else 0
        hi = t + _WINDOW_AFTER
        pos = lo
        while True:
            sm = struct_search(buf, pos, hi)
            if sm is None or sm.start() > t + 16:
                break
            rule = _STRUCT_RULE_IDS[sm.lastgroup or ""]
            key = (rule, sm.start())
            if key not in seen:
                seen.add(key)
                spans.append((rule, sm.start(), sm.end(), BLOCK))
            pos = sm.end()
    # 2. credentials in URIs: scheme://user:pass@
    at = buf.find(b"@")
    while at >= 0:
        _check_uri(buf, at, spans)
        at = buf.find(b"@", at + 1)
    # 3. secret-like NAME = value
    _scan_keywords(buf, low, rules, spans)
    # 4. long runs: AWS secret keys in context, other high-entropy blobs
    _scan_runs(buf, rules, spans)
    return _dedupe(spans)


def _scan_keywords(buf: bytes, low: bytes, rules: _Compiled, spans: list[_Span]) -> None:
    """Every keyword match (``kw.finditer(low)``), found by matching at each start of its stem:
    bytes.find skips to a stem ~25% faster than the regex engine, and no match holds another start
    of its own stem (tails, quotes, blanks and ``:=`` never spell one), so the matches are the same."""
    for kw, stem in zip(rules.keywords, _KW_STEMS, strict=True):
        match = kw.match
        for i in _find_all(low, stem):
            m = match(low, i)
            if m is not None:
                _check_assignment(buf, i, m.end(), spans)


def _trigger_positions(buf: bytes, rules: _Compiled) -> Iterator[int]:
    for trigger in rules.triggers:
        for m in trigger.finditer(buf):
            yield m.start()
    for literal in _TRIGGER_LITERALS:
        yield from _find_all(buf, literal)


# Bytes that plain text seldom holds. ``byte in buf`` is a memchr, ~10x cheaper than searching for a
# longer needle, so a needle holding one of these is not searched for at all when that byte is absent.
_RARE_BYTES = b"~\\"


def _find_all(buf: bytes, needle: bytes, step: int = 1) -> Iterator[int]:
    """Start of every occurrence of ``needle`` (the next search begins ``step`` bytes further)."""
    for byte in needle:
        if byte in _RARE_BYTES and byte not in buf:
            return
    find = buf.find
    i = find(needle)
    while i >= 0:
        yield i
        i = find(needle, i + step)


def _scan_home(buf: bytes, spans: list[_Span]) -> None:
    for slash in _HOME_SLASH.finditer(buf):
        m = _HOME.match(buf, slash.start())
        if m is not None:
            spans.append(("home-path", slash.start(), m.end(), WARN))
    for i in _find_all(buf, b"\\Users\\"):
        start = i - 2 if i >= 2 else i
        m = _HOME.match(buf, start)
        if m is not None:
            spans.append(("home-path", start, m.end(), WARN))
    for i in _find_all(buf, b"~/", 2):
        if i == 0 or buf[i - 1] in b" \t\n\"'`(=:\x00[{,":
            spans.append(("home-path", i, i + 2, WARN))


def _check_uri(buf: bytes, at: int, spans: list[_Span]) -> None:
    lo = max(0, at - 560)
    scheme = buf.rfind(b"://", lo, at)
    if scheme < 0:
        return
    start = scheme
    while start > lo and (buf[start - 1 : start].isalnum() or buf[start - 1] in b"+.-"):
        start -= 1
    m = _URI_CRED.match(buf, start, at + 1)
    if m is None:
        return
    password = m.group(2)
    if _is_uri_placeholder(password):
        return
    spans.append(("uri-credentials", m.start(2), m.end(2), BLOCK))


def _is_uri_placeholder(password: bytes) -> bool:
    """Template syntax only: ``${PASS}``, ``$PASS``, ``<password>``, ``{pw}``, ``%s``, ``***``.

    ``user:password@`` and ``user:pass@`` still block: fail closed prefers a false alarm.
    """
    return bool(
        re.match(
            rb"^(?:\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|<[^>]*>|\{\{?[^}]*\}\}?|%s|%\([a-z_]+\)s|\*+)$",
            password,
        )
    )


def _secret_name(name: bytes) -> bool:
    """Whether a NAME (its last 64 name characters, lowercased) ends with a secret-like word."""
    m = _KW_NAME_BACK.search(name.rstrip(b" \t\"'"))
    tail = m.group(0).lower().lstrip(b"._-") if m else b""
    return bool(tail and _KW_NAME_OK.search(tail))


def _check_assignment(buf: bytes, stem_start: int, op_end: int, spans: list[_Span]) -> None:
    back = _KW_NAME_BACK.search(buf, max(0, stem_start - 64), stem_start)
    name_start = back.start() if back else stem_start
    op = op_end - 1
    name_end = op
    while name_end > stem_start and buf[name_end - 1] in b" \t\"'":
        name_end -= 1
    if not _secret_name(buf[name_start:name_end]):
        return
    vm = _KW_VALUE.match(buf, op_end)
    if vm is None:
        return
    if vm.group(1) is not None:
        value, quoted, vstart = vm.group(1), True, vm.start(1)
    elif vm.group(2) is not None:
        value, quoted, vstart = vm.group(2), True, vm.start(2)
    else:
        value, quoted, vstart = vm.group(3) or b"", False, vm.start(3)
    if not _is_secret_value(value, quoted):
        return
    rule = "secret-assignment"
    if len(value) == 40 and _AWS_CONTEXT.search(buf[name_start:name_end]):
        rule = "aws-secret-access-key"
    spans.append((rule, vstart, vstart + len(value), BLOCK))


def _scan_runs(buf: bytes, rules: _Compiled, spans: list[_Span]) -> None:
    tr = buf.translate(rules.run_table)
    find = tr.find
    probe = rules.run_probe
    end = len(tr)
    pos = find(probe)
    while pos >= 0:
        stop = find(b" ", pos + _RUN_PROBE)
        if stop < 0:
            stop = end
        tok = buf[pos:stop]
        if not (tok.islower() or tok.isupper()):
            _check_run(buf, tok, pos, spans)
        pos = find(probe, stop)


def _check_run(buf: bytes, tok: bytes, pos: int, spans: list[_Span]) -> None:
    # A run may be NAME=VALUE glued together; judge the part after the last '=' that is not padding.
    head = tok.rstrip(b"=")
    cut = head.rfind(b"=") + 1
    core = head[cut:]
    start = pos + cut
    if len(core) == 40 and b"_" not in core and b"-" not in core:
        ctx = buf[max(0, start - 64) : start]
        if _AWS_CONTEXT.search(ctx) and core.strip(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != b"":
            spans.append(("aws-secret-access-key", start, start + 40, BLOCK))
            return
    if len(core) >= MIN_ENTROPY_RUN and _looks_random(core):
        spans.append(("high-entropy", start, start + len(core), BLOCK))


def _dedupe(spans: list[_Span]) -> list[_Span]:
    """Drop repeats, and generic hits (assignment, entropy) on a secret a specific rule named."""
    if len(spans) < 2:
        return spans
    spans.sort(key=lambda sp: (sp[1], sp[0]))
    specific = [(s, e) for rule, s, e, sev in spans if sev == BLOCK and rule not in _GENERIC]
    aws = [(s, e) for rule, s, e, _ in spans if rule == "aws-secret-access-key"]
    out: list[_Span] = []
    seen: set[tuple[str, int]] = set()
    for span in spans:
        rule, s, e, _ = span
        if (rule, s) in seen:
            continue
        if rule in _GENERIC and _overlaps(specific, s, e):
            continue  # a specific rule already names this secret
        if rule == "high-entropy" and _overlaps(aws, s, e):
            continue
        seen.add((rule, s))
        out.append(span)
    return out


def _overlaps(sorted_spans: list[tuple[int, int]], s: int, e: int) -> bool:
    # sorted_spans is sorted by start; secrets are at most a few KB, so look back a bounded amount
    i = bisect.bisect_left(sorted_spans, (e, -1))
    while i > 0:
        i -= 1
        ss, se = sorted_spans[i]
        if se > s:
            return True
        if ss < s - 8192:
            break
    return False


# --------------------------------------------------------------------------------------------------
# Public API


def scan_text(
    text: str, location: str = "text", path: str = "", forbidden: Sequence[str] = ()
) -> list[Finding]:
    """Scan one string; offsets are byte offsets into its UTF-8 encoding."""
    pattern = _forbidden_pattern(forbidden) if forbidden else None
    buf = text.encode("utf-8", "surrogatepass")
    return [Finding(rule, location, path, start, sev) for rule, start, _e, sev in _scan_bytes(buf, pattern)]


def _walk(value: Any, path: str, out: list[tuple[str, str]], kv: list[tuple[str, str, str]]) -> None:
    """Collect (path, string) for every key and string value, plus (path, key, value) pairs."""
    if isinstance(value, str):
        out.append((path, value))
    elif isinstance(value, dict):
        for key, item in value.items():
            sub = _child_path(path, str(key))
            if isinstance(key, str):
                out.append((sub, key))
                if isinstance(item, str):
                    kv.append((sub, key, item))
            _walk(item, sub, out, kv)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", out, kv)


def _child_path(path: str, key: str) -> str:
    if key.isidentifier() and key.isascii():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _record_location(record: Any) -> str:
    rid = record.get("id") if isinstance(record, dict) else None
    return f"record:{rid}" if isinstance(rid, str | int) and not isinstance(rid, bool) else "record:?"


_KEY_CACHE: dict[str, bool] = {}


def _secret_key(key: str) -> bool:
    known = _KEY_CACHE.get(key)
    if known is None:
        known = _secret_name(key.encode("utf-8", "surrogatepass"))
        if len(_KEY_CACHE) < 4096:
            _KEY_CACHE[key] = known
    return known


def _collect(value: Any, out: list[str], kv: list[int]) -> None:
    """Append every key and string value in ``_walk`` order (no paths: they are built lazily).

    ``kv`` gets the index of each key whose name is secret-like and whose value is a literal secret
    string (``{"db_password": "..."}``), a finding at that key's path.
    """
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                if isinstance(item, str) and len(item) >= 4 and _secret_key(key):
                    if _is_secret_value(item.encode("utf-8", "surrogatepass"), True):
                        kv.append(len(out))
                out.append(key)
            _collect(item, out, kv)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, out, kv)


class _Batch:
    """Many strings scanned in one NUL-joined buffer; findings map back to (location, path, offset)."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.owners: list[tuple[int, str, Any]] = []  # (first string index, location, record or None)
        self.kv: list[int] = []

    def add_record(self, record: Any, location: str) -> None:
        self.owners.append((len(self.strings), location, record))
        _collect(record, self.strings, self.kv)

    def add_text(self, location: str, text: str) -> None:
        self.owners.append((len(self.strings), location, None))
        self.strings.append(text)

    def scan(self, pattern: re.Pattern[bytes] | None) -> list[Finding]:
        hits: list[tuple[int, str, int, str]] = [(i, "secret-assignment", 0, BLOCK) for i in self.kv]
        hits.extend(self._scan_spans(pattern))
        if not hits:
            return []
        starts = [o[0] for o in self.owners]
        paths: dict[int, list[str]] = {}
        findings: list[Finding] = []
        seen: set[tuple[int, str]] = set()
        for index, rule, offset, sev in sorted(hits):
            if rule == "secret-assignment" and offset == 0 and (index, rule) in seen:
                continue
            seen.add((index, rule))
            owner = bisect.bisect_right(starts, index) - 1
            first, location, record = self.owners[owner]
            if record is None:
                path = ""
            else:
                if owner not in paths:
                    walked: list[tuple[str, str]] = []
                    _walk(record, "$", walked, [])
                    paths[owner] = [p for p, _ in walked]
                path = paths[owner][index - first]
            findings.append(Finding(rule, location, path, offset, sev))
        return findings

    def _scan_spans(self, pattern: re.Pattern[bytes] | None) -> list[tuple[int, str, int, str]]:
        strings = self.strings
        if not strings:
            return []
        buf = "\x00".join(strings).encode("utf-8", "surrogatepass")
        if buf.count(_SEP) != len(strings) - 1:  # some string holds a NUL: scan one by one
            out: list[tuple[int, str, int, str]] = []
            for i, text in enumerate(strings):
                enc = text.encode("utf-8", "surrogatepass")
                out.extend((i, r, s, sev) for r, s, _e, sev in _scan_bytes(enc, pattern))
            return out
        spans = _scan_bytes(buf, pattern)
        if not spans:
            return []
        out = []
        for rule, s, _e, sev in spans:
            index = buf.count(_SEP, 0, s) if len(spans) < 64 else -1
            if index < 0:
                break
            start = buf.rfind(_SEP, 0, s) + 1
            out.append((index, rule, s - start, sev))
        else:
            return out
        # many findings: index every separator once
        seps = [m.start() for m in re.finditer(b"\x00", buf)]
        out = []
        for rule, s, _e, sev in spans:
            index = bisect.bisect_left(seps, s)
            start = seps[index - 1] + 1 if index else 0
            out.append((index, rule, s - start, sev))
        return out


def scan_record(record: dict[str, Any], forbidden: Sequence[str] = ()) -> list[Finding]:
    """Scan every key and string value of one record at any depth (location ``record:<id>``)."""
    batch = _Batch()
    batch.add_record(record, _record_location(record))
    return batch.scan(_forbidden_pattern(forbidden) if forbidden else None)


def scan_bundle(
    records: Iterable[dict[str, Any]],
    knowledge: Iterable[tuple[str, str]] = (),
    skills: Iterable[tuple[str, str]] = (),
    forbidden: Sequence[str] = (),
) -> ScrubReport:
    """Scan a whole bundle: every record, every knowledge markdown file and every skill body."""
    batch = _Batch()
    for record in records:
        batch.add_record(record, _record_location(record))
    for file_path, body in knowledge:
        batch.add_text(f"file:{file_path}", body)
    for file_path, body in skills:
        batch.add_text(f"file:{file_path}", body)
    report = ScrubReport()
    report.extend(batch.scan(_forbidden_pattern(forbidden) if forbidden else None))
    return report


def _files(value: Any) -> Iterator[tuple[str, str]]:
    """Knowledge/skills given as {path: body}, [{path, body|content}] or [[path, body]]."""
    if isinstance(value, dict):
        for key, body in value.items():
            yield str(key), body if isinstance(body, str) else _as_text(body)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                name = item.get("path") or item.get("name") or f"[{index}]"
                body = item.get("body", item.get("content", item.get("markdown")))
                yield str(name), body if isinstance(body, str) else _as_text(item)
            elif isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[1], str):
                yield str(item[0]), item[1]
            else:
                yield f"[{index}]", _as_text(item)


def _as_text(value: Any) -> str:
    # Unknown shapes are still scanned (fail closed): every string inside, one per line.
    strings: list[tuple[str, str]] = []
    _walk(value, "$", strings, [])
    return "\n".join(s for _, s in strings)


def scan_any(doc: Any, forbidden: Sequence[str] = ()) -> ScrubReport:
    """CLI entry: a bundle dict, a JSON array of records, plain text, or any other JSON value."""
    if isinstance(doc, str):
        report = ScrubReport()
        report.extend(scan_text(doc, "text", "", forbidden))
        return report
    if isinstance(doc, list):
        return scan_bundle([r if isinstance(r, dict) else {"value": r} for r in doc], forbidden=forbidden)
    if isinstance(doc, dict) and ("records" in doc or "knowledge" in doc or "skills" in doc):
        records = doc.get("records") or []
        if not isinstance(records, list):
            records = [records]
        rest = {k: v for k, v in doc.items() if k not in ("records", "knowledge", "skills")}
        report = scan_bundle(
            [r if isinstance(r, dict) else {"value": r} for r in records],
            _files(doc.get("knowledge") or []),
            _files(doc.get("skills") or []),
            forbidden,
        )
        if rest:  # other top-level fields of the bundle are scanned too
            batch = _Batch()
            batch.add_record(rest, "bundle")
            report.extend(batch.scan(_forbidden_pattern(forbidden) if forbidden else None))
        return report
    if isinstance(doc, dict):
        return scan_bundle([doc], forbidden=forbidden)
    report = ScrubReport()
    if doc is not None:
        report.extend(scan_text(str(doc), "text", "", forbidden))
    return report


def scan_raw_json_fast(data: bytes, forbidden: Sequence[str] = ()) -> bool:
    """True when ``data`` (a JSON or text file) provably holds nothing the gate would report.

    Sound shortcut for the CLI: when the bytes hold no backslash, every JSON string is a verbatim
    substring of the file delimited by quotes, which no rule treats differently from a string edge,
    so a clean raw scan means a clean per-string scan. Any hit (or any backslash) returns False and
    the caller does the full parse-and-locate scan.
    """
    if b"\\" in data:
        return False
    pattern = _forbidden_pattern(forbidden) if forbidden else None
    return not _scan_bytes(data, pattern)


def split_raw_json(data: bytes, parts: int) -> list[tuple[int, int]]:
    """Cut backslash-free JSON bytes into ``parts`` ranges that keep every string and every
    ``"key": value`` pair whole, so each range can go through :func:`scan_raw_json_fast` alone.

    A cut is placed just before an opening quote that is outside any string (an even number of
    quotes before it: without backslashes a string cannot hold a quote) and follows ``,``, ``[`` or
    ``{``, i.e. starts a member or an element, never a value after ``:``.
    """
    n = len(data)
    if parts < 2 or b"\\" in data:
        return [(0, n)]
    cuts = [0]
    for k in range(1, parts):
        q = data.find(b'"', max(cuts[-1] + 1, n * k // parts))
        while q > 0:
            prev = q - 1
            while prev >= 0 and data[prev] in b" \t\r\n":
                prev -= 1
            if prev >= 0 and data[prev] in b",[{" and data.count(b'"', 0, q) % 2 == 0:
                cuts.append(q)
                break
            q = data.find(b'"', q + 1)
    cuts.append(n)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
