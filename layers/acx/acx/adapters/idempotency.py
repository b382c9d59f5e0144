"""The idempotency store: powertools' idempotency utility over the IdempotencyTable (DynamoDB).

A function wrapped by :meth:`IdempotencyStore.once` runs at most once per key: a retry with the same
key and payload gets the first call's result from the table; powertools' refusals come out as the
service's failure types (:mod:`acx.core.faults`). It does NOT stop a client that sends a new key for
the same body (that is a new request), nor dedupe past the records' expiry.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)

from acx.core.faults import IdempotencyInProgress, IdempotencyKeyReused

Request = dict[str, Any]
Call = Callable[[Request, bytes], dict[str, Any]]


class IdempotencyStore:
    """Wraps functions of ``(request, body)`` so each runs once per key (see the module docstring)."""

    def __init__(self, dynamodb_client: Any, table_name: str) -> None:
        self._store = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=dynamodb_client)

    def once(
        self, fn: Call, *, name: str, key: str, payload: str, expires_after_seconds: int
    ) -> Callable[[Request, bytes, Any], dict[str, Any]]:
        """``fn`` run once per ``key`` (a JMESPath over the request); a retry whose ``payload`` (a
        JMESPath) differs is refused. The returned call takes the Lambda context as its third argument.

        ``name`` goes into every stored key (``<function>.<name>#<hash>``, powertools' layout): keep
        it when code moves, or the records already in the table stop matching their retries."""
        config = IdempotencyConfig(
            event_key_jmespath=key,
            payload_validation_jmespath=payload,
            expires_after_seconds=expires_after_seconds,
            raise_on_no_idempotency_key=True,
        )

        prefix = f"{os.environ.get('AWS_LAMBDA_FUNCTION_NAME', 'test-func')}.{name}"

        @idempotent_function(
            data_keyword_argument="request", persistence_store=self._store, config=config, key_prefix=prefix
        )
        def run(request: Request, body: bytes) -> dict[str, Any]:
            return fn(request, body)

        def call(request: Request, body: bytes, lambda_context: Any) -> dict[str, Any]:
            config.register_lambda_context(lambda_context)
            try:
                return run(request=request, body=body)  # type: ignore[no-any-return]
            except IdempotencyValidationError as exc:
                raise IdempotencyKeyReused(str(exc)) from exc
            except IdempotencyAlreadyInProgressError as exc:
                raise IdempotencyInProgress(str(exc)) from exc

        return call
