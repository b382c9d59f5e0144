"""Scrub gate: quality on the shared gitleaks corpus, throughput against a regex floor, and the
whole-process `acx scrub` against the Node reference's scrub, both timed in this run.

Rows: recall (raw, in sentences) and clean-blocked rate on ../shared/corpora/secrets-gitleaks.json
(per-rule misses printed to stderr); scan_bundle and raw-bytes MB/s next to one compiled AKIA regex
over the same bytes (the floor); `acx scrub` on the CLI benchmark file (bench/cli.py's 50k records)
and the Node reference (`scrub(collectScanItems({records}))` of ../shared/peers/acx-reference) on the
same file, medians of the same number of runs, interleaved so machine load hits both alike.
"""

from __future__ import annotations

import collections
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import cli

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "secrets-gitleaks.json"
PEER = ROOT.parent / "shared" / "peers"
NODE_SCRUB = """
import { readFileSync } from 'node:fs'
import { scrub, collectScanItems } from '%s'
const records = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const out = scrub(collectScanItems({ records }))
process.stdout.write(JSON.stringify({ blocked: out.blocked }))
"""


# A well-formed Google API key: gitleaks allowlists such keys by value (published in Google's sample
# code); the gate has no list of known-public keys, so it blocks the format.
GOOGLE_KEY = re.compile(r"(?<![0-9A-Za-z_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")


def counted_clean(items: list[dict[str, Any]]) -> set[str]:
    """Ids of the clean samples the clean-blocked target counts: not a text the corpus also labels
    a secret (no gate can pass one and block the other) and not holding a well-formed Google key."""
    secret_texts = {it["text"] for it in items if it["label"] == "secret"}
    return {
        it["id"]
        for it in items
        if it["label"] == "clean" and it["text"] not in secret_texts and not GOOGLE_KEY.search(it["text"])
    }


def corpus_figures(path: Path = CORPUS) -> dict[str, Any]:
    """Recall raw / in sentences, clean-blocked rate (all clean samples, and the counted ones), and
    the misses per gitleaks rule id."""
    from acx.core.scrub import scan_text

    items = json.loads(path.read_text(encoding="utf-8"))
    counted = counted_clean(items)
    counts: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    misses: collections.Counter[str] = collections.Counter()
    blocked_clean: list[str] = []
    for it in items:
        hit = any(f.severity == "block" for f in scan_text(it["text"]))
        key = (it["label"], it["form"])
        counts[key][0] += hit
        counts[key][1] += 1
        if it["label"] == "secret" and not hit:
            misses[it["rule"]] += 1
        if it["label"] == "clean" and hit:
            blocked_clean.append(it["id"])

    def rate(label: str, form: str) -> float:
        got, total = counts[(label, form)]
        return got / total if total else 0.0

    return {
        "recall_raw": rate("secret", "raw"),
        "recall_sentence": rate("secret", "sentence"),
        "clean_blocked": rate("clean", "raw"),
        "clean_blocked_counted": len(counted.intersection(blocked_clean)) / len(counted) if counted else 0.0,
        "counted_clean": len(counted),
        "misses": dict(misses.most_common()),
        "clean_blocked_ids": blocked_clean,
        "n": len(items),
    }


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def _node() -> str | None:
    setup = PEER / "setup-node.sh"
    if not setup.exists():
        return None
    done = subprocess.run(["bash", str(setup)], capture_output=True, text=True, check=False)
    path = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return path if path and Path(path).exists() else shutil.which("node")


def cli_against_node(n: int, repeat: int) -> tuple[float, float | None, str]:
    """Median wall time of `acx scrub FILE` and of the Node reference's scrub on the same FILE."""
    node = _node()
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "records.json"
        size = cli.write_bundle(bundle, n)
        script = Path(tmp) / "scrub.mjs"
        script.write_text(NODE_SCRUB % (PEER / "acx-reference" / "src" / "scrub.mjs").as_uri())
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(repeat):
            seconds, code = cli.time_command([*cli._acx(), "scrub", str(bundle)], 1)
            if code != 0:
                raise RuntimeError(f"acx scrub exited {code} on the clean benchmark file")
            ours.append(seconds)
            if node:
                seconds, code = cli.time_command([node, str(script), str(bundle)], 1)
                theirs.append(seconds) if code == 0 else None
    note = f"{n:,} records, {size / 1e6:.1f} MB"
    return statistics.median(ours), (statistics.median(theirs) if theirs else None), note


def run(quick: bool) -> list[dict[str, Any]]:
    from acx.core import scrub

    rows: list[dict[str, Any]] = []
    if CORPUS.exists():
        fig = corpus_figures()
        print(f"scrub corpus misses per gitleaks rule: {json.dumps(fig['misses'])}", file=sys.stderr)
        for name, key, target in (
            ("scrub recall, gitleaks corpus, raw", "recall_raw", ">= 0.99"),
            ("scrub recall, gitleaks corpus, in sentences", "recall_sentence", ">= 0.95"),
            ("scrub clean samples blocked, gitleaks corpus, all", "clean_blocked", "report"),
            (
                "scrub clean samples blocked, gitleaks corpus, counted (not also labelled secret, "
                "not a well-formed Google key)",
                "clean_blocked_counted",
                "<= 0.10",
            ),
        ):
            rows.append(
                {
                    "name": name,
                    "value": round(fig[key], 4),
                    "unit": "",
                    "baseline": None,
                    "ratio": None,
                    "target": target,
                    "note": f"{fig['n']} samples",
                }
            )
    n = 10_000 if quick else 50_000
    records = cli.generate_records(n)
    data = json.dumps({"records": records}, ensure_ascii=False).encode()  # the CLI's clean-file path
    if b"\\" in data:
        raise RuntimeError("benchmark records hold a backslash: the raw path would not be measured")
    mb = len(data) / 1e6
    floor_re = re.compile(rb"AKIA[0-9A-Z]{16}")
    repeat = 2 if quick else 3
    scrub.scan_raw_json_fast(b"warm up the compiled rules")
    floor_s = _best(lambda: floor_re.findall(data), repeat)
    bundle_s = _best(lambda: scrub.scan_bundle(records), repeat)
    raw_s = _best(lambda: scrub.scan_raw_json_fast(data), repeat)
    floor = mb / floor_s
    for name, seconds in (
        (f"scrub scan_bundle, full rule set ({n} records, {mb:.0f} MB)", bundle_s),
        ("scrub raw bytes, full rule set (CLI path on clean files)", raw_s),
    ):
        rows.append(
            {
                "name": name,
                "value": round(mb / seconds, 1),
                "unit": "MB/s",
                "baseline": round(floor, 1),
                "ratio": (mb / seconds) / floor,
                "target": "report; baseline = one AKIA regex pass (floor)",
            }
        )
    ours, theirs, note = cli_against_node(5_000 if quick else 50_000, 1 if quick else 5)
    rows.append(
        {
            "name": "acx scrub whole process vs Node reference scrub (same file, same run)",
            "value": round(ours, 3),
            "unit": "s",
            "baseline": round(theirs, 3) if theirs else "node not available",
            "ratio": (ours / theirs) if theirs else None,
            "target": "ratio <= 0.83 (1.2x faster)",
            "note": note,
        }
    )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
