"""`make bench`: runs every bench/<area>.py and prints one table (also written to bench-out/)."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path

import bench


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the benchmarks")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", help="area modules to run (default: all)")
    args = parser.parse_args(argv)
    areas = [m.name for m in pkgutil.iter_modules(bench.__path__) if m.name not in ("run", "common")]
    if args.only:
        areas = [a for a in areas if a in args.only]
    rows: list[dict] = []
    for area in sorted(areas):
        module = importlib.import_module(f"bench.{area}")
        started = time.perf_counter()
        print(f"== {area}", flush=True)
        try:
            area_rows = module.run(args.quick)
        except Exception as exc:  # one broken area must not lose every other area's figures
            error = f"{type(exc).__name__}: {exc}"[:300]
            area_rows = [{"name": f"{area} failed", "value": error, "unit": ""}]
        for row in area_rows:
            row.setdefault("area", area)
            rows.append(row)
            print(format_row(row), flush=True)
        print(f"   ({time.perf_counter() - started:.1f}s)", flush=True)
    out = Path("bench-out")
    out.mkdir(exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    print(f"\nwrote {out / 'results.json'}")
    return 0


def format_row(row: dict) -> str:
    value = row["value"]
    text = f"{value:,.3f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else value
    parts = [f"   {row['name']}: {text} {row.get('unit', '')}".rstrip()]
    if row.get("baseline") is not None:
        parts.append(f"baseline {row['baseline']}")
    if row.get("ratio") is not None:
        parts.append(f"ratio {row['ratio']:.2f}")
    if row.get("target"):
        parts.append(f"target {row['target']}")
    return " | ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
