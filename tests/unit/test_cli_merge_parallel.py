"""`acx merge` split over two processes gives the serial answer, byte for byte: same output, same
exit code, same first error (file, JSON path, message), same refusal of what the strict parser
refuses, whichever process's share holds the problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acx.cli import offline_merge
from acx.cli.main import main
from acx.core.canonical import CanonicalError

CBF = "cbf1_" + "ab" * 20


def rec(i: int, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"m{i:05d}",
        "title": f"title {i % 7}",
        "summary": f"summary {i % 11} caf\u00e9 \U0001f680",
        "sourceType": "memory",
        "portable": i % 4 != 0,
        "codebaseFingerprint": None if i % 4 else CBF,
        "repoId": None,
        "repoLabel": "core",
        "projectLabel": "api",
        "timestamp": f"2026-01-{1 + i % 28:02d}T00:00:00Z",
        "impact": ("positive", "neutral", "negative")[i % 3],
        "xpAwarded": i % 5,
        "tags": ["b", "a"][: i % 3],
    }
    base.update(over)
    return base


def serial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offline_merge, "_PARALLEL_MIN_BYTES", 1 << 62)


def parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offline_merge, "_PARALLEL_MIN_BYTES", 0)


def run_both(monkeypatch: pytest.MonkeyPatch, capsysbinary: Any, *files: str) -> tuple[Any, Any]:
    """(exit code, stdout, stderr) of `acx merge FILES` run serially, then split over two processes."""
    results = []
    for mode in (serial, parallel):
        mode(monkeypatch)
        code = main(["merge", *files])
        out = capsysbinary.readouterr()
        results.append((code, out.out, out.err))
    return results[0], results[1]


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


# Edits that break one record; each lands in the parent's share (early) or the child's (late).
BREAKS = {
    "bad tier": lambda r: r.update(portable="yes"),
    "unknown field": lambda r: r.update(extra=1),
    "missing id": lambda r: r.pop("id"),
    "bad timestamp": lambda r: r.update(timestamp="2026-02-30T00:00:00Z"),
    "bad tag": lambda r: r.update(tags=["a", 3]),
}


@pytest.mark.parametrize("where", [3, 50, 79])
@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_first_invalid_record_is_reported_as_serially(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any, kind: str, where: int
) -> None:
    records = [rec(i) for i in range(80)]
    BREAKS[kind](records[where])
    BREAKS["bad tier"](records[72])  # a second error, later: never the one reported unless first
    f = write(tmp_path / "b.json", json.dumps(records, ensure_ascii=False))
    ser, par = run_both(monkeypatch, capsysbinary, f)
    assert par == ser
    assert ser[0] == 2
    assert f"$[{min(where, 72)}]".encode() in ser[2]


def test_duplicate_key_in_the_childs_share_beats_an_invalid_record_in_the_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    records = [rec(i) for i in range(80)]
    records[2]["portable"] = "yes"
    text = json.dumps(records, ensure_ascii=False)
    head, _, tail = text.partition('"id": "m00075"')
    text = head + '"id": "m00075", "id": "m00075"' + tail
    f = write(tmp_path / "dup.json", text)
    ser, par = run_both(monkeypatch, capsysbinary, f)
    assert par == ser
    assert ser[0] == 2 and b"duplicate object key" in ser[2]


@pytest.mark.parametrize(
    "edit",
    [
        # a key hidden from the token count by whitespace, plus a duplicate: strict parser refuses
        lambda t: t.replace('"title": "title 3"', '"title" : "a", "title": "title 3"', 1),
        # a huge integer: orjson reads a float, the strict parser refuses it
        lambda t: t.replace('"xpAwarded": 1', '"xpAwarded": 18446744073709551616', 1),
        # a key-like lookalike inside a string value: fast proof not possible, strict path
        lambda t: t.replace('"summary 9', '"he said \\": ok', 1),
        lambda t: t[:-5],  # not JSON at all
        lambda t: '{"records": ' + t + "}",  # not an array
    ],
)
def test_what_the_fast_proof_cannot_prove_goes_strict_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any, edit: Any
) -> None:
    text = edit(json.dumps([rec(i) for i in range(80)], ensure_ascii=False))
    f = write(tmp_path / "odd.json", text)
    ser, par = run_both(monkeypatch, capsysbinary, f)
    assert par == ser


def test_several_files_merge_the_same_and_the_second_file_error_wins_over_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    a = [rec(i) for i in range(60)]
    b = [rec(i, summary="a longer summary that wins", xpAwarded=9) for i in range(30, 90)]
    b.append({**a[5], "id": "copy-of-5"})  # same content under another id: folded
    fa = write(tmp_path / "a.json", json.dumps(a, ensure_ascii=False))
    fb = write(tmp_path / "b.json", json.dumps(b, ensure_ascii=False))
    ser, par = run_both(monkeypatch, capsysbinary, fa, fb)
    assert par == ser and ser[0] == 0
    assert len(json.loads(ser[1])) == 90
    b[-10]["impact"] = "great"
    fb = write(tmp_path / "b.json", json.dumps(b, ensure_ascii=False))
    ser, par = run_both(monkeypatch, capsysbinary, fa, fb)
    assert par == ser
    assert ser[0] == 2 and ser[2].startswith(f"acx merge: {fb}: $[51].impact".encode())


def test_a_failing_child_or_no_fork_falls_back_to_the_serial_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    records = [rec(i) for i in range(80)]
    records[70]["tags"] = "x"
    f = write(tmp_path / "b.json", json.dumps(records, ensure_ascii=False))
    expected, _ = run_both(monkeypatch, capsysbinary, f)

    def boom(*args: Any) -> None:
        raise MemoryError

    monkeypatch.setattr(offline_merge, "_partner", boom)
    assert run_both(monkeypatch, capsysbinary, f)[1] == expected
    monkeypatch.undo()
    monkeypatch.delattr(os, "fork")
    assert run_both(monkeypatch, capsysbinary, f)[1] == expected


record_lists = st.lists(
    st.builds(
        rec,
        st.integers(0, 40),  # few ids and contents: same-id and same-slot folds happen
        summary=st.sampled_from(["s", "s ", "S", "t", "caf\u00e9 \U0001f680"]),
        tags=st.lists(st.sampled_from(["a", "b", "B", "\u00e9"]), max_size=3),
        xpAwarded=st.sampled_from([0, 1, 2.5, 1.0]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record_lists, st.floats(0.0, 1.0))
def test_load_and_check_split_equals_serial(
    monkeypatch: pytest.MonkeyPatch, records: list[dict[str, Any]], share: float
) -> None:
    data = json.dumps(records, ensure_ascii=False).encode()
    serial(monkeypatch)
    expected = offline_merge.load_and_check(data)
    assert expected[3] is None
    parallel(monkeypatch)
    monkeypatch.setattr(offline_merge, "_PARENT_SHARE", share)
    *got, partner = offline_merge.load_and_check(data)
    if partner is not None:
        partner.close()
    assert tuple(got) == expected[:3]
    assert expected[2] == offline_merge._check(records, 0, len(records))[1]


def test_load_and_check_raises_like_load_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    parallel(monkeypatch)
    with pytest.raises(CanonicalError):
        offline_merge.load_and_check(b'[{"id":"a","id":"b"}]')


def run_process(*argv: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-m", "acx.cli.main", "merge", *argv]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=False)


def test_process_exit_flushes_a_large_output_and_keeps_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    records = [rec(i, summary="x" * 500 + str(i)) for i in range(3000)]  # ~2 MB out: many pipe writes
    f = write(tmp_path / "big.json", json.dumps(records))
    assert main(["merge", f]) == 0
    expected = capsysbinary.readouterr().out
    proc = run_process(f)
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout == expected
    records[2999]["xpAwarded"] = -1
    bad = write(tmp_path / "bad.json", json.dumps(records))
    proc = run_process(bad)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith(f"acx merge: {bad}: $[2999].xpAwarded: must be")
    conflict = [rec(1), rec(1, portable=False, codebaseFingerprint=CBF)]
    proc = run_process(write(tmp_path / "c.json", json.dumps(conflict)))
    assert proc.returncode == 2 and b"refusing to merge" in proc.stderr


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 7])
@pytest.mark.parametrize("chunk", [1, 2, 3, 2000])
def test_sliced_output_is_orjson_dumps_of_the_whole(n: int, chunk: int) -> None:
    import io

    import orjson

    items = [rec(i, tags=["z", "\u00e9"][: i % 3]) for i in range(n)]
    out = io.BytesIO()
    offline_merge.write_array(out, items, chunk)
    assert out.getvalue() == orjson.dumps(items) + b"\n"


# --- the fast parse proof: orjson's value is used only when the strict parser gives the same one

KEYS = st.sampled_from(["id", "xpAwarded", "similarity", "tags", 'q"k', "k\\"])
SCALARS = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.sampled_from([2.5, -0.0, 1e300, 9007199254740993.0, 1.5e16]),
    st.sampled_from(['he said \\": ok', "a : b", "x\\\\", "", "caf\u00e9"]).map(json.dumps),
    st.sampled_from(["null", "true", "[]", '["a", 1]']),
).map(lambda v: v if isinstance(v, str) else json.dumps(v))
COLONS = st.sampled_from([":", ": ", " :", "\n:\t", ":\r\n"])


# Integer literals beyond 64 bits: orjson reads a float, the strict parser refuses. Other fields bound
# their numbers through validate_record (see _fast_parse_agrees), so only these two are generated.
HUGE = st.sampled_from(["18446744073709551616", "-18446744073709551617", "100000000000000000000000"])


@st.composite
def bundle_texts(draw: Any) -> str:
    items = []
    for _ in range(draw(st.integers(0, 4))):
        pairs = []
        for _ in range(draw(st.integers(0, 4))):
            key, colon = draw(KEYS), draw(COLONS)
            numbers = st.one_of(SCALARS, HUGE) if key in ("xpAwarded", "similarity") else SCALARS
            pairs.append(json.dumps(key) + colon + draw(numbers))
        items.append("{" + ", ".join(pairs) + "}")
    return "[" + ", ".join(items) + "]"


@settings(max_examples=500, deadline=None)
@given(bundle_texts())
def test_fast_parse_is_used_only_when_the_strict_parser_agrees(text: str) -> None:
    from acx.core.canonical import loads

    try:
        strict: Any = loads(text.encode())
    except CanonicalError as exc:
        strict = (exc.path, exc.message)
    try:
        fast: Any = offline_merge.load_bundle(text.encode())
    except CanonicalError as exc:
        fast = (exc.path, exc.message)
    assert json.dumps(fast) == json.dumps(strict)  # types too: 1 and 1.0 differ


def test_the_partner_folds_the_linked_records_and_a_failed_fold_is_redone_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    from acx.core import merge

    records = [rec(i % 50, xpAwarded=i % 7) for i in range(120)]  # same ids: 50 groups to fold
    records += [{**rec(i), "id": f"copy-{i}"} for i in range(5)]  # same content, other id
    f = write(tmp_path / "b.json", json.dumps(records, ensure_ascii=False))
    expected, _ = run_both(monkeypatch, capsysbinary, f)
    assert expected[0] == 0
    original = merge.fold_groups
    here: list[int] = []

    def counted(records: Any, groups: list[list[int]]) -> Any:
        here.append(len(groups))  # appended in the process that folds; the child's list is its own
        return original(records, groups)

    monkeypatch.setattr(merge, "fold_groups", counted)
    assert run_both(monkeypatch, capsysbinary, f)[1] == expected
    everything = sum(here[:2])  # the serial run folds every group here (in two calls)
    assert everything >= 50
    assert 0 < sum(here[2:]) < everything / 4  # the parallel run: most groups in its partner

    def broken(*args: Any) -> Any:
        if os.getpid() != parent:
            raise RuntimeError("the partner dies mid-fold")
        return original(*args)

    parent = os.getpid()
    monkeypatch.setattr(merge, "fold_groups", broken)
    assert run_both(monkeypatch, capsysbinary, f)[1] == expected
