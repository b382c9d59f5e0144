"""Whole-process timings of the offline CLI (`acx merge`, `acx scrub`) over one 50k-record bundle.

The numbers include Python start-up and imports, because that is what a user waits for; the
baseline is an optimized Node implementation of the same commands on the same machine.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import common

MERGE_BASELINE_S = 1.7
SCRUB_BASELINE_S = 1.2


def generate_records(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """``n`` valid records (~1.4 KB each, 25% field-learned) with ~4% same-id edits and ~4% same-content
    copies under another id, deterministic for a given ``seed`` (so every run benches the same input)."""
    return common.generate_records(n, seed, prefix="mem", summary_words=150)


def write_bundle(path: Path, n: int, seed: int = 1) -> int:
    """Write ``generate_records(n, seed)`` as one JSON array; returns the byte size."""
    data = json.dumps(generate_records(n, seed), ensure_ascii=False).encode("utf-8")
    path.write_bytes(data)
    return len(data)


def _acx() -> list[str]:
    exe = shutil.which("acx", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "acx.cli.main"]


def time_command(argv: list[str], repeat: int) -> tuple[float, int]:
    """Median wall time of ``repeat`` runs of ``argv`` (output discarded) and the last exit code."""
    times: list[float] = []
    code = 0
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        times.append(time.perf_counter() - started)
        code = proc.returncode
    return statistics.median(times), code


def _compile_package() -> None:
    """Write the acx package's bytecode, as ``pip install`` does for a user. Without it, an editable
    install under PYTHONDONTWRITEBYTECODE (set on these machines) recompiles every module per run."""
    import compileall

    import acx

    compileall.compile_dir(str(Path(acx.__file__).parent), quiet=1)


def _has_command(name: str) -> bool:
    proc = subprocess.run([*_acx(), name, "--help"], capture_output=True, check=False)
    return proc.returncode == 0


def run(quick: bool) -> list[dict]:
    """Bench rows for `acx merge` (and `acx scrub` when that command exists) over 50k records."""
    n = 5_000 if quick else 50_000
    repeat = 1 if quick else 5
    rows: list[dict] = []
    _compile_package()
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "bundle.json"
        size = write_bundle(bundle, n)
        env_note = f"{n:,} records, {size / 1e6:.1f} MB"
        seconds, code = time_command([*_acx(), "merge", str(bundle)], repeat)
        if code != 0:
            raise RuntimeError(f"acx merge exited {code}")
        rows.append(
            {
                "name": f"acx merge {n // 1000}k records (whole process)",
                "value": round(seconds, 3),
                "unit": "s",
                "baseline": f"Node reference {MERGE_BASELINE_S} s",
                "ratio": seconds / MERGE_BASELINE_S,
                "target": "<= 1.0",
                "note": env_note,
            }
        )
        if _has_command("scrub"):
            seconds, code = time_command([*_acx(), "scrub", str(bundle)], repeat)
            rows.append(
                {
                    "name": f"acx scrub {n // 1000}k records (whole process)",
                    "value": round(seconds, 3),
                    "unit": "s",
                    "baseline": f"Node reference {SCRUB_BASELINE_S} s",
                    "ratio": seconds / SCRUB_BASELINE_S,
                    "target": "<= 1.0",
                    "note": f"{env_note}, exit {code}",
                }
            )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
    if os.environ.get("ACX_BENCH_KEEP"):
        write_bundle(Path(os.environ["ACX_BENCH_KEEP"]), 50_000)
