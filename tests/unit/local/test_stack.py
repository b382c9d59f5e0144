"""The local stack's data directory: one holder at a time, a reset that refuses what is not its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from acx.local.stack import QUEUES, DataDirBusy, LocalStack, reset_data_dir, sqs_event


def test_the_queues_are_the_templates() -> None:
    from acx.local.resources import load_template
    from acx.local.stack import repo_root

    resources = load_template(repo_root() / "template.yaml")["Resources"]
    for queue, logical in zip(QUEUES, ("IngestQueue", "ExportQueue"), strict=True):
        props = resources[logical]["Properties"]
        assert queue.visibility == props["VisibilityTimeout"], queue.name
        assert queue.max_receives == props["RedrivePolicy"]["maxReceiveCount"], queue.name


def test_a_second_stack_and_a_reset_are_refused_while_a_stack_holds_the_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with LocalStack(data_dir=data, verify_interval=None, quiet=True, log_file=tmp_path / "log"):
        with pytest.raises(DataDirBusy):
            LocalStack(data_dir=data, verify_interval=None, quiet=True, log_file=tmp_path / "log").start()
        with pytest.raises(DataDirBusy):
            reset_data_dir(data)
        assert (data / "acx.sqlite").exists()
    assert "acx.sqlite" in reset_data_dir(data) and not data.exists()  # the control: stopped, it empties


def test_a_reset_refuses_a_directory_holding_anything_else(tmp_path: Path) -> None:
    (tmp_path / "acx.sqlite").write_bytes(b"")
    (tmp_path / "thesis.tex").write_text("mine")
    with pytest.raises(ValueError, match="not an acx local data directory"):
        reset_data_dir(tmp_path)
    assert (tmp_path / "thesis.tex").exists() and (tmp_path / "acx.sqlite").exists()
    (tmp_path / "thesis.tex").unlink()
    assert reset_data_dir(tmp_path) == ["acx.sqlite"]  # the control


def test_sqs_events_carry_what_lambda_delivers() -> None:
    event = sqs_event(
        [{"MessageId": "m", "ReceiptHandle": "r", "Body": "b", "Attributes": {"A": "1"}}], "arn", "eu"
    )
    (record,) = event["Records"]
    assert record["messageId"] == "m" and record["receiptHandle"] == "r" and record["body"] == "b"
    assert (
        record["eventSource"] == "aws:sqs"
        and record["eventSourceARN"] == "arn"
        and record["attributes"] == {"A": "1"}
    )


def test_the_stack_serves_an_upload_without_importing_moto(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = f"""
import json, sys, urllib.request
from acx.local.stack import LocalStack
with LocalStack(data_dir={str(tmp_path / "data")!r}, verify_interval=None, quiet=True) as stack:
    auth = {{"Authorization": "Bearer " + stack.token("t"), "Content-Type": "application/json"}}
    req = urllib.request.Request(stack.endpoint + "/v1/packages/p/uploads", b"{{}}", auth, method="POST")
    up = json.loads(urllib.request.urlopen(req).read())
    body = json.dumps({{"schemaVersion": "acx.memory-bundle/1", "records": []}}).encode()
    urllib.request.urlopen(urllib.request.Request(up["url"], body, up["headers"], method="PUT")).read()
    stack.drain(60)
    job = stack.deps.jobs.get("t", "p", "upload", up["uploadId"])
print(job["status"], json.dumps(sorted(m for m in sys.modules if m == "moto" or m.startswith("moto."))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    status, moto = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert status != "pending" and moto == "[]"  # the upload went through the pump, with no moto
