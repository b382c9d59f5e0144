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
