"""Encoded secrets: base64 (standard and URL-safe) and hex runs long enough to hold a token are
decoded one level, and what decodes to text is judged like plain text by the whole gate.

A GitHub, AWS or Stripe token written as base64 (a Kubernetes Secret's ``data:``, a basic-auth
header, a pasted config blob) or as hex is found by the rule of its format. A finding names the
encoded run (its offset and end in the buffer scanned) and the rule as ``base64:<rule>`` or
``hex:<rule>``, never the decoded value.

Linear time: the runs are those the random-run rule found (one ``translate`` and ``find`` loop,
shared); runs are disjoint and at least
24 bytes long, and only the first 48 bytes of each are decoded before the text test (a wheel's
RECORD, one digest per line, costs one small decode per line and nothing more). A run that decodes
to text draws on the caller's budget (four units plus one per 256 bytes decoded, at most
``DECODE_CAP``), and its text is scanned once on the same budget, never decoded again.

What this does NOT stop: two levels of encoding (base64 of base64), base64 cut into lines (a PEM-like
wrapped blob is decoded line by line), encodings other than base64 and hex (URL-encoding, rot13),
and a run glued to a longer word that shifts its 4-character alignment.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable

from acx.core.scrub.generic import BLOCK, Span

MIN_BASE64 = 24  # 18 bytes: a 20-character key id is 28 characters of base64
MIN_HEX = 40  # 20 bytes
DECODE_CAP = 64 * 1024  # bytes of one run decoded at most
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_URLSAFE = bytes.maketrans(b"-_", b"+/")
# Printable ASCII and the three whitespace controls: what text decodes to.
_TEXT = bytes(b for b in range(256) if 32 <= b < 127 or b in (9, 10, 13))


_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _text(data: bytes) -> bool:
    """Decoded bytes read as text: at most 1 in 32 bytes outside printable ASCII, some letters."""
    if len(data) < 16 or len(data.translate(None, _TEXT)) * 32 > len(data):
        return False
    head = data[:64]
    return len(head) - len(head.translate(None, _LETTERS)) >= 4


def _decode(core: bytes) -> tuple[str, bytes] | None:
    """The encoding and the text ``core`` encodes (hex, or base64 in either alphabet), or None."""
    if len(core) >= MIN_HEX and not core.translate(None, _HEX_DIGITS) and len(core) % 2 == 0:
        head = binascii.unhexlify(core[:96])
        if not _text(head):
            return None
        data = binascii.unhexlify(core[: 2 * DECODE_CAP])
        return ("hex", data) if _text(data) else None
    body = core.rstrip(b"=")
    if len(body) < MIN_BASE64 or b"=" in body:
        return None
    if (b"-" in body or b"_" in body) and (b"+" in body or b"/" in body):
        return None  # two alphabets mixed: an identifier or a path, not base64
    body = body[: DECODE_CAP * 4 // 3].translate(_URLSAFE)
    if len(body) % 4 == 1:
        body = body[:-1]  # a lone last character encodes no byte
    body += b"=" * (-len(body) % 4)  # unpadded base64 (URL-safe tokens drop the padding)
    try:
        if len(body) > 64 and not _text(binascii.a2b_base64(body[:64])):
            return None
        data = binascii.a2b_base64(body)
    except (binascii.Error, ValueError):
        return None
    return ("base64", data) if _text(data) else None


def scan_encoded(
    buf: bytes,
    runs: list[tuple[int, int]],
    spans: list[Span],
    budget: list[int],
    scan: Callable[[bytes, list[int]], list[Span]],
) -> None:
    """Decode every base64 or hex run of ``buf`` (``runs``: the runs of the base64 alphabet that
    the random-run rule visited, in order) that no block finding covers yet, and judge the text
    with ``scan`` (the gate without this step) on the same ``budget``."""
    # Decoded text is judged on a share of the budget (a scan of dense decoded text costs more per
    # unit than the outer scan's steps); what it spends comes off the caller's budget, and running
    # out of the share refuses the buffer like running out of the budget.
    allowed = min(budget[0], 256 + len(buf) // 1024)
    share = [allowed]
    _decode_runs(buf, runs, spans, share, scan)
    budget[0] = -1 if share[0] < 0 else budget[0] - (allowed - share[0])


def _decode_runs(
    buf: bytes,
    runs: list[tuple[int, int]],
    spans: list[Span],
    budget: list[int],
    scan: Callable[[bytes, list[int]], list[Span]],
) -> None:
    covered = sorted((s, e) for _rule, s, e, sev in spans if sev == BLOCK)
    ci = 0
    reach = -1  # the furthest end of a finding that starts before the current run ends
    for pos, stop in runs:
        if stop - pos < MIN_BASE64:
            continue
        head = buf[pos:stop].rstrip(b"=")
        cut = head.rfind(b"=") + 1  # ``NAME=<base64>`` glued together: the part after the last '='
        start = pos + cut
        while ci < len(covered) and covered[ci][0] < stop:
            reach = max(reach, covered[ci][1])
            ci += 1
        if reach > start:
            continue  # a finding covers this run already
        decoded = _decode(buf[start:stop])
        if decoded is None:
            continue
        kind, text = decoded
        budget[0] -= 4 + len(text) // 256  # a scan of the text: ~40 us, as a judged run
        if budget[0] < 0:
            return
        for rule, _s, _e, sev in scan(text, budget):
            if sev == BLOCK and rule != "scan-budget":
                spans.append((f"{kind}:{rule}", start, stop, BLOCK))
                break
