"""This account's weeks as its weekly digest counted them: `week#<account>` items, one per week (sort
key: the week's first day), kept 400 days. The quarterly deep dive adds them up."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=400)


class WeekRecords:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def keep(self, account: str, start: datetime, body: str) -> None:
        """The week starting `start` (a rerun of the digest replaces it). Raises on a failed write."""
        self.client.put_item(
            TableName=self.table,
            Item={
                "pk": {"S": f"week#{account}"},
                "sk": {"S": start.date().isoformat()},
                "body": {"S": body},
                "expires_at": {"N": str(int((start + KEEP).timestamp()))},
            },
        )

    def between(self, account: str, start: date, end: date) -> list[str]:
        """The weeks that start in [start, end), oldest first."""
        params: dict[str, object] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :a AND :b",
            "ExpressionAttributeValues": {
                ":pk": {"S": f"week#{account}"},
                ":a": {"S": start.isoformat()},
                ":b": {"S": (end - timedelta(days=1)).isoformat()},
            },
        }
        bodies: list[str] = []
        while True:
            answer = self.client.query(**params)  # type: ignore[arg-type]
            bodies += [item["body"]["S"] for item in answer.get("Items", [])]
            if "LastEvaluatedKey" not in answer:
                return bodies
            params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
