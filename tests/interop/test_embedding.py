"""``local-hash-128`` against the reference's ``src/embed.mjs``: the same vector, bit for bit.

The reference engine is the one every ACX consumer can recompute, so cartridges carry its vectors and
an importer's re-index agrees with them. Each vector is compared as the float64 values JavaScript
prints (shortest round-trip form, so equal text means equal bits) and as the float32 a cartridge
stores.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from acx.core.embedding import embed, embed_record
from tests.interop.conftest import Reference

TEXTS = [
    "",
    "Retry with exponential backoff\n\nThe flaky payment test passed after jittered retries",
    "UPPER lower MiXeD 42 4.2 x86_64 a-b_c",
    "café naïve Ærø 東京 emoji 🚀 tab\tnewline\n",
    "repeat repeat repeat repeat repeat once",
    "a " * 3000,  # many tokens on one index
    "0 1 2 3 4 5 6 7 8 9 10 100 1000 10000",
]
RECORDS = [
    {"title": "Pin the linter", "summary": "A new ruff release changed every file"},
    {"title": None, "summary": "no title"},
    {"summary": "missing title key"},
    {"title": "only a title"},
]

_EMBED = """
import { readFileSync } from 'node:fs';
import { embed, embedMemory } from 'REF/embed.mjs';
const input = JSON.parse(readFileSync(process.argv[process.argv.length - 1], 'utf8'));
console.log(JSON.stringify({
  texts: input.texts.map((t) => embed(t)),
  records: input.records.map((r) => embedMemory(r)),
}));
"""


def test_local_hash_128_is_the_references_embedding_bit_for_bit(reference: Reference, tmp_path: Path) -> None:
    data = tmp_path / "input.json"
    data.write_text(json.dumps({"texts": TEXTS, "records": RECORDS}), encoding="utf-8")
    run = reference.node_eval(_EMBED, str(data))
    assert run.code == 0, run.err
    theirs = json.loads(run.out)
    ours_texts = [embed(t) for t in TEXTS]
    ours_records = [embed_record(r) for r in RECORDS]
    assert theirs["texts"] == ours_texts
    assert theirs["records"] == ours_records
    assert any(v != 0 for v in ours_texts[1])  # a real vector, not both sides empty
    for a, b in zip(theirs["texts"] + theirs["records"], ours_texts + ours_records, strict=True):
        assert struct.pack("<128d", *a) == struct.pack("<128d", *b)
        assert struct.pack("<128f", *a) == struct.pack("<128f", *b)
