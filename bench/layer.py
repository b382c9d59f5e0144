"""Lambda layer size: build build/acx-layer.zip (scripts/build_layer.py) and compare to the budget."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ZIPPED_BUDGET_MB = 15.0
# Lambda's hard limit for a function plus all its layers, unzipped.
UNZIPPED_LIMIT_MB = 250.0


def _builder() -> Any:
    spec = importlib.util.spec_from_file_location("build_layer", ROOT / "scripts" / "build_layer.py")
    if spec is None or spec.loader is None:
        raise ImportError("scripts/build_layer.py not found")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_layer", module)
    spec.loader.exec_module(module)
    return module


def run(quick: bool) -> list[dict[str, Any]]:
    """Build the layer (pip needs the registry) and report zipped/unzipped MB against the budgets."""
    try:
        built = _builder().build(ROOT / "build")
    except Exception as exc:  # no network, pip failure: report instead of breaking the whole bench
        return [{"name": "layer zipped", "value": f"unavailable ({type(exc).__name__})", "unit": ""}]
    zipped_mb = built.zipped_bytes / 1e6
    unzipped_mb = built.unzipped_bytes / 1e6
    return [
        {
            "name": "layer zipped",
            "value": round(zipped_mb, 3),
            "unit": "MB",
            "baseline": ZIPPED_BUDGET_MB,
            "ratio": zipped_mb / ZIPPED_BUDGET_MB,
            "target": f"<= {ZIPPED_BUDGET_MB:g} MB",
        },
        {
            "name": "layer unzipped",
            "value": round(unzipped_mb, 3),
            "unit": "MB",
            "baseline": UNZIPPED_LIMIT_MB,
            "ratio": unzipped_mb / UNZIPPED_LIMIT_MB,
            "target": f"<= {UNZIPPED_LIMIT_MB:g} MB (Lambda limit, function + layers)",
        },
        {"name": "layer files", "value": built.files, "unit": "files"},
    ]
