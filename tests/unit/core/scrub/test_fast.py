"""Fast paths of the scrub gate agree with the plain ones: needle guards, the home-path pass, and the
CLI's parallel UTF-8 check + clean proof (first invalid byte, BOM, secrets in the last part)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from acx.cli import offline_scrub
from acx.core import scrub
from acx.core.scrub import generic

NEEDLES = [b"~/", b"Q~", b"\\Users\\", b"dapi", b"eyJ", b"~"]


def plain_find_all(buf: bytes, needle: bytes, step: int = 1) -> list[int]:
    out = []
    i = buf.find(needle)
    while i >= 0:
        out.append(i)
        i = buf.find(needle, i + step)
    return out


def plain_scan_home(buf: bytes) -> list[tuple[str, int, int, str]]:
    """The home-path pass before it was folded into one regex pass and guarded by memchr."""
    spans = []
    for trig in (b"/home/", b"/Users/", b"\\Users\\"):
        i = buf.find(trig)
        while i >= 0:
            start = i - 2 if trig == b"\\Users\\" and i >= 2 else i
            m = generic.HOME.match(buf, start)
            if m is not None:
                spans.append(("home-path", start, m.end(), scrub.WARN))
            i = buf.find(trig, i + 1)
    i = buf.find(b"~/")
    while i >= 0:
        if i == 0 or buf[i - 1] in b" \t\n\"'`(=:\x00[{,":
            spans.append(("home-path", i, i + 2, scrub.WARN))
        i = buf.find(b"~/", i + 2)
    return spans


pieces = st.sampled_from(
    ["/home/", "/Users/", "C:\\Users\\", "\\Users\\", "~/", "~", "/", "\\", "home", "Users", "bob", " ", ":"]
)
texts = st.lists(pieces, max_size=30).map(lambda parts: "".join(parts).encode())


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(NEEDLES), st.sampled_from([1, 2]))
def test_find_all_finds_what_a_plain_search_finds(buf: bytes, needle: bytes, step: int) -> None:
    assert list(generic.find_all(buf, needle, step)) == plain_find_all(buf, needle, step)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_home_pass_reports_what_the_per_needle_search_reported(buf: bytes) -> None:
    spans: list[tuple[str, int, int, str]] = []
    generic.scan_home(buf, spans)
    assert sorted(spans) == sorted(plain_scan_home(buf))


def test_overlapping_home_paths_are_all_seen() -> None:
    spans: list[tuple[str, int, int, str]] = []
    generic.scan_home(b"x /home/home/alice ~/a", spans)
    assert sorted(s[1] for s in spans) == [2, 7, 19]


# --- the CLI's fast verdict: parts checked in parallel must agree with the whole checked at once


def big_bundle(tail: str = "") -> bytes:
    records = [{"id": f"r{i}", "summary": "caf\u00e9 bucket \U0001f680 note " * 30} for i in range(12_000)]
    records[-1]["summary"] += tail
    data = json.dumps(records, ensure_ascii=False).encode()
    assert len(data) > 8_000_000
    return data


def run_cli(path: Path) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-m", "acx.cli.main", "scrub", str(path)]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=False)


def test_parallel_verdict_equals_the_serial_one() -> None:
    clean = big_bundle()
    dirty = big_bundle(" npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    cut = len(clean) - 50
    broken = clean[:cut] + b"\xc3" + clean[cut + 1 :]  # a lone lead byte near the end: last part
    for data, verdict in ((clean, offline_scrub._CLEAN), (dirty, offline_scrub._VALID)):
        assert offline_scrub._fast_verdict(data, []) == verdict
        assert offline_scrub._check_part(data, []) == verdict
    assert offline_scrub._fast_verdict(broken, []) == offline_scrub._UNKNOWN


def test_invalid_utf8_in_the_last_part_reports_the_first_bad_byte(tmp_path: Path) -> None:
    data = big_bundle()
    first, second = len(data) - 900, len(data) - 40
    data = data[:first] + b"\xff" + data[first + 1 : second] + b"\xc3" + data[second + 1 :]
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    result = run_cli(path)
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode() == f"acx scrub: {path}: not UTF-8 (byte offset {first})\n"


def test_bom_and_non_ascii_big_file_is_clean_and_bom_offsets_stay_file_offsets(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + big_bundle()
    path = tmp_path / "bom.json"
    path.write_bytes(data)
    result = run_cli(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b'{"blocked": false, "findings": [], "warnings": []}\n'
    cut = data.rindex(b"note")
    path.write_bytes(data[:cut] + b"\xed\xa0\x80" + data[cut:])  # an encoded surrogate is not UTF-8
    result = run_cli(path)
    assert result.returncode == 2
    assert f"(byte offset {cut})" in result.stderr.decode()


def test_secret_in_the_last_part_of_a_non_ascii_file_blocks(tmp_path: Path) -> None:
    path = tmp_path / "dirty.json"
    path.write_bytes(big_bundle(" token: hv" + "s.CAESIJlU1s9XyZkMPq2Rt3v4W5x6Y7z8A9b0"))
    result = run_cli(path)
    assert result.returncode == 3
    report = json.loads(result.stdout)
    assert report["blocked"] is True
    assert {f["location"] for f in report["findings"]} == {"record:r11999"}


utf8_pieces = st.lists(
    st.one_of(
        st.text(max_size=4).map(lambda t: t.encode("utf-8", "surrogatepass")),  # lone surrogates too
        st.binary(max_size=3),
        st.sampled_from([b"\xc3", b"\xa9", b"\xf0\x9f", b"\x9a\x80", b"\xed\xa0\x80", b"\xc0\xaf", b"a"]),
    ),
    max_size=20,
).map(b"".join)


@settings(max_examples=1000, deadline=None)
@given(utf8_pieces, st.integers(1, 9))
def test_piecewise_utf8_check_equals_decoding_at_once(data: bytes, step: int) -> None:
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert offline_scrub.is_utf8(data, step) is valid
    assert offline_scrub.is_utf8(data) is valid


def test_a_run_of_continuation_bytes_at_a_cut_is_refused() -> None:
    assert offline_scrub.is_utf8(b"ab" + b"\x80" * 6 + b"cd", 3) is False
    assert offline_scrub.is_utf8((("x" * 5 + "\U0001f680") * 3).encode(), 6) is True


keyword_texts = st.lists(
    st.sampled_from(
        [
            "pass",
            "PassWord",
            "wd",
            "phrase",
            "pwd",
            "secret",
            "token",
            "key",
            "auth",
            "cred",
            "creds",
            "entials",
            "db_",
            "api",
            "_",
            "'",
            '"',
            " ",
            "\t",
            ":",
            "=",
            "Zx9!kq2Lm",
            "hunter2",
            "x1",
            "\n",
        ]
    ),
    max_size=25,
).map(lambda parts: "".join(parts).encode())


@settings(max_examples=500, deadline=None)
@given(keyword_texts)
def test_keyword_pass_still_sees_a_planted_assignment_after_any_prefix(buf: bytes) -> None:
    """Skipping past what was read never skips a later assignment: one planted at the end is found."""
    text = buf + b"\n db_password=Zx9!kq2Lm"
    spans: list[tuple[str, int, int, str]] = []
    generic.scan_assignments(text, text.lower(), spans, [10**6])
    assert ("secret-assignment", len(text) - 9, len(text), "block") in spans
    for _rule, s, e, _sev in spans:
        assert 0 <= s < e <= len(text)
