"""The scrub gate: find secrets in memory records, knowledge files and skill bodies. Fail closed.

Every string is scanned: record ids, object keys and values at any depth, tags, knowledge and skill
file paths and contents (skill frontmatter included), and the bundle's other members. Any block
finding blocks the whole bundle; nothing is ever redacted silently. A report names the rule, where
and the byte offset into the UTF-8 encoding of that string, never the secret or any part of it:
when the place's own name matched (a record id, an object key, a file path), the place is named by
its index instead (``records[17]``, ``$.meta.<key#2>``, ``knowledge[3]``).

Modules: ``rules`` (the provider table), ``triggers`` (its prefilter), ``engine`` (one buffer),
``generic`` (name = value, XML pairs, URLs, random runs, home paths), ``decode`` (base64 and hex
runs decoded one level), ``judge`` (placeholders by form, randomness, checksums), ``normalise``
(NFKC, default-ignorables, offset map). This module walks documents; the scan budget belongs to
each string (``_Batch._scan_group``).

What the gate does NOT stop (docs/SCRUB.md has the full list): a secret split across two fields or
spelled out, encoded past one level (base64 of base64) or otherwise (URL-encoding, rot13) without a
secret-like name, homoglyphs NFKC keeps distinct, a dictionary-word password, an unknown format
shorter than 20 characters that is not assigned to a secret-like name.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from acx.core.scrub.engine import MIN_SECRET_LEN, scan_bytes
from acx.core.scrub.generic import BARE, BLOCK, WARN, hex_name_excused, secret_name
from acx.core.scrub.judge import hex_secret, is_secret_value, shannon_entropy, token_like
from acx.core.scrub.rules import RULES

__all__ = [
    "BLOCK",
    "MIN_SECRET_LEN",
    "RULE_IDS",
    "WARN",
    "Finding",
    "ScrubReport",
    "scan_any",
    "scan_bundle",
    "scan_raw_json_fast",
    "scan_record",
    "scan_text",
    "shannon_entropy",
    "split_raw_json",
]

#: Every rule id the gate can report (provider rules, then the generic ones, then the warning).
RULE_IDS: tuple[str, ...] = (
    *dict.fromkeys(r.id for r in RULES),
    "aws-secret-access-key",
    "uri-credentials",
    "secret-assignment",
    "high-entropy",
    "hex-assignment",
    "forbidden-literal",
    "scan-budget",
    "home-path",
)


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


_forbidden_cache: dict[tuple[str, ...], re.Pattern[bytes] | None] = {}


def _forbidden_pattern(forbidden: Sequence[str]) -> re.Pattern[bytes] | None:
    """Literal alternation (Python ``re`` on literals only: no backtracking beyond one literal)."""
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


def _enc(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def scan_text(
    text: str, location: str = "text", path: str = "", forbidden: Sequence[str] = ()
) -> list[Finding]:
    """Scan one string; offsets are byte offsets into its UTF-8 encoding."""
    pattern = _forbidden_pattern(forbidden) if forbidden else None
    return [Finding(rule, location, path, s, sev) for rule, s, _e, sev in scan_bytes(_enc(text), pattern)]


def _child_path(path: str, key: str, ordinal: int, hidden: bool) -> str:
    if hidden:
        return f"{path}.<key#{ordinal}>"  # the key itself matched: name it by its position
    if key.isidentifier() and key.isascii():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


_KEY_RULES = frozenset({"secret-assignment", "hex-assignment"})
# 32-512 hex digits, white space around allowed: fails at the first other character of a text
_HEX_VALUE = re.compile(r"\s*[0-9a-fA-F]{32,512}\s*\Z")


# Memoised: a bundle's records repeat the same few keys thousands of times. Bounded, so a document of
# distinct keys costs the computation each time, never unbounded memory.
@functools.lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    return secret_name(_enc(key))


@functools.lru_cache(maxsize=4096)
def _hex_key_excused(key: str) -> bool:
    return hex_name_excused(_enc(key))


def _collect(value: Any, out: list[str], kv: list[tuple[int, str]]) -> None:
    """Append every key and string value (keys before their values, in document order).

    ``kv`` gets the index of each key whose name is secret-like and whose value is a literal secret
    string (``{"db_password": "..."}``), and of each key given 32+ hex digits under a name that does
    not say digest, id or revision (``{"k": "<40 hex>"}``): a finding at that key's path.
    """
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                if isinstance(item, str) and len(item) >= 4 and _secret_key(key):
                    value = _enc(item)
                    weak = BARE.match(key.strip().lower().encode()) is not None
                    if is_secret_value(value, True, _enc(key)) and (not weak or token_like(value)):
                        kv.append((len(out), "secret-assignment"))
                elif (
                    isinstance(item, str)
                    and _HEX_VALUE.match(item) is not None
                    and hex_secret(_enc(item))
                    and not _hex_key_excused(key)
                ):
                    kv.append((len(out), "hex-assignment"))
                out.append(key)
            _collect(item, out, kv)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, out, kv)


def _paths(value: Any, path: str, hit: set[int], counter: list[int], out: list[str]) -> None:
    """The JSON path of every string ``_collect`` appends, in the same order; keys in ``hit``
    (string indexes that matched) are written by position, never by name."""
    if isinstance(value, str):
        out.append(path)
        counter[0] += 1
    elif isinstance(value, dict):
        for ordinal, (key, item) in enumerate(value.items()):
            sub = path
            if isinstance(key, str):
                hidden = counter[0] in hit
                sub = _child_path(path, key, ordinal, hidden)
                out.append(sub)
                counter[0] += 1
            else:
                sub = f"{path}.<key#{ordinal}>"
            _paths(item, sub, hit, counter, out)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _paths(item, f"{path}[{index}]", hit, counter, out)


@dataclass
class _Owner:
    first: int  # index of its first string
    location: str  # the place named by content (record:<id>, file:<path>)
    fallback: str  # the place named by position (records[3], knowledge[1])
    record: Any = None  # the record (paths are built from it) or None for a text
    name_index: int = -1  # the string that names the place (the id, the file path), if any
    text_path: str = ""


class _Batch:
    """Many strings scanned in one NUL-joined buffer; findings map back to (location, path, offset)."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self.owners: list[_Owner] = []
        self.kv: list[tuple[int, str]] = []

    def add_record(self, record: Any, fallback: str, id_location: bool = True) -> None:
        first = len(self.strings)
        rid = record.get("id") if isinstance(record, dict) else None
        location = fallback
        name_index = -1
        if id_location and isinstance(rid, str | int) and not isinstance(rid, bool):
            location = f"record:{rid}"
            if isinstance(rid, str):
                keys = list(record)
                # the id value's index: position of "id" key + 1 among the collected strings
                before: list[str] = []
                for key in keys[: keys.index("id")]:
                    _collect({key: record[key]}, before, [])
                name_index = first + len(before) + 1
        self.owners.append(_Owner(first, location, fallback, record, name_index))
        _collect(record, self.strings, self.kv)

    def add_file(self, kind: str, index: int, file_path: str, body: str) -> None:
        first = len(self.strings)
        fallback = f"{kind}[{index}]"
        self.owners.append(_Owner(first, f"file:{file_path}", fallback, None, first, "$.path"))
        self.strings.append(file_path)
        self.owners.append(_Owner(first + 1, f"file:{file_path}", fallback, None, first))
        self.strings.append(body)

    def add_text(self, location: str, text: str) -> None:
        self.owners.append(_Owner(len(self.strings), location, location))
        self.strings.append(text)

    def scan(self, pattern: re.Pattern[bytes] | None) -> list[Finding]:
        spans = self._scan_spans(pattern)
        hits: list[tuple[int, str, int, str]] = [(i, rule, 0, BLOCK) for i, rule in self.kv]
        hits.extend(spans)
        if not hits:
            return []
        hit_strings = {h[0] for h in spans}  # strings that themselves matched: never named
        starts = [o.first for o in self.owners]
        paths: dict[int, list[str]] = {}
        findings: list[Finding] = []
        seen: set[tuple[int, str]] = set()
        import bisect

        for index, rule, offset, sev in sorted(hits):
            if rule in _KEY_RULES and offset == 0 and (index, rule) in seen:
                continue
            seen.add((index, rule))
            owner_ix = bisect.bisect_right(starts, index) - 1
            owner = self.owners[owner_ix]
            location = owner.fallback if owner.name_index in hit_strings else owner.location
            if owner.record is None:
                path = owner.text_path
            else:
                if owner_ix not in paths:
                    hit_local = {i - owner.first for i in hit_strings}
                    walked: list[str] = []
                    _paths(owner.record, "$", hit_local, [0], walked)
                    paths[owner_ix] = walked
                path = paths[owner_ix][index - owner.first]
            findings.append(Finding(rule, location, path, offset, sev))
        return findings

    def _scan_spans(self, pattern: re.Pattern[bytes] | None) -> list[tuple[int, str, int, str]]:
        out: list[tuple[int, str, int, str]] = []
        if self.strings:
            self._scan_group(0, len(self.strings), pattern, out)
        return out

    def _scan_group(
        self, lo: int, hi: int, pattern: re.Pattern[bytes] | None, out: list[tuple[int, str, int, str]]
    ) -> None:
        """Strings ``lo..hi-1`` joined by NUL and scanned as one buffer, spans mapped back to
        (string index, rule, offset in that string, severity).

        The scan budget belongs to each string: a group whose joined scan runs out of it is split
        in halves and each half scanned again, down to the string that exhausts its own budget
        alone. That string is refused with ``scan-budget`` at its own location; every other string
        is judged normally. Honest bundles take one pass; each level of halving is one bounded scan
        of the strings below it, so a hostile bundle costs O(n log n), never more.
        """
        strings = self.strings[lo:hi]
        buf = _enc("\x00".join(strings))
        whole = buf.count(b"\x00") == len(strings) - 1  # no string holds a NUL of its own
        spans = scan_bytes(buf, pattern) if whole or hi - lo == 1 else None
        if spans is None or (hi - lo > 1 and any(sp[0] == "scan-budget" for sp in spans)):
            mid = (lo + hi) // 2
            self._scan_group(lo, mid, pattern, out)
            self._scan_group(mid, hi, pattern, out)
            return
        if hi - lo == 1:
            out.extend((lo, rule, 0 if rule == "scan-budget" else s, sev) for rule, s, _e, sev in spans)
            return
        if not spans:
            return
        import bisect

        seps = [m.start() for m in re.finditer(b"\x00", buf)] if len(spans) >= 64 else None
        for rule, s, _e, sev in spans:
            if seps is None:
                index = buf.count(b"\x00", 0, s)
                start = buf.rfind(b"\x00", 0, s) + 1
            else:
                index = bisect.bisect_left(seps, s)
                start = seps[index - 1] + 1 if index else 0
            out.append((lo + index, rule, s - start, sev))


