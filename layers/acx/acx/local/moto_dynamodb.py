"""moto's TransactWriteItems without a deep copy of every table it touches.

moto 5 backs up each table a transaction names with ``copy.deepcopy`` before applying it, so every
transaction costs O(all items in those tables): on the local stack an append to a log of a few
thousand entries took seconds and grew without bound (AWS does no such thing). This replacement keeps
AWS's all-or-nothing semantics differently: it evaluates every condition first and writes nothing
when any fails (TransactionCanceledException with one reason per item, as AWS reports them), then
applies the writes under one lock, restoring only the touched items if a write itself raises.

Local stand-in only (tests and the local stack); never imported by the service. ``install()`` is
idempotent.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

_LOCK = threading.RLock()
_INSTALLED = False


def install() -> None:
    """Replace ``DynamoDBBackend.transact_write_items`` in this process's moto."""
    global _INSTALLED
    if _INSTALLED:
        return
    from moto.dynamodb.models import DynamoDBBackend

    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    from acx.local import moto_query

    moto_query.install()  # paged Query in O(page), not O(table): acx/local/moto_query.py
    _INSTALLED = True


def _key_of(backend: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    if op_type != "Put":
        return dict(op["Key"])
    table = backend.get_table(op["TableName"])
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    with _LOCK:
        plan: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        seen: set[tuple[str, str]] = set()
        errors: list[tuple[Any, Any, Any]] = []
        for item in transact_items:
            if len(item) > 1:
                raise TransactWriteSingleOpException
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            key = _key_of(self, op_type, op)
            marker = (str(op["TableName"]), str(dict(sorted(key.items()))))
            if marker in seen:
                raise MultipleTransactionsException()
            seen.add(marker)
            plan.append((op_type, op, key))
            errors.append(_condition_error(self, op, key, ConditionalCheckFailed))
        if any(code is not None for code, _, _ in errors):
            raise TransactionCanceledException(errors)
        backups = [
            (op["TableName"], key, copy.deepcopy(self.get_item(op["TableName"], key))) for _, op, key in plan
        ]
        try:
            for op_type, op, key in plan:
                _apply(self, op_type, op, key)
        except Exception:
            for table_name, key, old in backups:
                if old is None:
                    self.delete_item(table_name, key)
                else:
                    self.put_item(table_name, old.to_json()["Attributes"])
            raise


def _condition_error(
    backend: Any, op: dict[str, Any], key: dict[str, Any], failed: type
) -> tuple[Any, Any, Any]:
    from moto.dynamodb.comparisons import get_filter_expression

    expression = op.get("ConditionExpression")
    if expression is None:
        return (None, None, None)
    current = backend.get_item(op["TableName"], key)
    condition = get_filter_expression(
        expression, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
    )
    if condition.expr(current):
        return (None, None, None)
    old = None
    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
        old = current.to_json()["Attributes"]
    return ("ConditionalCheckFailed", str(failed(item=old).message), old)


def _apply(backend: Any, op_type: str, op: dict[str, Any], key: dict[str, Any]) -> None:
    # Conditions were checked above under the same lock; they are not evaluated twice.
    names = op.get("ExpressionAttributeNames")
    values = op.get("ExpressionAttributeValues")
    if op_type == "Put":
        backend.put_item(op["TableName"], op["Item"])
    elif op_type == "Delete":
        backend.delete_item(op["TableName"], key)
    elif op_type == "Update":
        backend.update_item(
            op["TableName"],
            key,
            update_expression=op["UpdateExpression"],
            expression_attribute_names=names,
            expression_attribute_values=values,
        )
