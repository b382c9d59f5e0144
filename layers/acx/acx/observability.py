"""One place for Logger and Metrics, so every function logs and measures the same way.

Logs never carry record content: only ids, counts, hashes and rule ids (invariant 5).

No powertools Tracer: it imports the X-Ray SDK, which measured ~330 ms of extra import time per cold
start (more than boto3 itself). Functions run with `Tracing: Active`, so X-Ray still records every
invocation and its AWS calls at the service level; add the SDK only if subsegments are needed.
"""

from __future__ import annotations

import logging
import os

from aws_lambda_powertools import Logger, Metrics

SERVICE = "acx-memory"

# In Lambda, logs go to stdout (CloudWatch). The local stack shares its process with the CLI
# output, so it sends them to a file instead (ACX_LOG_FILE).
_log_file = os.environ.get("ACX_LOG_FILE")
logger = Logger(service=SERVICE, logger_handler=logging.FileHandler(_log_file) if _log_file else None)
metrics = Metrics(service=SERVICE, namespace="AcxMemory")
