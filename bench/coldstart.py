"""Cold-start import time of each Lambda handler, next to ``import boto3`` alone, in fresh interpreters.

Each sample is a new ``python`` process with a Lambda-like environment (AWS_REGION, the template's
POWERTOOLS_* and table/bucket variables, fake credentials; sys.path = function dir, then
layers/acx as the layer) that times, inside the process, the execution of ``functions/<fn>/app.py``
(what Lambda's init phase imports), or of ``import boto3``. Interpreter start-up is excluded from both
sides; bytecode caches are warm on both sides. Median of 5 (quick: 3). Target: handler <= 1.5 x boto3.

The ``note`` of each row lists the heaviest module-level imports (``python -X importtime``, cumulative,
grouped by top-level package) so a miss says what to make lazy.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = ("api", "ingest", "verify", "export")
TARGET = 1.5

_ENV = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
    "LAMBDA_TASK_ROOT": "/var/task",
    "POWERTOOLS_SERVICE_NAME": "acx-memory",
    "POWERTOOLS_METRICS_NAMESPACE": "AcxMemory",
    "LOG_LEVEL": "INFO",
    "RECORDS_TABLE": "acx-records",
    "RECEIPTS_TABLE": "acx-receipts",
    "HEADS_TABLE": "acx-heads",
    "JOBS_TABLE": "acx-jobs",
    "IDEMPOTENCY_TABLE": "acx-idempotency",
    "UPLOADS_BUCKET": "acx-uploads",
    "DATA_BUCKET": "acx-data",
    "CARTRIDGES_BUCKET": "acx-cartridges",
    "SIGNING_KEY_ID": "alias/acx-signing",
    "ALARM_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:acx-alarms",
    "EXPORT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/acx-export",
    "PUBLISHER_ID": "acx-bench",
    "NAMESPACE_TXT_RECORD": "",
    "UPLOAD_URL_TTL": "900",
    "DOWNLOAD_URL_TTL": "900",
}

_HANDLER_SNIPPET = """
import sys, time
sys.path[:0] = [{fn_dir!r}, {layer!r}]
t0 = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
sys.modules["app"] = module
spec.loader.exec_module(module)
assert callable(module.lambda_handler)
print(time.perf_counter() - t0)
"""

_BOTO3_SNIPPET = """
import time
t0 = time.perf_counter()
import boto3
print(time.perf_counter() - t0)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACX_", "AWS_", "POWERTOOLS_"))}
    env.update(_ENV)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _snippet(name: str) -> str:
    if name == "boto3":
        return _BOTO3_SNIPPET
    fn_dir = ROOT / "functions" / name
    layer = str(ROOT / "layers" / "acx")
    return _HANDLER_SNIPPET.format(fn_dir=str(fn_dir), layer=layer, path=str(fn_dir / "app.py"))


def _sample(name: str, env: dict[str, str], extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, *extra, "-c", _snippet(name)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=str(ROOT),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"importing {name} failed: {proc.stderr[-800:]}")
    return proc


_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def heaviest_imports(name: str, env: dict[str, str] | None = None, top: int = 5) -> list[tuple[str, float]]:
    """Top-level packages imported at module level by ``name``, cumulative ms, heaviest first."""
    proc = _sample(name, env or _env(), ("-X", "importtime"))
    per_package: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        cumulative, indent, module = int(match.group(2)), len(match.group(3)), match.group(4)
        if indent != 1:  # only imports made directly by the measured code, not their children
            continue
        package = module.split(".")[0]
        if package in ("encodings", "site", "importlib", "time", "sys"):
            continue
        key = ".".join(module.split(".")[:3]) if package in ("acx", "aws_lambda_powertools") else package
        per_package[key] = per_package.get(key, 0.0) + cumulative / 1000
    return sorted(per_package.items(), key=lambda kv: -kv[1])[:top]


def measure(name: str, runs: int, env: dict[str, str]) -> float:
    """Median seconds of ``runs`` fresh-interpreter imports of ``name`` (a handler or ``boto3``)."""
    return statistics.median(float(_sample(name, env).stdout.strip().splitlines()[-1]) for _ in range(runs))


def run(quick: bool) -> list[dict[str, Any]]:
    runs = 3 if quick else 5
    env = _env()
    _sample("boto3", env)  # warm the page cache / bytecode once for every side
    for name in HANDLERS:
        _sample(name, env)
    samples: dict[str, list[float]] = {name: [] for name in ("boto3", *HANDLERS)}
    for _ in range(runs):  # interleaved rounds: load on the shared machine hits every side alike
        for name in samples:
            samples[name].append(float(_sample(name, env).stdout.strip().splitlines()[-1]))
    boto3_s = statistics.median(samples["boto3"])
    rows: list[dict[str, Any]] = [
        {
            "name": "import boto3 (fresh interpreter)",
            "value": round(boto3_s * 1000, 1),
            "unit": "ms",
            "baseline": None,
            "ratio": None,
            "target": "reference",
            "note": f"median of {runs}",
        }
    ]
    for name in HANDLERS:
        seconds = statistics.median(samples[name])
        ratio = seconds / boto3_s
        heavy = heaviest_imports(name, env)
        rows.append(
            {
                "name": f"cold import functions/{name}/app.py",
                "value": round(seconds * 1000, 1),
                "unit": "ms",
                "baseline": f"boto3 {boto3_s * 1000:.0f} ms",
                "ratio": ratio,
                "target": f"<= {TARGET} x boto3" + ("" if ratio <= TARGET else " (MISSED)"),
                "note": f"median of {runs}; heaviest module-level imports "
                "(-X importtime cumulative, inflated by its overhead): "
                + ", ".join(f"{pkg} {ms:.0f} ms" for pkg, ms in heavy),
            }
        )
    return rows


if __name__ == "__main__":
    import json

    for row in run("--quick" in sys.argv):
        print(json.dumps(row))
