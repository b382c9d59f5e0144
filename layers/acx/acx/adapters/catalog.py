"""Read-only listings for the API's list routes: a tenant's packages and a package's record count.

Separate from the log store (which owns every write): these are plain Scan/Query reads of the heads
and records tables. Cost, stated plainly: listing packages Scans the heads table with a tenant filter
(DynamoDB reads every head item, O(all packages of all tenants) per full listing; a per-tenant index
would make it O(own packages), and needs a write-path change), and a record count is a COUNT Query
over the package's rows (O(records)). Neither leaks another tenant's rows: the filter runs server-side
and only the caller's tenant prefix matches.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def encode_cursor(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str, prefix: str) -> dict[str, Any]:
    """A DynamoDB ExclusiveStartKey from a cursor we issued; ValueError unless its pk starts with
    ``prefix`` (a cursor cannot move a listing into another tenant's keys)."""
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        pk, sk = key["pk"]["S"], key["sk"]["S"]
    except (ValueError, KeyError, TypeError):
        raise ValueError("invalid cursor") from None
    if (
        not isinstance(pk, str)
        or not isinstance(sk, str)
        or not pk.startswith(prefix)
        or set(key) != {"pk", "sk"}
    ):
        raise ValueError("invalid cursor")
    return {"pk": {"S": pk}, "sk": {"S": sk}}


class Catalog:
    """Listings over the heads and records tables (boto3 DynamoDB client, table names)."""

    def __init__(self, dynamodb_client: Any, heads_table: str, records_table: str) -> None:
        from acx.adapters.log_rows import ShardLayout

        self.ddb = dynamodb_client
        self.heads_table = heads_table
        self.records_table = records_table
        self.layout = ShardLayout(dynamodb_client, heads_table)

    def packages(self, tenant: str, limit: int, cursor: str | None) -> tuple[list[str], str | None]:
        """Up to ``limit`` package ids of ``tenant`` (scan order) and the cursor for the next page."""
        prefix = f"{tenant}#"
        kwargs: dict[str, Any] = {
            "TableName": self.heads_table,
            "FilterExpression": "#sk = :h AND begins_with(#pk, :t)",
            "ExpressionAttributeNames": {"#sk": "sk", "#pk": "pk"},
            "ExpressionAttributeValues": {":h": {"S": "head"}, ":t": {"S": prefix}},
            "ProjectionExpression": "#pk, #sk",
        }
        if cursor:
            kwargs["ExclusiveStartKey"] = decode_cursor(cursor, prefix)
        out: list[str] = []
        while True:
            resp = self.ddb.scan(**kwargs)
            for item in resp.get("Items", []):
                out.append(item["pk"]["S"][len(prefix) :])
                if len(out) >= limit:
                    last = {"pk": item["pk"], "sk": item["sk"]}
                    return out, encode_cursor(last)
            if "LastEvaluatedKey" not in resp:
                return out, None
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def active_records(self, tenant: str, package: str) -> int:
        """How many active record rows the package holds (a COUNT Query per row shard: reads every
        row key)."""
        from acx.core.package import PackageRef

        return sum(self._count(pk) for pk in self.layout.pks(PackageRef(tenant, package)))

    def _count(self, pk: str) -> int:
        kwargs: dict[str, Any] = {
            "TableName": self.records_table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :r)",
            "FilterExpression": "#st = :a",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk", "#st": "state"},
            "ExpressionAttributeValues": {
                ":pk": {"S": pk},
                ":r": {"S": "r#"},
                ":a": {"S": "active"},
            },
            "Select": "COUNT",
        }
        total = 0
        while True:
            resp = self.ddb.query(**kwargs)
            total += int(resp.get("Count", 0))
            if "LastEvaluatedKey" not in resp:
                return total
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
