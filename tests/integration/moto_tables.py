"""The one table shape the DynamoDB stand-in tests run against: string ``pk`` hash key, string ``sk``
range key, on-demand billing (the service's tables' key shape)."""

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
