"""`acx scrub`: exit codes, output and error paths through the real command, and the fast verdict
(UTF-8 checked in parallel parts, the clean proof) agreeing with the plain one on large files.

Planted values are fake, format-valid tokens.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from acx.cli import offline_scrub

A36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HEX32 = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
NPM_TOKEN = "npm_" + A36
VAULT_TOKEN = "hvs.CAESIAb1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv"
TWILIO_KEY = "SK" + HEX32
SHOPIFY_TOKEN = "shpat_" + HEX32


def run_cli(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``acx scrub ARGV`` in a child process (an 8 MB file takes a while on a loaded machine)."""
    return subprocess.run(
        [sys.executable, "-m", "acx.cli.main", "scrub", *argv], input=stdin, capture_output=True, timeout=120
    )


def test_cli_exit_codes_and_output(tmp_path) -> None:
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps([{"id": "a", "summary": "token bucket, fixed in 3f2a9c1"}]))
    dirty = tmp_path / "dirty.json"
    dirty.write_text(json.dumps({"records": [{"id": "a", "summary": "k " + NPM_TOKEN}]}))
    text = tmp_path / "notes.md"
    text.write_text("# Notes\n\nsee /home/alice/x\n")
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\xff\xfe\x00garbage")

    ok = run_cli(str(clean))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == {"blocked": False, "findings": [], "warnings": []}

    blocked = run_cli(str(dirty))
    assert blocked.returncode == 3
    out = json.loads(blocked.stdout)
    assert out["blocked"] is True
    assert out["findings"] == [
        {
            "rule": "npm-access-token",
            "location": "record:a",
            "path": "$.summary",
            "offset": 2,
            "severity": "block",
        }
    ]
    assert NPM_TOKEN[:8].encode() not in blocked.stdout + blocked.stderr

    warned = run_cli(str(text))
    assert warned.returncode == 0
    assert json.loads(warned.stdout)["warnings"][0]["location"] == f"file:{text}"

    assert run_cli(str(bad)).returncode == 2
    assert run_cli(str(tmp_path / "missing.json")).returncode == 2

    forbid = run_cli(str(clean), "--forbid", "TOKEN BUCKET")
    assert forbid.returncode == 3
    assert json.loads(forbid.stdout)["findings"][0]["rule"] == "forbidden-literal"

    piped = run_cli("-", stdin=b"hello " + VAULT_TOKEN.encode())
    assert piped.returncode == 3


def test_cli_invalid_json_is_scanned_as_text(tmp_path) -> None:
    # duplicate keys make strict JSON fail; the file is then scanned as text, so nothing hides
    path = tmp_path / "dup.json"
    path.write_text('{"id": "a", "summary": "' + TWILIO_KEY + '", "summary": "clean"}')
    result = run_cli(str(path))
    assert result.returncode == 3
    assert json.loads(result.stdout)["findings"][0]["location"] == f"file:{path}"


def test_register_sets_func() -> None:
    parser = argparse.ArgumentParser()
    offline_scrub.register(parser.add_subparsers())
    args = parser.parse_args(["scrub", "x.json", "--forbid", "a", "--forbid", "b"])
    assert args.func is offline_scrub.run
    assert args.forbid == ["a", "b"]


def test_cli_parallel_fast_path_still_blocks(tmp_path) -> None:
    records = [{"id": f"r{i}", "summary": "token bucket note " * 40} for i in range(12_000)]
    records[-1]["summary"] += " " + SHOPIFY_TOKEN
    path = tmp_path / "big.json"
    path.write_text(json.dumps(records))
    assert path.stat().st_size > 8_000_000
    result = run_cli(str(path))
    assert result.returncode == 3
    assert json.loads(result.stdout)["findings"][0]["location"] == "record:r11999"


# --- the fast verdict on large files: parts checked in parallel agree with the whole checked at once


def big_bundle(tail: str = "") -> bytes:
    records = [{"id": f"r{i}", "summary": "caf\u00e9 bucket \U0001f680 note " * 30} for i in range(12_000)]
    records[-1]["summary"] += tail
    data = json.dumps(records, ensure_ascii=False).encode()
    assert len(data) > 8_000_000
    return data


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
    result = run_cli(str(path))
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode() == f"acx scrub: {path}: not UTF-8 (byte offset {first})\n"


def test_bom_and_non_ascii_big_file_is_clean_and_bom_offsets_stay_file_offsets(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + big_bundle()
    path = tmp_path / "bom.json"
    path.write_bytes(data)
    result = run_cli(str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == b'{"blocked": false, "findings": [], "warnings": []}\n'
    cut = data.rindex(b"note")
    path.write_bytes(data[:cut] + b"\xed\xa0\x80" + data[cut:])  # an encoded surrogate is not UTF-8
    result = run_cli(str(path))
    assert result.returncode == 2
    assert f"(byte offset {cut})" in result.stderr.decode()


def test_secret_in_the_last_part_of_a_non_ascii_file_blocks(tmp_path: Path) -> None:
    path = tmp_path / "dirty.json"
    path.write_bytes(big_bundle(" token: hv" + "s.CAESIJlU1s9XyZkMPq2Rt3v4W5x6Y7z8A9b0"))
    result = run_cli(str(path))
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
