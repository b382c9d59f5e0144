"""Upload and export jobs in DynamoDB (JOBS_TABLE): status, summary or report, cartridge metadata."""

from __future__ import annotations

import builtins
import json
import time
from typing import Any

from botocore.exceptions import ClientError

from acx.adapters.catalog import decode_cursor, encode_cursor
from acx.core.package import PackageRef


def _pk(tenant: str, package: str) -> str:
    return PackageRef(tenant, package).pk  # the one derivation of the package partition key


class JobStore:
    """Jobs keyed by ``<tenant>#<package>`` and ``<kind>#<id>``; results stored as JSON strings."""

    def __init__(self, dynamodb_client: Any, table: str) -> None:
        self.ddb = dynamodb_client
        self.table = table

    def create(self, tenant: str, package: str, kind: str, job_id: str, **fields: Any) -> None:
        item = {
            "pk": {"S": _pk(tenant, package)},
            "sk": {"S": f"{kind}#{job_id}"},
            "status": {"S": fields.pop("status", "pending")},
            "createdAt": {"N": str(int(time.time()))},
            "data": {"S": json.dumps(fields, separators=(",", ":"))},
        }
        self.ddb.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")

    def get(self, tenant: str, package: str, kind: str, job_id: str) -> dict[str, Any] | None:
        item = self.ddb.get_item(
            TableName=self.table,
            Key={"pk": {"S": _pk(tenant, package)}, "sk": {"S": f"{kind}#{job_id}"}},
            ConsistentRead=True,
        ).get("Item")
        return _decode(item) if item else None

    def finish(
        self,
        tenant: str,
        package: str,
        kind: str,
        job_id: str,
        status: str,
        expect: str | None = "pending",
        **fields: Any,
    ) -> bool:
        """Move a job to ``status`` (from ``expect``); False when another worker already did (redelivery)."""
        current = self.get(tenant, package, kind, job_id)
        if current is None:
            return False
        data = {k: v for k, v in current.items() if k not in ("status", "createdAt", "jobId", "kind")}
        data.update(fields)
        kwargs: dict[str, Any] = {}
        if expect is not None:
            kwargs = {
                "ConditionExpression": "#s = :expect",
                "ExpressionAttributeValues": {
                    ":status": {"S": status},
                    ":data": {"S": json.dumps(data, separators=(",", ":"))},
                    ":expect": {"S": expect},
                },
            }
        else:
            kwargs = {
                "ExpressionAttributeValues": {
                    ":status": {"S": status},
                    ":data": {"S": json.dumps(data, separators=(",", ":"))},
                }
            }

        try:
            self.ddb.update_item(
                TableName=self.table,
                Key={"pk": {"S": _pk(tenant, package)}, "sk": {"S": f"{kind}#{job_id}"}},
                UpdateExpression="SET #s = :status, #d = :data",
                ExpressionAttributeNames={"#s": "status", "#d": "data"},
                **kwargs,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def list(self, tenant: str, package: str, kind: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": _pk(tenant, package)}, ":prefix": {"S": f"{kind}#"}},
        }
        while True:
            page = self.ddb.query(**kwargs)
            out.extend(_decode(item) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def page(
        self, tenant: str, package: str, kind: str, limit: int, cursor: str | None
    ) -> tuple[builtins.list[dict[str, Any]], str | None]:
        """Up to ``limit`` jobs of one kind in id order, and the cursor of the next page (opaque; a
        cursor naming another package's or kind's key is refused with ValueError)."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": _pk(tenant, package)}, ":prefix": {"S": f"{kind}#"}},
            "Limit": limit,
        }
        if cursor:
            start = decode_cursor(cursor, _pk(tenant, package))
            if start["pk"]["S"] != _pk(tenant, package) or not start["sk"]["S"].startswith(f"{kind}#"):
                raise ValueError("invalid cursor")
            kwargs["ExclusiveStartKey"] = start
        out: builtins.list[dict[str, Any]] = []
        while True:
            resp = self.ddb.query(**kwargs)
            for item in resp.get("Items", []):
                out.append(_decode(item))
                if len(out) >= limit:
                    return out, encode_cursor({"pk": item["pk"], "sk": item["sk"]})
            if "LastEvaluatedKey" not in resp:
                return out, None
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _decode(item: dict[str, Any]) -> dict[str, Any]:
    kind, _, job_id = item["sk"]["S"].partition("#")
    out = json.loads(item.get("data", {}).get("S", "{}"))
    out.update(
        {
            "status": item["status"]["S"],
            "createdAt": int(item["createdAt"]["N"]),
            "kind": kind,
            "jobId": job_id,
        }
    )
    return out
