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
from tests.factories import CBF, memory


def rec(i: int, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "portable": i % 4 != 0,
        "title": f"title {i % 7}",
        "summary": f"summary {i % 11} caf\u00e9 \U0001f680",
        "sourceType": "memory",
        "codebaseFingerprint": None if i % 4 else CBF,
        "repoId": None,
        "repoLabel": "core",
        "timestamp": f"2026-01-{1 + i % 28:02d}T00:00:00Z",
        "impact": ("positive", "neutral", "negative")[i % 3],
        "xpAwarded": i % 5,
        "tags": ["b", "a"][: i % 3],
    }
    return memory(f"m{i:05d}", **fields | over)


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

    monkeypatch.setattr(offline_merge, "_second_half", boom)
    assert run_both(monkeypatch, capsysbinary, f)[1] == expected
    monkeypatch.undo()
    monkeypatch.delattr(os, "fork")
    assert run_both(monkeypatch, capsysbinary, f)[1] == expected


def halves(data: bytes, name: str, monkeypatch: pytest.MonkeyPatch) -> bytes | None:
    """What the two-process path writes for ``data`` (mapped from the file ``name``), or None when it
    hands over to the serial path."""
    import io

    Path(name).write_bytes(data)
    parallel(monkeypatch)
    mapped = offline_merge._map(name)
    assert mapped is not None
    out = io.BytesIO()
    with mapped:
        result = offline_merge._merge_halves(name, mapped, out)
    if result is None or result[0] == 0:
        return None if result is None else out.getvalue()
    assert out.getvalue() == b""  # an error writes nothing
    return f"exit {result[0]}: {result[1]}\n".encode()


def serially(data: bytes, path: Path, capsysbinary: Any) -> bytes:
    code = offline_merge._merge_files([write(path, data.decode())])
    out = capsysbinary.readouterr()
    return out.out if code == 0 else f"exit {code}: {out.err.decode().removeprefix('acx merge: ')}".encode()


def test_the_two_processes_do_the_work_and_the_answer_is_the_serial_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    records = [rec(i % 50, xpAwarded=i % 7) for i in range(120)]  # same ids, in both halves: folded
    records += [{**rec(i), "id": f"copy-{i}"} for i in range(5)]  # same content, other id
    records += [rec(i, id=f"{c}{i}") for i, c in enumerate(("A", "a", "_", "x:", "-", "0", "z.") * 7, 200)]
    records += [rec(500 + i % 5, xpAwarded=i) for i in range(10)]  # groups wholly in the child's half
    data = json.dumps(records, ensure_ascii=False).encode()
    serial(monkeypatch)
    expected = serially(data, tmp_path / "b.json", capsysbinary)
    plans: list[Any] = []
    send = offline_merge._Child.send
    monkeypatch.setattr(
        offline_merge._Child, "send", lambda child, plan: plans.append(plan) or send(child, plan)
    )
    got = halves(data, str(tmp_path / "b.json"), monkeypatch)
    assert got == expected
    _, linked, runs, lent = plans[0]
    assert linked and lent and runs  # records crossed the cut both ways, to be folded on either side
    assert len(json.loads(expected)) == 50 + 49 + 5
    # The child wrote its lone records: without it, the parent has no answer to give.
    monkeypatch.setattr(offline_merge, "_second_half", lambda *args: os._exit(0))
    assert halves(data, str(tmp_path / "b.json"), monkeypatch) is None


def test_a_cut_inside_a_string_hands_over_to_the_serial_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    records = [rec(i) for i in range(40)]
    records[20]["summary"] = "config was {a: 1}, {b: 2} after the fix"
    data = json.dumps(records, ensure_ascii=False).encode()
    monkeypatch.setattr(offline_merge, "_CUT", data.index(b"{a: 1}") / len(data))
    comma = offline_merge._cut(bytearray(data))
    assert comma is not None and data[comma - 1 : comma + 1] == b"},"  # inside the string
    assert halves(data, str(tmp_path / "b.json"), monkeypatch) is None
    serial(monkeypatch)
    expected = serially(data, tmp_path / "b.json", capsysbinary)
    parallel(monkeypatch)
    assert serially(data, tmp_path / "b.json", capsysbinary) == expected
    assert json.loads(expected)[20]["summary"] == records[20]["summary"]


