"""A message queue (SQS): JSON messages to one queue URL, e.g. the export queue."""

from __future__ import annotations

import json
from typing import Any


class MessageQueue:
    """One SQS queue. ``url`` None: not configured (the caller refuses the work, it is not dropped)."""

    def __init__(self, sqs_client: Any, url: str | None) -> None:
        self.sqs = sqs_client
        self.url = url

    @property
    def configured(self) -> bool:
        return bool(self.url)

    def send(self, message: dict[str, Any]) -> None:
        """Queue one JSON message (SQS keeps it until a consumer deletes it, then its DLQ)."""
        self.sqs.send_message(QueueUrl=self.url, MessageBody=json.dumps(message))
