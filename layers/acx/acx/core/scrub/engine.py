"""The scan of one byte buffer: normalise, one RE2 prefilter pass, provider rules on windows around
its hits, then the generic rules, then base64 and hex runs decoded one level and their text judged
by the same steps. Returns ``(rule, start, end, severity)`` spans in ORIGINAL offsets.

Linear time, by construction:
- every pattern that sees the whole buffer is RE2 (the trigger alternation) or a ``bytes.find``
  / ``bytes.translate`` loop: no backtracking engine ever sees unbounded input;
- provider patterns are RE2 too and run on windows of bounded size around a trigger hit; windows
  that overlap are merged, so dense hits cost one pass over the merged region per rule, not one per hit;
- every Python step taken per candidate draws on a budget proportional to the buffer
  (``512 + len // 256``). A buffer that exhausts it (no honest text does: the engineering notes of
  the benchmark make one candidate every ~1,800 bytes) is refused with the ``scan-budget`` rule,
  fail closed, instead of being judged slowly.

What this does NOT stop: see ``acx.core.scrub`` (the package docstring) and docs/SCRUB.md.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import defaultdict
from typing import Any

from acx.core.scrub import decode, generic, judge
from acx.core.scrub.generic import BLOCK, WARN, Span
from acx.core.scrub.normalise import NormaliseBudget, normalise_bytes
from acx.core.scrub.rules import RULES
from acx.core.scrub.triggers import all_triggers

MIN_SECRET_LEN = 8
_WINDOW_AFTER = 600
_LONG_WINDOW = 6000
_LONG_RULES = frozenset(
    {"private-key", "kubernetes-secret-yaml", "1password-service-account-token", "sentry-org-token"}
)
# Generic hits a specific rule already names are dropped (one finding per secret, the precise one).
_GENERIC = frozenset(
    {
        "secret-assignment",
        "high-entropy",
        "hex-assignment",
        "aws-secret-access-key",
        "connection-string-password",
    }
)


class _Compiled:
    """All compiled state, built once on first use (importing the package stays cheap)."""

    def __init__(self) -> None:
        import re2

        self.re2 = re2
        opts = re2.Options()
        opts.log_errors = False
        opts.max_mem = 64 << 20
        opts.encoding = re2.Options.Encoding.LATIN1  # bytes are bytes: no UTF-8 decoding automaton
        self.options = opts
        self.triggers = all_triggers()
        parts: list[str] = []
        self.group_rules: list[tuple[int, ...]] = [()]  # group index -> rule indexes (regex triggers)
        literal_parts: list[tuple[str, bool]] = []
        self.buckets: dict[bytes, list[tuple[bytes, bool, int, tuple[int, ...]]]] = defaultdict(list)
        for trig, rule_ix in self.triggers:
            if trig.regex:
                parts.append("(" + trig.text + ")")
                self.group_rules.append(rule_ix)
            else:
                lit = trig.text.encode()
                self.buckets[lit[:2].lower()].append(
                    (lit.lower() if trig.ci else lit, trig.ci, trig.before, rule_ix)
                )
                literal_parts.append((trig.text, trig.ci))
        self.regex_before = {
            i + 1: t.before for i, (t, _) in enumerate(x for x in self.triggers if x[0].regex)
        }
        # Each regex trigger alone, to be tried where the prefilter credited an earlier one: RE2 reports
        # one alternative per position (the first that matches), so a later one would go unseen.
        self.regex_alone = [re2.compile(t.text.encode(), opts) for t, _ in self.triggers if t.regex]
        literal_parts.sort(key=lambda p: -len(p[0]))
        ci = "|".join(re2.escape(t) for t, c in literal_parts if c)
        cs = "|".join(re2.escape(t) for t, c in literal_parts if not c)
        parts.append("(" + "|".join(x for x in (f"(?i:{ci})" if ci else "", cs) if x) + ")")
        self.literal_group = len(parts)
        self.prefilter = re2.compile("|".join(parts).encode(), opts)
        self.rules: dict[int, Any] = {}

    def rule(self, index: int) -> Any:
        compiled = self.rules.get(index)
        if compiled is None:
            compiled = self.re2.compile(RULES[index].pattern.encode(), self.options)
            self.rules[index] = compiled
        return compiled


_compiled: _Compiled | None = None


def compiled() -> _Compiled:
    global _compiled
    if _compiled is None:
        _compiled = _Compiled()
    return _compiled


def _provider_hits(buf: bytes, c: _Compiled, budget: list[int]) -> list[tuple[int, int, tuple[int, ...]]]:
    """(trigger position, bytes before it a match may start, rule indexes) for every trigger hit."""
    hits: list[tuple[int, int, tuple[int, ...]]] = []
    n = len(buf)
    search = c.prefilter.search
    pos = 0
    lit_group = c.literal_group
    while pos < n:
        m = search(buf, pos)
        if m is None:
            break
        start = m.start()
        budget[0] -= 1
        if budget[0] < 0:
            break
        group = m.lastindex or 0
        if group != lit_group:
            # The first regex trigger matching here, then every later one that also does (``live_``
            # followed by hex is both gocardless' trigger and the next one's).
            hits.append((start, c.regex_before[group], c.group_rules[group]))
            for later in range(group + 1, lit_group):
                if c.regex_alone[later - 1].match(buf, start) is not None:
                    hits.append((start, c.regex_before[later], c.group_rules[later]))
        # The literal triggers at this position, whichever group the prefilter reported: a regex
        # trigger's hit (``live_[a-z0-9_=-]{4}``) must not hide a literal one (``live_pub_``, Lob).
        for lit, ci, before, rule_ix in c.buckets.get(buf[start : start + 2].lower(), ()):
            piece = buf[start : start + len(lit)]
            if (piece.lower() if ci else piece) == lit:
                hits.append((start, before, rule_ix))
        pos = start + 1
    return hits


def _keyword_at_word_edge(buf: bytes, ks: int, ke: int) -> bool:
    """``twitterToken``, ``TWITTER_TOKEN``, ``twitter_token``: yes. ``SetSysctl`` (etsy),
    ``sumOfExposures`` (sumo), ``CameraKit`` (meraki): no, the keyword is inside another word."""
    if ks > 0:
        prev, first = buf[ks - 1], buf[ks]
        if (65 <= prev <= 90 or 97 <= prev <= 122) and not (97 <= prev <= 122 and 65 <= first <= 90):
            return False
    if ke < len(buf):
        nxt, last = buf[ke], buf[ke - 1]
        if 97 <= nxt <= 122 and 65 <= last <= 90 and not buf[ks:ke].isupper():
            return False  # the keyword ends inside the next camel-case word
    return True


def _check_value(rule_index: int, m: Any, buf: bytes) -> bool:
    rule = RULES[rule_index]
    s, e = m.span(m.re.groups)
    value = buf[s:e]
    if "crc32-base62" in rule.checks and judge.crc32_base62_ok(value):
        return True  # a valid checksum: a real token, whatever it looks like
    if buf[e : e + 4] in _MASK_TAILS:
        return False  # ``xoxp-5723...-####``: the token runs on into a mask
    if _ASSET_TAIL.match(buf, e) is not None:
        return False  # ``video_box.ico-7a38...0aab0c.png``: a fingerprinted asset file name
    if rule.keyword:
        ks, ke = m.span(1)
        return _keyword_at_word_edge(buf, ks, ke) and not judge.weak_value(value)
    if rule.id == "curl-auth-user":
        user, password = value.split(b":", 1)
        password = password.strip(b"'\"") or user  # ``-u ":pw"`` and ``-u "pw:"`` both leak
        if user.startswith(b"<") or password.endswith(b">"):
            return False  # ``-u <user:password>``: template syntax around the pair
        return judge.is_secret_value(password, True) and not password.startswith((b"$", b"{", b"<", b"["))
    if rule.id in (
        "terraform-variable-default",
        "mysql-cli-password",
        "connection-string-password",
        "curl-auth-header",
        "hashicorp-tf-password",
        "nuget-config-password",
    ):
        return judge.is_secret_value(value, True) and not value.startswith((b"{", b"$", b"%"))
    if rule.id == "private-key" and e - s < 80:  # the header alone: is a stand-in block right after it?
        end = buf.find(b"-----END", e, e + 400)
        return end < 0 or _KEY_MATERIAL.search(buf, e, end) is not None or not judge.stand_in_body(buf[e:end])
    if rule.id == "twitter-bearer-token" and not value.strip(b"A"):
        return False  # nothing but A (base64 of zero bytes): a real token goes on past its 21 A
    if rule.id in _NO_RUN_CHECK:
        return True  # structural markers: judged by their shape alone
    if _SAME_RUN.search(value) is not None:
        return False  # ``AIzaaaaa...``, ``sgp_5555555dAAAAA...``: 8 equal characters are typed, not drawn
    return not (judge.is_placeholder(value, strict=False) or judge.is_wordy(value))


_MASK_TAILS = frozenset({b"####", b"****", b"xxxx", b"XXXX", b"...."})
# A random draw repeats one character 8 times in a row about once in 10^11 (base62) or 10^7 (hex).
# Digits are left out: numeric id parts (``xoxa-2-511111111-...``) are not the random part.
_KEY_MATERIAL = re.compile(rb"[A-Za-z0-9+/]{32}")
_SAME_RUN = re.compile(rb"([^0-9])\1{7,}")
_ASSET_TAIL = re.compile(
    rb"\.(?:png|jpe?g|gif|svg|ico|css|js|map|woff2?|ttf|webp|html?)(?![A-Za-z0-9])", re.I
)
_NO_RUN_CHECK = frozenset(
    {
        "twitter-bearer-token",
        "private-key",
        "putty-private-key",
        "gcp-service-account",
        "kubernetes-secret-yaml",
    }
)


def _scan_providers(buf: bytes, c: _Compiled, spans: list[Span], budget: list[int]) -> None:
    """Each rule behind a hit runs on a bounded window: an anchored match where the rule's match
    starts at its trigger (nearly all), a search of ``before + span`` bytes where the trigger sits
    inside the format (``Q~``, ``:A``, ``NRAL``). Cost per hit is bounded; hits draw on the budget."""
    n = len(buf)
    done: set[tuple[int, int]] = set()
    for start, before, rule_ix in _provider_hits(buf, c, budget):
        for index in rule_ix:
            regex = c.rule(index)
            span = _LONG_WINDOW if RULES[index].id in _LONG_RULES else _WINDOW_AFTER
            hi = min(n, start + span)
            if before <= 2:
                m = None
                for lo in range(max(0, start - before), start + 1):
                    m = regex.match(buf, lo, hi)
                    if m is not None:
                        break
                found = [m] if m is not None else []
            else:
                found = list(itertools.islice(regex.finditer(buf, max(0, start - before), hi), 4))
            budget[0] -= 1
            for m in found:
                s, e = m.span(regex.groups)
                if s < 0 or (index, s) in done:
                    continue
                done.add((index, s))
                if _check_value(index, m, buf):
                    spans.append((RULES[index].id, s, e, BLOCK))
        if budget[0] < 0:
            return


def scan_bytes(buf: bytes, forbidden: Any = None) -> list[Span]:
    """All findings in ``buf`` (UTF-8), offsets into ``buf``; normalised first when it is not ASCII."""
    try:
        norm = normalise_bytes(buf) if not buf.isascii() else None
    except NormaliseBudget:
        return [("scan-budget", 0, len(buf), BLOCK)]  # thousands of invisible or look-alike characters
    if norm is None:
        return _scan(buf, forbidden)
    spans = _scan(norm.data, forbidden)
    out = []
    for rule, s, e, sev in spans:
        os_ = norm.original_offset(s)
        oe = norm.original_offset(e, end=True) if e < len(norm.data) else len(buf)
        out.append((rule, os_, max(oe, os_ + 1), sev))
    return out


def _scan(buf: bytes, forbidden: Any, budget: list[int] | None = None, encoded: bool = True) -> list[Span]:
    """The gate on one buffer. ``budget`` is shared when given (decoded text is judged on the budget
    of the buffer it came from); ``encoded`` turns on the decoding of base64 and hex runs, which
    the scan of decoded text does not do again (one level)."""
    n = len(buf)
    spans: list[Span] = []
    if n < 2:
        return spans
    if encoded and (b"/" in buf or b"\\" in buf):
        generic.scan_home(buf, spans)
    low = buf.lower()
    if forbidden is not None:
        for m in forbidden.finditer(low):
            spans.append(("forbidden-literal", m.start(), m.end(), BLOCK))
    if n < MIN_SECRET_LEN:
        return spans
    own = budget is None
    if budget is None:
        budget = [512 + n // 256]
    c = compiled()
    _scan_providers(buf, c, spans, budget)
    if budget[0] >= 0:
        generic.scan_uris(buf, spans, budget)
    if budget[0] >= 0:
        generic.scan_assignments(buf, low, spans, budget)
    if budget[0] >= 0:
        generic.scan_xml_pairs(buf, low, spans, budget)
    runs: list[tuple[int, int]] = []
    if budget[0] >= 0:
        runs = generic.scan_runs(buf, spans, budget)
    if encoded and budget[0] >= 0:
        decode.scan_encoded(buf, runs, spans, budget, _scan_decoded)
    if own and budget[0] < 0:
        spans.append(("scan-budget", 0, n, BLOCK))
    return _dedupe(spans)


def _scan_decoded(text: bytes, budget: list[int]) -> list[Span]:
    return _scan(text, None, budget, encoded=False)


def _dedupe(spans: list[Span]) -> list[Span]:
    """Drop repeats, and generic hits (assignment, entropy) on a secret a specific rule named."""
    if len(spans) < 2:
        return spans
    spans.sort(key=lambda sp: (sp[1], sp[0]))
    specific = [(s, e) for rule, s, e, sev in spans if sev == BLOCK and rule not in _GENERIC]
    aws = [(s, e) for rule, s, e, _ in spans if rule == "aws-secret-access-key"]
    named = [(s, e) for rule, s, e, sev in spans if sev == BLOCK and rule != "hex-assignment"]
    out: list[Span] = []
    seen: set[tuple[str, int]] = set()
    for span in spans:
        rule, s, e, _sev = span
        if (rule, s) in seen:
            continue
        if rule in _GENERIC and _overlaps(specific, s, e):
            continue
        if rule == "high-entropy" and _overlaps(aws, s, e):
            continue
        if rule == "hex-assignment" and _overlaps(named, s, e):
            continue  # the assignment rule named it already (``api_key = "<hex>"``)
        seen.add((rule, s))
        out.append(span)
    return out


def _overlaps(sorted_spans: list[tuple[int, int]], s: int, e: int) -> bool:
    i = bisect.bisect_left(sorted_spans, (e, -1))
    while i > 0:
        i -= 1
        ss, se = sorted_spans[i]
        if se > s:
            return True
        if ss < s - 8192:
            break
    return False


__all__ = ["BLOCK", "MIN_SECRET_LEN", "WARN", "compiled", "scan_bytes"]