def test_a_fold_landing_on_another_survivors_slot_is_merged_serially(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    """a1 and a2 (one id) fold to the longer title of one and the longer summary of the other, which
    is exactly b's content: the serial merge folds b in too, a second round the halves do not do."""
    a1 = rec(1, id="a", title="a longer title", summary="s")
    a2 = rec(1, id="a", title="t", summary="a longer summary")
    b = rec(1, id="b", title="a longer title", summary="a longer summary")
    records = [a1, *[rec(i) for i in range(10, 50)], a2, b]
    data = json.dumps(records, ensure_ascii=False).encode()
    assert halves(data, str(tmp_path / "b.json"), monkeypatch) is None
    serial(monkeypatch)
    expected = serially(data, tmp_path / "b.json", capsysbinary)
    parallel(monkeypatch)
    assert serially(data, tmp_path / "b.json", capsysbinary) == expected
    merged = json.loads(expected)
    assert [r["id"] for r in merged].count("b") == 0 and len(merged) == 41


record_lists = st.lists(
    st.builds(
        lambda i, letter, **over: rec(i, id=f"{letter}{i % 8}", **over),  # i % 4 is the tier: no refusal
        st.integers(0, 40),  # few ids and contents: same-id and same-slot folds happen
        st.sampled_from(["a", "b", "B", "_", ".", "0", "z-"]),
        summary=st.sampled_from(["s", "s ", "S", "t", "caf\u00e9 \U0001f680"]),
        tags=st.lists(st.sampled_from(["a", "b", "B", "\u00e9"]), max_size=3),
        xpAwarded=st.sampled_from([0, 1, 2.5, 1.0]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record_lists, st.floats(0.0, 1.0), st.booleans())
def test_two_halves_give_the_serial_answer_wherever_the_cut(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: Any,
    records: list[dict[str, Any]],
    cut: float,
    break_one: bool,
) -> None:
    if break_one:
        records[len(records) // 2]["impact"] = "great"
    data = json.dumps(records, ensure_ascii=False).encode()
    serial(monkeypatch)
    expected = serially(data, tmp_path / "b.json", capsysbinary)
    monkeypatch.setattr(offline_merge, "_CUT", cut)
    got = halves(data, str(tmp_path / "b.json"), monkeypatch)
    assert got is None or got == expected


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet='{}[],:"\\ ab1', max_size=12), max_size=6), st.floats(0.0, 1.0))
def test_halves_are_accepted_only_when_together_they_are_the_strict_parse(
    parts: list[str], cut: float
) -> None:
    """Strings full of ``},`` and quotes: a cut inside one must never yield a value."""
    from acx.core.canonical import loads

    text = json.dumps([{"id": part, "k": [part]} for part in parts]).encode()
    for at in (cut, 0.0, 0.5):
        found = offline_merge._RECORD_GAP.search(text, int(len(text) * at))
        if found is None:
            continue
        data = bytearray(text)
        first = offline_merge._parse_half(data, found.end() - 1, first=True)
        second = offline_merge._parse_half(data, found.end() - 1, first=False)
        assert data == text  # the comma is put back
        if first is not None and second is not None:
            assert first + second == loads(text)


def run_process(*argv: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-m", "acx.cli.main", "merge", *argv]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=False)


def test_process_exit_flushes_a_large_output_and_keeps_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    # ~5 MB: over _PARALLEL_MIN_BYTES, so the real process forks; many pipe writes on the way out
    records = [rec(i, summary="x" * 1500 + str(i)) for i in range(3000)]
    f = write(tmp_path / "big.json", json.dumps(records))
    assert Path(f).stat().st_size > offline_merge._PARALLEL_MIN_BYTES
    serial(monkeypatch)
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
    records[2999]["xpAwarded"] = 1
    conflict = [*records, rec(1, portable=False, codebaseFingerprint=CBF)]  # one id, two tiers, far apart
    proc = run_process(write(tmp_path / "c.json", json.dumps(conflict)))
    assert proc.returncode == 2 and proc.stdout == b""
    assert (
        proc.stderr
        == b"acx merge: refusing to merge records 'm00001' and 'm00001': they differ in tier (portable)\n"
    )


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


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.lists(st.integers(0, 200_000), max_size=8), st.integers(0, 200_000))
def test_counting_a_mapped_text_is_bytes_count(pad: int, spots: list[int], start: int) -> None:
    """Tokens placed anywhere, 64 KiB slice boundaries included, are each counted once."""
    import mmap
    import tempfile

    text = bytearray(b"x" * (200_000 + pad))
    for spot in [*spots, (1 << 16) - 1, (1 << 17) - 1]:
        text[spot : spot + 2] = b'":'
    with tempfile.TemporaryFile() as handle:
        handle.write(text)
        handle.flush()
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            for lo, hi in ((0, len(text)), (min(start, len(text)), len(text)), (0, min(start, len(text)))):
                assert offline_merge._count(mapped, b'":', lo, hi) == bytes(text).count(b'":', lo, hi)
