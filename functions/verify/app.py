"""Scheduled verification of every package log (EventBridge), with a metric and an alarm per failure."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from acx.observability import logger, metrics

# Use cases are imported inside the handler, not here: at init only what is imported above loads
# (bench coldstart times the init).


@metrics.log_metrics
@logger.inject_lambda_context(log_event=False)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

    from acx.usecases.deps import deps
    from acx.usecases.scheduled import verify_everything

    EventBridgeModel.model_validate(event)
    report = verify_everything(deps())
    for item in report["packages"]:
        metrics.add_metric(
            name="VerificationFailed", unit=MetricUnit.Count, value=0 if item["status"] == "ok" else 1
        )
    logger.info("verification run", extra={"packages": len(report["packages"]), "failed": report["failed"]})
    return {"packages": len(report["packages"]), "failed": report["failed"], "report": report["reportKey"]}
