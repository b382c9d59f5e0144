"""Smoke test: the `acx` client against the real handlers on the local stack, over HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from acx.cli.main import main
from tests.factories import memory

pytestmark = pytest.mark.e2e


def _record(i: int) -> dict[str, Any]:
    return memory(
        f"smoke-{i:03d}",
        title=f"Smoke lesson {i}",
        summary=f"retry with jitter, case {i}",
        sourceType="observation",
        repoLabel="platform",
        projectLabel="smoke",
        timestamp="2026-08-01T00:00:00Z",
        xpAwarded=i,
        tags=["smoke"],
    )


def _bundle(path: Path, n: int) -> Path:
    doc = {
        "schemaVersion": "acx.memory-bundle/1",
        "records": [_record(i) for i in range(n)],
        "knowledge": [],
        "skills": [],
    }
    path.write_text(json.dumps(doc))
    return path


def _acx(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_gateway_refuses_without_token(local_stack: Any) -> None:
    url = local_stack.endpoint + "/v1/packages/smoke/memories"
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(url, timeout=30)  # noqa: S310 - local stack
    assert info.value.code == 401
    with urllib.request.urlopen(local_stack.endpoint + "/v1/health", timeout=30) as resp:  # noqa: S310
        assert json.loads(resp.read()) == {"status": "ok"}


def test_cli_round_trip(
    local_stack: Any, acx_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _acx(capsys, "login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "smoke")[0] == 0
    bundle = _bundle(tmp_path / "b.json", 3)
    code, out, err = _acx(capsys, "upload", str(bundle), "--package", "smoke-pkg", "--json")
    assert code == 0, err
    assert json.loads(out)["accepted"] == 3

    code, out, err = _acx(capsys, "recall", "--package", "smoke-pkg", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["advisory"] and {r["id"] for r in doc["records"]} == {"smoke-000", "smoke-001", "smoke-002"}

    code, out, err = _acx(capsys, "recall", "--package", "smoke-pkg")
    assert code == 0 and out.startswith("[advisory]")

    code, out, err = _acx(capsys, "forget", "smoke-001", "--package", "smoke-pkg", "--json")
    assert code == 0, err
    code, out, err = _acx(capsys, "upload", str(bundle), "--package", "smoke-pkg")
    assert code == 2 and "error 409" in err  # forgotten content cannot come back

    code, out, err = _acx(capsys, "log", "verify", "--package", "smoke-pkg", "--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["status"] == "ok" and doc["client"]["checkpointSignature"] == "ok"
    # tenant isolation: another tenant does not see the package
    assert _acx(capsys, "login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "other")[0] == 0
    code, _, err = _acx(capsys, "recall", "--package", "smoke-pkg")
    assert code == 2 and "error 404" in err


def test_presigned_upload_is_pumped_into_ingest(
    local_stack: Any, acx_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _acx(capsys, "login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "smoke")[0] == 0
    bundle = _bundle(tmp_path / "p.json", 4)
    code, out, err = _acx(
        capsys,
        "upload",
        str(bundle),
        "--package",
        "smoke-presigned",
        "--presigned",
        "--json",
        "--timeout",
        "60",
    )
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["status"] == "ingested"
    local_stack.drain(30)
    code, out, _ = _acx(capsys, "recall", "--package", "smoke-presigned", "--json")
    assert code == 0 and len(json.loads(out)["records"]) == 4


def test_blocked_bundle_exits_3(
    local_stack: Any, acx_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _acx(capsys, "login", "--local", "--endpoint", local_stack.endpoint, "--tenant", "smoke")[0] == 0
    planted = "AKIA" + "Z7Q4" + "MPLE" + "K3XD" + "W9QA"
    rec = dict(_record(50), summary=f"deploy with key {planted} then rotate")
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps({"schemaVersion": "acx.memory-bundle/1", "records": [rec], "knowledge": [], "skills": []})
    )
    code, out, err = _acx(capsys, "upload", str(path), "--package", "smoke-blocked")
    assert code == 3, out + err
    assert planted not in out + err


# -- the stack's own wiring, with fake functions (independent of the real handlers)

FAKE_FN = """
import json, pathlib
LOG = pathlib.Path(__file__).with_name("calls.jsonl")

def lambda_handler(event, context):
    with LOG.open("a") as fh:
        fh.write(json.dumps({"event": event, "fn": context.function_name,
                             "left": context.get_remaining_time_in_millis()}) + "\\n")
    if "Records" not in event:
        return {"checked": 0}
    bad = [r["messageId"] for r in event["Records"] if "poison" in r["body"]]
    return {"batchItemFailures": [{"itemIdentifier": m} for m in bad]}
"""


def _calls(root: Path, name: str) -> list[dict[str, Any]]:
    path = root / "functions" / name / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_stack_pumps_queues_redrives_poison_and_schedules_verify(tmp_path: Path) -> None:
    from acx.local.stack import LocalStack

    for name in ("api", "ingest", "verify", "export"):
        (tmp_path / "functions" / name).mkdir(parents=True)
        (tmp_path / "functions" / name / "app.py").write_text(FAKE_FN)
    with LocalStack(root=tmp_path, verify_interval=0.5, retry_delay=0) as stack:
        assert stack.backend is not None
        queues = stack.backend.queues
        queues.send("ingest", "good-1")
        queues.send("ingest", "poison-1")
        queues.send("export", "export-1")
        stack.drain(30)
        records = [r for c in _calls(tmp_path, "ingest") for r in c["event"]["Records"]]
        bodies = [r["body"] for r in records]
        assert bodies.count("good-1") == 1  # delivered once, then deleted
        assert bodies.count("poison-1") == 3  # redelivered until maxReceiveCount, then the DLQ
        first = records[0]
        assert first["eventSource"] == "aws:sqs" and first["eventSourceARN"].endswith("ingest")
        assert first["receiptHandle"] and first["attributes"]["ApproximateReceiveCount"] == "1"
        assert queues.bodies("ingest-dlq") == ["poison-1"]
        assert [r["body"] for c in _calls(tmp_path, "export") for r in c["event"]["Records"]] == ["export-1"]
        assert stack.run_verification_now() == {"checked": 0}
        time.sleep(1.2)
        scheduled = [c for c in _calls(tmp_path, "verify")]
        assert len(scheduled) >= 2 and scheduled[0]["event"]["detail-type"] == "Scheduled Event"
        assert scheduled[0]["event"]["source"] == "aws.events" and scheduled[0]["left"] > 0
        data_dir = stack.data_dir
        assert data_dir is not None and data_dir.is_dir()
    assert not data_dir.exists()  # an ephemeral stack's directory goes at stop
