"""What the DynamoDB stand-in tests share: the one table shape they run against (string ``pk`` hash
key, string ``sk`` range key, on-demand billing: the service's tables' key shape) and how answers are
compared with stock moto's."""

from __future__ import annotations

from typing import Any


def create_pk_sk_table(client: Any, name: str = "t") -> None:
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def sets_sorted(value: Any) -> Any:
    """``value`` with the members of every set (SS, NS, BS) sorted: a set has no order in DynamoDB,
    and moto's own projection passes sets through a Python ``set`` (string hashing varies per process)."""
    if isinstance(value, dict):
        return {
            k: sorted(v) if k in ("SS", "NS", "BS") and isinstance(v, list) else sets_sorted(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [sets_sorted(v) for v in value]
    return value
