"""`acx merge`: output, exit codes and error paths, through the real dispatcher."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acx.cli.main import main
from acx.cli.offline_merge import load_bundle
from acx.core.canonical import CanonicalError
from acx.core.merge import merge_records
from tests.factories import memory


def rec(rid: str, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"title": f"title {rid}", "summary": f"summary {rid} \u00e9 \U0001f680"}
    return memory(
        rid,
        **fields | {"sourceType": "memory", "timestamp": "2026-01-01T00:00:00Z", "tags": ["b", "a"]} | over,
    )


def write(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_merges_several_files_sorted_by_id(tmp_path: Path, capsysbinary) -> None:
    a = write(tmp_path / "a.json", [rec("m2"), rec("m1", xpAwarded=3)])
    b = write(tmp_path / "b.json", [rec("m1", summary="a longer summary of m1"), rec("m0")])
    assert main(["merge", a, b]) == 0
    out = json.loads(capsysbinary.readouterr().out)
    assert [r["id"] for r in out] == ["m0", "m1", "m2"]
    m1 = out[1]
    assert m1["xpAwarded"] == 3 and m1["summary"] == "a longer summary of m1"
    assert out == merge_records(
        [rec("m2"), rec("m1", xpAwarded=3), rec("m1", summary="a longer summary of m1"), rec("m0")]
    )


def test_invalid_record_exits_2_naming_file_and_path(tmp_path: Path, capsys) -> None:
    bad = write(tmp_path / "bad.json", [rec("ok"), rec("x", portable="yes")])
    assert main(["merge", bad]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "$[1].portable" in err


def test_tier_conflict_exits_2_with_the_refusal(tmp_path: Path, capsys) -> None:
    f = write(
        tmp_path / "c.json",
        [
            rec("dup"),
            rec("dup", portable=False, codebaseFingerprint="cbf1_" + "0" * 40, summary="SECRETVALUE"),
        ],
    )
    assert main(["merge", f]) == 2
    err = capsys.readouterr().err
    assert "'dup'" in err and "refusing" in err and "SECRETVALUE" not in err


def test_not_records_and_unreadable_files_exit_2(tmp_path: Path, capsys) -> None:
    obj = write(tmp_path / "obj.json", {"items": []})
    assert main(["merge", obj]) == 2
    assert main(["merge", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "obj.json" in err and "missing.json" in err and "a bundle {schemaVersion, records}" in err


def test_a_bundle_and_a_package_directory_merge_like_their_records_array(tmp_path: Path, capsys) -> None:
    records = [rec("b"), rec("a")]
    array = write(tmp_path / "array.json", records)
    bundle = write(tmp_path / "bundle.json", {"schemaVersion": "acx.bundle/1", "records": records})
    (tmp_path / "pkg").mkdir()
    write(tmp_path / "pkg" / "memory-records.json", records)
    outs = []
    for source in (array, bundle, str(tmp_path / "pkg")):
        assert main(["merge", source]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2] and [r["id"] for r in json.loads(outs[0])] == ["a", "b"]
    bad = write(tmp_path / "bad.json", {"records": [rec("a"), {"id": "x"}]})
    assert main(["merge", bad]) == 2
    assert "$.records[1]" in capsys.readouterr().err  # the path into the bundle


def test_duplicate_keys_are_refused_like_the_strict_parser(tmp_path: Path, capsys) -> None:
    text = json.dumps([rec("a")])
    dup = text.replace('"portable": true', '"portable": false, "portable": true')
    path = tmp_path / "dup.json"
    path.write_text(dup)
    assert main(["merge", str(path)]) == 2
    assert "duplicate object key" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text",
    [
        # whitespace before a colon hides a key from the fast count; the duplicate must still be found
        '[{"id" : "a", "id": "b"}]',
        '[{"id":"a","id":"b"}]',
        '[{"xpAwarded": 18446744073709551616}]',
        '[{"t": "\\ud800"}]',
        '[{"a": NaN}]',
        '[{"k\\\\": 1, "k\\\\": 2}]',
    ],
)
def test_fast_loader_never_accepts_what_the_strict_parser_refuses(text: str) -> None:
    with pytest.raises(CanonicalError):
        load_bundle(text.encode())


def test_fast_loader_returns_the_strict_parse(tmp_path: Path) -> None:
    value = [rec("a", xpAwarded=2.5), rec("b", title='he said \\": ok')]
    data = json.dumps(value, ensure_ascii=False).encode()
    assert load_bundle(data) == value
    data = json.dumps(value, indent=2, separators=(",", " : ")).encode()
    assert load_bundle(data) == value


def test_console_script_runs_as_a_process(tmp_path: Path) -> None:
    f = write(tmp_path / "p.json", [rec("z"), rec("y")])
    proc = subprocess.run(
        [sys.executable, "-m", "acx.cli.main", "merge", f], capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in json.loads(proc.stdout)] == ["y", "z"]


def test_an_in_process_merge_leaves_the_collector_as_it_found_it(tmp_path: Path, capsysbinary) -> None:
    import gc

    a = write(tmp_path / "a.json", [rec("m1")])
    assert gc.isenabled()
    assert main(["merge", a]) == 0
    assert gc.isenabled()  # it was left off for the rest of the process
