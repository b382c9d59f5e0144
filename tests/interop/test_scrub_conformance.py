"""The ACX standard's scrub tests (§7.5, §12.8), exactly as it writes them, run through our gate and
through the reference's own ``scrub()`` side by side: both give the verdict the standard requires.

Where the gate deliberately differs from the reference (docs/SCRUB.md, "Where the gate differs from
the reference"): bare hex in prose (commit SHAs, digests) passes here and blocks there; a hex value
assigned to a name blocks in both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acx.core.scrub import scan_any, scan_bundle
from tests.conftest import ROOT
from tests.interop.conftest import Reference

CASES = json.loads((ROOT / "tests" / "data" / "acx-scrub-conformance.json").read_text(encoding="utf-8"))[
    "cases"
]

# Every case in one Node run: ``scrub([{field, text}])`` per case, its ``blocked`` printed as JSON.
_SCRUB = """
import { readFileSync } from 'node:fs'
import { scrub } from 'REF/scrub.mjs'
const cases = JSON.parse(readFileSync(process.argv[1], 'utf8')).cases
process.stdout.write(JSON.stringify(cases.map((c) => scrub([{ field: c.field, text: c.text }]).blocked)))
"""

# Text our gate passes on purpose and the reference blocks: bare hex in prose.
_DIFFERS = [
    ("git log: merged 3f2a9c8d7e6b5a4f3e2d1c0b9a8f7e6d5c4b3a29 into main", False, True),
    ('const k = "3f2a9c8d7e6b5a4f3e2d1c0b9a8f7e6d5c4b3a29"', True, True),
]


@pytest.fixture(scope="module")
def reference_verdicts(reference: Reference, tmp_path_factory: pytest.TempPathFactory) -> list[bool]:
    data = tmp_path_factory.mktemp("scrub") / "cases.json"
    data.write_text(json.dumps({"cases": CASES}), encoding="utf-8")
    run = reference.node_eval(_SCRUB, str(data))
    assert run.code == 0, run.err
    verdicts = json.loads(run.out)
    assert len(verdicts) == len(CASES)
    return [bool(v) for v in verdicts]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c['test'][:5]}-{c['field']}" for c in CASES])
def test_ours_and_the_references_verdicts_are_the_standards(
    index: int, reference_verdicts: list[bool]
) -> None:
    case = CASES[index]
    assert reference_verdicts[index] is case["blocked"], "the reference itself disagrees with its standard"
    assert scan_any(case["text"]).blocked is case["blocked"]
    record = {"id": "leak-1", "title": "Deploy note", "summary": case["text"], "tags": ["ops"]}
    assert scan_bundle([record]).blocked is case["blocked"]


def test_the_documented_difference_is_the_only_one(reference: Reference, tmp_path: Path) -> None:
    """Bare hex in prose passes here, blocks in the reference; assigned to a name it blocks in both."""
    data = tmp_path / "differs.json"
    data.write_text(
        json.dumps({"cases": [{"field": "memory:1.summary", "text": t} for t, _o, _r in _DIFFERS]}),
        encoding="utf-8",
    )
    run = reference.node_eval(_SCRUB, str(data))
    assert run.code == 0, run.err
    theirs = json.loads(run.out)
    for (text, ours, reference_blocks), their in zip(_DIFFERS, theirs, strict=True):
        assert scan_any(text).blocked is ours, text
        assert their is reference_blocks, text
