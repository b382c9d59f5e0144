"""Rules that know no provider: a secret-like NAME given a literal value, credentials in URLs, long
random runs, home paths. Each runs from a C-speed search (``bytes.find`` / one RE2 pass) and judges
only what that search found, on bounded windows (names <= 64 bytes, values <= 512 bytes).

What these do NOT stop: a dictionary-word password (``password=dragon`` reads as a word and passes),
a secret with no format, shorter than 20 characters and not assigned to a secret-like name.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from acx.core.scrub import judge

BLOCK = "block"
WARN = "warn"
Span = tuple[str, int, int, str]
VALUE_CAP = 512

# Secret-like names: the assigned NAME must END with one of these words (``db_password``,
# ``GITHUB_TOKEN``, ``client_secret``, ``api_key``), so ``max_tokens``, ``token_bucket`` and
# ``password_hash`` do not count. Matched on the lowercased bytes.
# ``signature``/``sig`` are not here: a signature is the output of a key, sent in the clear by design
# (a presigned URL's ``sig=`` is the Azure SAS rule's job).
KW_STEMS = (b"pass", b"pwd", b"secret", b"token", b"key", b"auth", b"cred", b"pat")
# After the stem: its allowed tails, the rest of the name, then an assignment operator in any of
# the usual syntaxes (``=``, ``:``, ``:=``, ``=>``, ``?=``, ``.=``, ``::=``, ``||=``), a
# ``setProperty("NAME", value)`` comma, an XML element's ``>``, or prose (``token is``).
_KW_TAIL = rb"""(?:(?<=pass)(?:word|wd|phrase)?|(?<=pwd)|(?<=secret)s?|(?<=token)s?|(?<=key)s?|(?<=auth)
    |(?<=cred)(?:s|entials?)?|(?<=pat))(?![a-z0-9])["'>\]`]{0,2}[ \t]{0,4}
    (?P<op>={1,3}>?|:{1,3}=?|\?=|\.=|\|\|=|\|(?=[ \t])|,(?=[ \t]{0,4}["'])|>|\((?=["'])
    |[ \t](?:is|was|are)[ \t]|[ \t]\((?=[^ ])|[ \t]+(?:string|String|str|\[\]byte|char\*?)[ \t]{0,3}:?=
    |[ \t]*\r?\n[ \t]*value:)"""
KW_NAME_BACK = re.compile(rb"[A-Za-z0-9_.-]{0,64}\Z")
_NAME_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_KW_NAME_OK = re.compile(
    rb"""(?:^|[_.-])(?:[a-z0-9]*(?:password|passwd|passphrase|pwd|pass|secrets?|tokens?|auth|creds?
    |credentials?)|(?:api|apikey|secret|private|access|client|signing|encryption|master
    |auth|account|app|service|license|session|webhook|deploy|ssh|gpg|storage|x-api|consumer|user
    |admin|bot|bearer|refresh|oauth|pat|sas|shared|root|db|database|redis|smtp|mail)[_.-]?keys?
    |apikey|pat)$|^keys?$""",
    re.X,
)
_KW_VALUE = re.compile(
    rb"""[ \t]{0,8}(?:\r?\n[ \t]{0,40})?(?:\\?"([^"\x00\n\\]{0,512})\\?"?|'([^'\x00\n]{0,512})'?
    |`([^`\x00\n]{0,512})`?|([^\s"'`<\x00]{0,512}))""",
    re.X,
)
_NEXT_PAIR = re.compile(rb"[,;&][A-Za-z_][A-Za-z0-9_.-]{0,64}[=:]")
BARE = re.compile(rb"^(?:key|keys|token|tokens|secret|secrets|auth|pass|pat|credentials?|creds?)$")
_AWS_CONTEXT = re.compile(rb"aws|secret.?access|secretaccess", re.I)
# A shell/compose parameter expansion with a default (``${NAME:-value}``, ``${NAME=value}``): the
# expansion is template syntax, its default a literal that ships with the file.
_SHELL_DEFAULT = re.compile(rb"\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=]([^}]*)\}?\Z")
_URI_CRED = re.compile(
    rb"[A-Za-z][A-Za-z0-9+.-]{0,30}://([^\s/?#@:\"'<>\x00]{1,256}):([^\s/?#@\"'<>\x00]{1,256})@\Z"
)
_URI_PLACEHOLDER = re.compile(
    rb"^(?:\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|<[^>]*>|\{\{?[^}]*\}\}?|%s|%\([a-z_]+\)s|\*+|\[[^\]]*\])$"
)
HOME = re.compile(rb"(?:/home/|/Users/|[A-Za-z]:\\Users\\)[A-Za-z0-9._-]{1,64}|~/")
HOME_SLASH = re.compile(rb"/(?=home/|Users/)")
_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
MIN_RUN = 20
_RUN_TABLE = bytes(ord("a") if b in _RUN_CHARS else ord(" ") for b in range(256))
_RUN_PROBE = b"a" * MIN_RUN
_KEYWORDS = [re.compile(re.escape(stem) + _KW_TAIL, re.X) for stem in KW_STEMS]
_RARE_BYTES = b"~\\"


def find_all(buf: bytes, needle: bytes, step: int = 1) -> Iterator[int]:
    """Start of every occurrence of ``needle`` (the next search begins ``step`` bytes further)."""
    for byte in needle:
        if byte in _RARE_BYTES and byte not in buf:
            return
    find = buf.find
    i = find(needle)
    while i >= 0:
        yield i
        i = find(needle, i + step)


# Names that say the value is not a credential although they end like one: public and publishable
# keys/tokens, anti-forgery tokens (bound to a session cookie, useless alone).
_NOT_CREDENTIAL = re.compile(rb"public|publishable|(?:^|[_.-])pub[_.-]|csrf|xsrf|authenticity")


def secret_name(name: bytes) -> bool:
    """Whether a NAME (its last 64 name characters, lowercased) ends with a secret-like word."""
    m = KW_NAME_BACK.search(name.rstrip(b" \t\"'"))
    tail = m.group(0).lower().lstrip(b"._-") if m else b""
    return bool(tail and _KW_NAME_OK.search(tail)) and _NOT_CREDENTIAL.search(tail) is None


def scan_assignments(buf: bytes, low: bytes, spans: list[Span], budget: list[int]) -> None:
    """Every ``secret-like-name <op> literal`` in ``buf``; ``low`` is ``buf.lower()``."""
    for kw, stem in zip(_KEYWORDS, KW_STEMS, strict=True):
        match = kw.match
        skip_to = -1
        for i in find_all(low, stem):
            if i < skip_to:
                continue
            m = match(low, i)
            if m is None:
                continue
            budget[0] -= 1
            if budget[0] < 0:
                return
            skip_to = check_assignment(buf, i, m.end(), m.group("op"), spans, budget)


def check_assignment(
    buf: bytes, stem_start: int, op_end: int, op: bytes, spans: list[Span], budget: list[int]
) -> int:
    """Judge one NAME <op> VALUE; returns the end of what was read (the next stem is searched after)."""
    window = buf[max(0, stem_start - 64) : stem_start]
    name_start = stem_start - (len(window) - len(window.rstrip(_NAME_CHARS)))
    name_end = op_end - len(op)
    while name_end > stem_start and buf[name_end - 1] in b" \t\"'>]`":
        name_end -= 1
    name = buf[name_start:name_end]
    if op == b"|":  # a table row ``| DB_PASSWORD | value |``, not a shell pipe ``$TOKEN | base64``
        cell = buf[max(0, name_start - 8) : name_start].rstrip(b" \t`")
        if not cell.endswith(b"|"):
            return op_end
    if op == b">":  # only an element: <password>value</password>
        closing = b"</" + name
        if name_start == 0 or buf[name_start - 1] != 0x3C or buf.find(closing, op_end, op_end + 600) < 0:
            return op_end
    if not secret_name(name):
        return op_end
    vm = _KW_VALUE.match(buf, op_end)
    if vm is None:
        return op_end
    for g in (1, 2, 3, 4):
        if vm.group(g) is not None:
            value, vstart, quoted = vm.group(g), vm.start(g), g < 4
            break
    else:
        return op_end
    if not quoted:
        # an unquoted value runs to white space, symbols included (``password=P@ss;w0rd!9``); it
        # ends before the next ``,NAME=`` / ``;NAME:`` of a list and a trailing ``,`` or ``;``
        nxt = _NEXT_PAIR.search(value)
        value = value[: nxt.start()] if nxt is not None else value
        value = value.rstrip(b",;")
    budget[0] -= len(value) // 64  # judging costs with the length judged
    if b"\n" in buf[op_end:vstart] and op != b">" and not op.endswith(b"value:"):
        return op_end  # ``password:`` then a new line: the next line is not its value
    weak = op.strip() in (b"is", b"was", b"are", b"(") or op == b"," or BARE.match(name.lower()) is not None
    if weak and not (judge.token_like(value) or judge.alnum_token(value) or judge.password_like(value)):
        # prose, argument lists and a bare ``key``/``token``: only a value shaped like a token counts,
        # and the prose is searched on (``TOKEN="the token is ..."``: the sentence's own assignment)
        return op_end
    if vm.group(3) is not None and b" " in value:
        # `command substitution`: a command, not a literal; the literals inside it are still judged
        # (``API_TOKEN=`gh api --token=...```), so the next stem is searched from its start
        return vstart
    default = _SHELL_DEFAULT.match(value)
    if default is not None:  # ``${DB_PASSWORD:-s3cret}``: the default is a literal, judged as the value
        value, vstart = default.group(1), vstart + default.start(1)
    if not judge.is_secret_value(value, quoted, name):
        return vstart + len(value)
    rule = "secret-assignment"
    if len(value) == 40 and _AWS_CONTEXT.search(name):
        rule = "aws-secret-access-key"
    spans.append((rule, vstart, vstart + len(value), BLOCK))
    return vstart + len(value)


# Credential stores written as XML: a name in a ``key=``/``name=`` attribute and its value in the
# same tag's ``value=`` (.NET appSettings, Spring beans), in the element's text (Java properties
# XML ``<entry key="db.password">``, Android ``<string name="api_key">``) or in a nested
# ``<value>`` (.NET settings). Python ``re`` on a window of at most 800 bytes after a
# ``key=``/``name=`` found by ``bytes.find``: bounded work per hit.
_XML_PAIR = re.compile(
    rb"""(?:key|name)[ \t]*=[ \t]*["']([A-Za-z0-9_.:-]{1,64})["'][^<>]{0,200}?
    (?:\bvalue[ \t]*=[ \t]*["']([^"'\n<>]{1,512})["']
    |>[ \t]*(?:<value>)?([^<\n]{1,512}?)[ \t]*</)""",
    re.X,
)


def scan_xml_pairs(buf: bytes, low: bytes, spans: list[Span], budget: list[int]) -> None:
    """``<add key="ApiKey" value="..."/>``, ``<entry key="db.password">...</entry>``,
    ``<setting name="Password"><value>...</value></setting>``: a secret-like name given a literal."""
    if b"=" not in buf or b"<" not in buf:
        return
    for needle in (b"key", b"name"):
        for i in find_all(low, needle):
            m = _XML_PAIR.match(buf, i, i + 800)
            if m is None:
                continue
            budget[0] -= 1
            if budget[0] < 0:
                return
            name = m.group(1)
            g = 2 if m.group(2) is not None else 3
            value, vstart = m.group(g), m.start(g)
            if not secret_name(name) or not judge.is_secret_value(value, True, name):
                continue
            if BARE.match(name.lower()) is not None and not (
                judge.token_like(value) or judge.alnum_token(value) or judge.password_like(value)
            ):
                continue
            spans.append(("secret-assignment", vstart, vstart + len(value), BLOCK))


def scan_uris(buf: bytes, spans: list[Span], budget: list[int]) -> None:
    """``scheme://user:password@host``: the password, unless it is template syntax."""
    for at in find_all(buf, b"@"):
        budget[0] -= 1
        if budget[0] < 0:
            return
        lo = max(0, at - 560)
        scheme = buf.rfind(b"://", lo, at)
        if scheme < 0:
            continue
        start = scheme
        while start > lo and (buf[start - 1 : start].isalnum() or buf[start - 1] in b"+.-"):
            start -= 1
        m = _URI_CRED.match(buf, start, at + 1)
        if m is None:
            continue
        password = m.group(2)
        if _URI_PLACEHOLDER.match(password) or judge.is_placeholder(password + b"    "):
            if _URI_PLACEHOLDER.match(password) or len(set(password)) <= 2:
                continue
        spans.append(("uri-credentials", m.start(2), m.end(2), BLOCK))


# Public by design (keys, certificates) or encrypted to a key (PGP messages, age files): the base64
# inside is not a credential. What this does NOT stop: a secret pasted inside such a block by hand.
_PUBLIC_BLOCK = re.compile(
    rb"-----BEGIN (?:PGP PUBLIC KEY BLOCK|PUBLIC KEY|RSA PUBLIC KEY|CERTIFICATE|X509 CRL|PGP MESSAGE"
    rb"|AGE ENCRYPTED FILE)-----"
)
# The value of a name that says what it is: public keys, ids, hashes, nonces are not credentials.
_NOT_SECRET_END = re.compile(
    rb"(?:id|ids|hash|digest|checksum|sha\d*|etag|fingerprint|uuid|guid|nonce|salt|iv|integrity|signature|sig"
    rb"|(?:foreign|primary|partition|sort|range|row|cache|idempotency|object|lookup)[_-]?key)\Z"
)
_NOT_SECRET_ANY = (b"public", b"publishable", b"csrf", b"xsrf", b"authenticity")
# Hex under these names is a revision, a digest, a key's fingerprint or a build stamp (``commit:
# <sha>``, ``"gitHead"``, a push event's ``"before"``/``"after"``, ``"shasum"``, ``md5=``, ``fp:``,
# ``thumbprint``), on top of the ids and hashes above.
_HEX_NAME_END = re.compile(
    rb"(?:commit|rev|revision|head|base|before|after|ref|oid|tree|blob|parent|sum|md5|version|build|fp|print)\Z"
)
# an HTML hidden input: <input name="authenticity_token" value="...">
_HIDDEN_INPUT = re.compile(rb"name=[\"'][^\"'\n]{0,40}(?:csrf|xsrf|authenticity)", re.I)
_OPS = (b":=", b"=>", b"==", b"=", b":")
_NAME_TAIL = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"


# name -> 0 (judge the value), 1 (a name that says it is no secret), 2 (a descriptive name)
_NAME_VERDICTS: dict[bytes, int] = {}


def _name_before(buf: bytes, value_start: int) -> bytes:
    """The NAME of ``NAME <op> value`` ending at ``value_start`` (``b""`` when there is no operator).
    Byte slicing and ``rstrip`` only: called for every random-looking run."""
    before = buf[max(0, value_start - 80) : value_start].rstrip(b" \t\"'`")
    for op in _OPS:
        if before.endswith(op):
            before = before[: -len(op)].rstrip(b" \t\"']")
            return before[len(before.rstrip(_NAME_TAIL)) :]
    return b""


def _not_secret_name(buf: bytes, value_start: int, name: bytes) -> bool:
    """The value of a name that says it is public, an id, a hash, a nonce, a signature, a database
    key or an anti-forgery token (``sha256=``, ``issuerKeyHash=``, ``publicToken:``, ``csrf-token=``)."""
    low = name.lower()
    if any(w in low for w in _NOT_SECRET_ANY) or _NOT_SECRET_END.search(low) is not None:
        return True
    return low == b"value" and _HIDDEN_INPUT.search(buf, max(0, value_start - 100), value_start) is not None


def hex_name_excused(name: bytes) -> bool:
    """Whether a hex value under ``name`` is a digest, id, revision or nonce, not a key: the name
    says so (``sha256``, ``commit``, ``requestId``, ``gitHead``) or it is a descriptive name of
    words that names no credential (``expectedLayout``)."""
    low = name.lower()
    if any(w in low for w in _NOT_SECRET_ANY) or _NOT_SECRET_END.search(low) is not None:
        return True
    return _HEX_NAME_END.search(low) is not None or _descriptive_name(name)


_VALUE_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-~.%"
_VALUE_TABLE = bytes(ord("a") if b in _VALUE_CHARS else ord(" ") for b in range(256))


def _public_ranges(buf: bytes) -> list[tuple[int, int]]:
    """Byte ranges of PEM/PGP public key and certificate blocks: base64 there is public by design."""
    out: list[tuple[int, int]] = []
    if b"-----BEGIN" in buf:
        for m in _PUBLIC_BLOCK.finditer(buf):
            end = buf.find(b"-----END", m.end())
            out.append((m.start(), end if end >= 0 else len(buf)))
    # SOPS ciphertext ``ENC[AES256_GCM,data:...,iv:...,tag:...,type:str]``: encrypted by design
    for start in find_all(buf, b"ENC[AES256_GCM,"):
        end = buf.find(b"]", start, start + 65536)
        out.append((start, end if end >= 0 else len(buf)))
    return out


def _in_url(buf: bytes, pos: int) -> bool:
    """Whether ``pos`` is in the path or query of a URL (a document id, a CDN file name)."""
    lo = max(0, pos - 200)
    scheme = buf.rfind(b"://", lo, pos)
    if scheme < 0:
        return False
    between = buf[scheme:pos]
    return not any(c in between for c in (b" ", b"\n", b"\t", b'"', b"'", b"\x00", b"@"))


def scan_runs(buf: bytes, spans: list[Span], budget: list[int]) -> list[tuple[int, int]]:
    """Long runs of token characters: AWS secret keys in context, other random-looking blobs.
    Returns the (start, end) of every run visited, for the decoding step (its alphabet is the
    same: base64 in both alphabets), so the buffer is translated and searched once.

    Not judged: runs inside a URL's path or query (document ids; a credential in a URL is the URI
    and assignment rules' job), inside public key / certificate blocks, and the values of names that
    say they are public, ids or hashes (``public_key =``, ``credentialId:``, ``issuerKeyHash=``).
    """
    public = _public_ranges(buf)
    runs: list[tuple[int, int]] = []
    tr = buf.translate(_RUN_TABLE)
    find = tr.find
    end = len(tr)
    pos = find(_RUN_PROBE)
    # Runs have their own allowance: at most one per 21 bytes exist; a file listing makes one every
    # ~45 bytes and a wheel RECORD one every ~50; one per 40 bytes bounds a hostile buffer.
    runs_left = 512 + len(buf) // 40
    while pos >= 0:
        stop = find(b" ", pos + MIN_RUN)
        if stop < 0:
            stop = end
        tok = buf[pos:stop]
        runs.append((pos, stop))
        runs_left -= 1
        budget[0] -= min(len(tok), 4096) // 256
        if budget[0] < 0 or runs_left < 0:
            budget[0] = -1
            return runs
        if not (_in_url(buf, pos) or any(a <= pos < b for a, b in public)):
            _check_run(buf, tok, pos, spans, budget)
        pos = find(_RUN_PROBE, stop)
    return runs


def _check_run(buf: bytes, tok: bytes, pos: int, spans: list[Span], budget: list[int]) -> None:
    """Judge one run. Cheap verdicts by name come first (C-speed slicing), then randomness; only a
    random run with no name to excuse it reaches the costly checks, and each such run draws on the
    shared budget (a buffer of thousands of them is refused, fail closed)."""
    # A run may be NAME=VALUE glued together; judge the part after the last '=' that is not padding.
    head = tok.rstrip(b"=")
    cut = head.rfind(b"=") + 1
    core = head[cut:4096]
    start = pos + cut
    if len(core) < MIN_RUN and len(core) != 40:
        return
    lo = max(0, start - 512)
    vstart = lo + buf[lo:start].translate(_VALUE_TABLE).rfind(b" ") + 1  # where the value begins
    name = _name_before(buf, vstart)
    verdict = _NAME_VERDICTS.get(name) if name else 0
    if verdict is None:
        verdict = 1 if _not_secret_name(buf, vstart, name) else 2 if _descriptive_name(name) else 0
        if name.lower() != b"value":  # the hidden-input verdict depends on the bytes around it
            if len(_NAME_VERDICTS) > 4096:
                _NAME_VERDICTS.clear()
            _NAME_VERDICTS[name] = verdict
    if verdict == 1:
        return  # ``sha256=...``, ``issuerKeyHash=...``, ``CloudFront-Signature: ...~...``
    glued = buf[vstart - 1 : vstart] == b":" and buf[vstart - 2 : vstart - 1].isalnum()
    if name and not glued and len(core) >= 32 and judge.hex_secret(core) and not hex_name_excused(name):
        # ``const k = "<40 hex>"``: hex assigned to a name is a key; bare hex in prose (a commit
        # SHA, a digest) is not judged, hex cannot be told from a digest by its shape, and neither
        # is a typed prefix glued to its value (``ed25519:<hex>``, ``sha1:<hex>``)
        spans.append(("hex-assignment", start, start + len(core), BLOCK))
        return
    if (
        len(core) == 40
        and b"_" not in core
        and b"-" not in core
        and core.lower() != core  # base64 of 40 characters without an upper-case letter: ~1e-9
        and core.upper() != core
        and _AWS_CONTEXT.search(buf, max(0, start - 64), start) is not None
        and not judge.is_placeholder(core)
        and not judge.is_wordy(core)  # ``Policy/Properties/PolicyDocument/Version``: a path of words
    ):
        spans.append(("aws-secret-access-key", start, start + 40, BLOCK))
        return
    if len(core) < MIN_RUN or verdict == 2:
        return  # ``wrongLength := "..."``, ``rookTable = ...``: the name says what the value is
    if not (judge.looks_random(core) or _random_piece(core)):
        return
    after = buf[start + len(core) : start + len(core) + 3]
    if after in _ELLIPSES or buf[max(0, start - 3) : start] in _ELLIPSES:
        return  # ``ops_eyJzaWdu...``, ``...6wqX6fNU...``: an excerpt shown for reference, cut short
    budget[0] -= 4  # the placeholder and base64-text judgements cost ~40 us; honest text has few
    if not judge.is_placeholder(core) and not _encoded_text(core):
        spans.append(("high-entropy", start, start + len(core), BLOCK))


_ELLIPSES = (b"...", b"\xe2\x80\xa6")
_CREDENTIAL_WORD = re.compile(rb"(?i)pass|pwd|secret|token|key|auth|cred|bearer|basic ")


_NAME_WORDS = re.compile(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# Any of these inside a name keeps its value judged: credentials go by many names.
_CREDENTIAL_PIECES = re.compile(
    rb"(?i)pass|pwd|secret|token|key|auth|cred|cookie|session|bearer|jwt|private|sign|hmac|api|access"
    rb"|licen[cs]e|dsn|conn|hook|oauth|client|login|master|cert|code|pin|otp|env|config|value|data"
)


def _descriptive_name(name: bytes) -> bool:
    """The value is assigned to a name of two or more words, none of which names a credential
    (``wrongLength``, ``SetSysctl``, ``sumOfExposures``): a name that says what the value is.
    What this does NOT stop: a secret of no known format assigned to an innocent-sounding name."""
    if len(name) < 3 or not (65 <= name[0] <= 90 or 97 <= name[0] <= 122):
        return False
    words = _NAME_WORDS.findall(name)
    return len([w for w in words if not w.isdigit()]) >= 2 and _CREDENTIAL_PIECES.search(name) is None


def _encoded_text(core: bytes) -> bool:
    """Base64 of plain text (``YmVkcm9jay5hbWF6b25hd3MuY29t``, ``eyJzaWduSW5BZGRyZXNzIjoi``): judged by
    what it says. True (not a secret) when the longest base64 piece decodes to printable ASCII that
    names no credential (``{"auth": ...}``, ``user:password`` in a Basic header still block).
    What this does NOT stop: base64 of a password with no credential word around it."""
    pieces = [p for p in re.split(rb"[-_.]", core) if len(p) >= 16]
    best = max(pieces, key=len, default=b"")
    if len(best) < 16:
        return False
    if any(p is not best and judge.looks_random(p) for p in pieces):
        return False  # ``<base64 JSON>_<random signature>``: the random part is still judged
    raw = best.rstrip(b"=")
    try:
        text = base64.b64decode(raw + b"=" * (-len(raw) % 4), validate=True)
    except (ValueError, binascii.Error):
        return False
    if not text or sum(32 <= b < 127 or b in (9, 10, 13) for b in text) < 0.97 * len(text):
        return False
    if _CREDENTIAL_WORD.search(text) or (b":" in text and b" " not in text.strip() and len(text) < 80):
        return False  # {"auths":{...}}, user:password
    return True


def _random_piece(core: bytes) -> bool:
    # lowercase/digit secrets glued with '-' or '_' (``s6xul08pmeofq0o5qczwz30ndsojjv8s-21txuqo``)
    return any(judge.looks_random_lower(p) for p in re.split(rb"[-_./+=]", core) if len(p) >= 20)


def scan_home(buf: bytes, spans: list[Span]) -> None:
    """Home directory paths (``/home/alice``, ``C:\\Users\\bob``, ``~/``): a warning, not a block."""
    for slash in HOME_SLASH.finditer(buf):
        m = HOME.match(buf, slash.start())
        if m is not None:
            spans.append(("home-path", slash.start(), m.end(), WARN))
    for i in find_all(buf, b"\\Users\\"):
        start = i - 2 if i >= 2 else i
        m = HOME.match(buf, start)
        if m is not None:
            spans.append(("home-path", start, m.end(), WARN))
    for i in find_all(buf, b"~/", 2):
        if i == 0 or buf[i - 1] in b" \t\n\"'`(=:\x00[{,":
            spans.append(("home-path", i, i + 2, WARN))
