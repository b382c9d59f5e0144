"""The alarm topic (SNS): operators are told when something needs a person."""

from __future__ import annotations

import json
from typing import Any

MAX_MESSAGE = 250_000  # characters; SNS takes at most 256 KB per message


class AlarmTopic:
    """One SNS topic. ``topic_arn`` None: not configured, nothing is published."""

    def __init__(self, sns_client: Any, topic_arn: str | None) -> None:
        self.sns = sns_client
        self.topic_arn = topic_arn

    @property
    def configured(self) -> bool:
        return bool(self.topic_arn)

    def publish(self, subject: str, message: dict[str, Any]) -> None:
        """Publish ``message`` as JSON, cut to :data:`MAX_MESSAGE` characters."""
        self.sns.publish(TopicArn=self.topic_arn, Subject=subject, Message=json.dumps(message)[:MAX_MESSAGE])