def scan_record(record: dict[str, Any], forbidden: Sequence[str] = (), index: int = 0) -> list[Finding]:
    """Scan every key and string value of one record at any depth (location ``record:<id>``, or
    ``records[<index>]`` when the id itself matched)."""
    batch = _Batch()
    batch.add_record(record, f"records[{index}]")
    return batch.scan(_forbidden_pattern(forbidden) if forbidden else None)


def scan_bundle(
    records: Iterable[dict[str, Any]],
    knowledge: Iterable[tuple[str, str]] = (),
    skills: Iterable[tuple[str, str]] = (),
    forbidden: Sequence[str] = (),
    other: dict[str, Any] | None = None,
    first_index: int = 0,
) -> ScrubReport:
    """Scan a whole bundle: every record, every knowledge and skill file (path and content), and the
    bundle's ``other`` members (vectors...). ``first_index`` numbers records in ``records[i]``."""
    batch = _Batch()
    for i, record in enumerate(records):
        batch.add_record(record, f"records[{first_index + i}]")
    for i, (file_path, body) in enumerate(knowledge):
        batch.add_file("knowledge", i, file_path, body)
    for i, (file_path, body) in enumerate(skills):
        batch.add_file("skills", i, file_path, body)
    if other:
        batch.add_record(other, "bundle", id_location=False)
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
                rest = {
                    k: v for k, v in item.items() if k not in ("path", "name", "body", "content", "markdown")
                }
                text = body if isinstance(body, str) else _as_text(item)
                yield str(name), text + ("\n" + _as_text(rest) if rest else "")
            elif isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[1], str):
                yield str(item[0]), item[1]
            else:
                yield f"[{index}]", _as_text(item)


def _as_text(value: Any) -> str:
    # Unknown shapes are still scanned (fail closed): every key and string inside, one per line.
    strings: list[str] = []
    _collect(value, strings, [])
    return "\n".join(strings)


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
        return scan_bundle(
            [r if isinstance(r, dict) else {"value": r} for r in records],
            _files(doc.get("knowledge") or []),
            _files(doc.get("skills") or []),
            forbidden,
            other=rest or None,
        )
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
    return not scan_bytes(data, pattern)


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
