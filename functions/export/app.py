"""Export handler: SQS jobs for large (asynchronous) cartridge exports."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from acx.observability import logger, metrics

# Use cases are imported inside the record handler, not here: at init only what is imported above loads
# (bench coldstart times the init).

# Failed jobs are reported in batchItemFailures even when the whole batch fails (redrive, then the DLQ).
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord) -> None:
    from acx.usecases.cartridges import run_export
    from acx.usecases.deps import deps
    from acx.usecases.errors import ServiceError

    job = json.loads(record.body)
    try:
        result = run_export(deps(), job["tenant"], job["package"], job["cartridgeId"])
    except ServiceError as exc:
        if exc.status >= 500:
            raise
        logger.warning("export refused", extra={"cartridge": job["cartridgeId"], "code": exc.code})
        return
    except Exception:
        # The message goes back to the queue (then the DLQ); the trace names code, not content.
        logger.exception("export failed", extra={"cartridge": job["cartridgeId"]})
        raise
    logger.info("export finished", extra={"cartridge": job["cartridgeId"], "status": result.get("status")})


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
