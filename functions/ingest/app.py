"""Ingest handler: SQS batch of S3 ObjectCreated notifications for uploads/ -> the ingest pipeline.

Failures are reported per message (partial batch response): SQS redelivers them, and after
maxReceiveCount the message lands in the DLQ. Logged reasons never carry bundle content.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import BaseModel, ConfigDict

from acx import deadline
from acx.observability import logger, metrics

# Use cases are imported inside the record handler, not here: at init only what is imported above loads
# (bench coldstart times the init).

# Every failed message is reported in batchItemFailures, even when the whole batch fails (the default
# would raise instead, and the Lambda runtime would log the child exceptions' text).
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class S3Object(_Loose):
    key: str
    size: int | None = None


class S3Bucket(_Loose):
    name: str


class S3Entity(_Loose):
    bucket: S3Bucket
    object: S3Object


class S3Record(_Loose):
    eventName: str
    s3: S3Entity


class S3Notification(_Loose):
    """The fields of an S3 event notification this function reads (powertools' S3Model requires fields
    such as userIdentity that S3 omits in some notifications, and moto omits always)."""

    Records: list[S3Record]


def record_handler(record: SQSRecord) -> None:
    from acx.adapters.faults import reason, translate
    from acx.usecases.deps import deps
    from acx.usecases.faults import is_retryable
    from acx.usecases.uploads import ingest_upload

    body = json.loads(record.body)
    if body.get("Event") == "s3:TestEvent":
        return
    event = S3Notification.model_validate(body)
    for item in event.Records:
        if not item.eventName.startswith("ObjectCreated"):
            continue
        key = unquote_plus(item.s3.object.key)
        try:
            status = ingest_upload(deps(), key)
        except Exception as exc:
            # Redelivered by SQS, then the DLQ. The log names the upload and the error type/AWS code
            # only: no traceback, whose exception text could quote bundle content.
            logger.warning(
                "upload failed",
                extra={
                    "key": key,
                    "reason": reason(exc),
                    "retryable": is_retryable(translate(exc)),
                    "receive_count": record.attributes.approximate_receive_count,
                },
            )
            raise
        metrics.add_metric(name=f"Uploads{status.capitalize()}", unit=MetricUnit.Count, value=1)
        logger.info(
            "upload processed",
            extra={
                "key": key,
                "status": status,
                "receive_count": record.attributes.approximate_receive_count,
            },
        )


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    with deadline.from_lambda_context(context):  # row writes retry throttling until time runs out
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
