"""The queue and alarm adapters send what the export function and the operators read (botocore Stubber:
the request shapes are checked against the service models)."""

from __future__ import annotations

import json

import boto3
from botocore.stub import Stubber

from acx.adapters.alarms import MAX_MESSAGE, AlarmTopic
from acx.adapters.queues import MessageQueue

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/acx-export"
ARN = "arn:aws:sns:us-east-1:123456789012:acx-alarms"


def _client(service: str):  # type: ignore[no-untyped-def]
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")


def test_queue_sends_one_json_message() -> None:
    sqs = _client("sqs")
    message = {"tenant": "t", "package": "p", "cartridgeId": "c1"}
    with Stubber(sqs) as stub:
        stub.add_response(
            "send_message", {"MessageId": "m"}, {"QueueUrl": URL, "MessageBody": json.dumps(message)}
        )
        MessageQueue(sqs, URL).send(message)
        stub.assert_no_pending_responses()
    assert MessageQueue(sqs, URL).configured and not MessageQueue(sqs, None).configured


def test_alarm_publishes_json_cut_to_the_sns_limit() -> None:
    sns = _client("sns")
    big = {"failed": ["x" * 300_000]}
    with Stubber(sns) as stub:
        stub.add_response(
            "publish",
            {"MessageId": "m"},
            {"TopicArn": ARN, "Subject": "s", "Message": json.dumps(big)[:MAX_MESSAGE]},
        )
        AlarmTopic(sns, ARN).publish("s", big)
        stub.assert_no_pending_responses()
    assert not AlarmTopic(sns, "").configured
