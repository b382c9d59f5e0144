"""The api function's cold-start collector (functions/api/app.py): in Lambda, off from the end of
init to the end of the first invocation, then what survived is frozen and it is back on; anywhere
else (tests, the local stack) never touched. Each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CHILD = """
import gc, json, sys
at_start = gc.get_freeze_count()  # not 0 on every build: CPython 3.12.1 starts with 375 frozen
from tests.integration.service import Context, api_event, load_handler
app = load_handler("api")
after_init = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
answers = []
for _ in range(2):
    response = app.lambda_handler(api_event("GET", "/v1/health", tenant=None), Context())
    answers.append(response["statusCode"])
    if len(answers) == 1:
        after_first = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
print(json.dumps({"at_start": at_start, "init": after_init, "first": after_first, "answers": answers,
                  "after": {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}}))
"""


def _run(lambda_env: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    env["POWERTOOLS_METRICS_DISABLED"] = "true"
    if lambda_env:
        env["AWS_LAMBDA_FUNCTION_NAME"] = "acx-api"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_in_lambda_the_collector_is_off_until_the_first_invocation_ends_then_frozen_and_on() -> None:
    out = _run(lambda_env=True)
    assert out["init"]["enabled"] is False and out["init"]["frozen"] > out["at_start"]
    assert out["first"]["enabled"] is True
    assert out["first"]["frozen"] > out["init"]["frozen"]  # the first request's survivors joined
    # Only the first invocation freezes; frozen objects are still freed when dropped (count falls).
    assert out["after"]["enabled"] is True and out["after"]["frozen"] <= out["first"]["frozen"]
    assert out["answers"] == [200, 200]


def test_outside_lambda_the_collector_is_left_alone() -> None:
    out = _run(lambda_env=False)
    untouched = {"enabled": True, "frozen": out["at_start"]}
    assert out["init"] == untouched and out["first"] == untouched and out["after"] == untouched
    assert out["answers"] == [200, 200]
