"""This account's weeks as its weekly digest counted them: `week#<account>` items, one per week (sort
key: the week's first day), kept 400 days. The quarterly deep dive adds them up."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from costguard.core.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=400)
LOOK_BACK = timedelta(days=14)  # how far back the week before is looked for


class WeekRecords:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def keep(self, account: str, start: datetime, body: str) -> None:
        """The week starting `start` (a rerun of the digest replaces its figures, never where the digest that was
        posted ended). Raises on a failed write."""
        self.client.update_item(
            TableName=self.table,
            Key={"pk": {"S": f"week#{account}"}, "sk": {"S": start.date().isoformat()}},
            UpdateExpression="SET body = :body, expires_at = :expires",
            ExpressionAttributeValues={
                ":body": {"S": body},
                ":expires": {"N": str(int((start + KEEP).timestamp()))},
            },
        )

    def posted(self, account: str, start: datetime, end: datetime) -> None:
        """The week starting `start` was posted by a digest that counted to `end`: the next digest's saving counts
        from there. Written by the run that posted it only (a retry that finds it posted counted to a later
        time, which no digest showed). Raises on a failed write."""
        self.client.update_item(
            TableName=self.table,
            Key={"pk": {"S": f"week#{account}"}, "sk": {"S": start.date().isoformat()}},
            UpdateExpression="SET #end = :end, expires_at = if_not_exists(expires_at, :expires)",
            ExpressionAttributeNames={"#end": "end"},
            ExpressionAttributeValues={
                ":end": {"S": end.isoformat()},
                ":expires": {"N": str(int((start + KEEP).timestamp()))},  # kept as long as its figures would be
            },
        )

    def ended_before(self, account: str, start: datetime) -> datetime | None:
        """Where the posted digest of the latest week starting before `start`'s day ended (within the LOOK_BACK
        days before it), or None: no such week kept, or its post's end not recorded. One Query."""
        answer = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :a AND :b",
            ExpressionAttributeValues={
                ":pk": {"S": f"week#{account}"},
                ":a": {"S": (start - LOOK_BACK).date().isoformat()},
                ":b": {"S": (start.date() - timedelta(days=1)).isoformat()},
            },
            ScanIndexForward=False,
            Limit=1,
        )
        items = answer.get("Items", [])
        if not items or "end" not in items[0]:
            return None
        try:
            return datetime.fromisoformat(items[0]["end"]["S"])
        except ValueError:  # not written by costguard: unknown
            return None

    def between(self, account: str, start: date, end: date, unkept: list[str] | None = None) -> list[str]:
        """The weeks that start in [start, end), oldest first. A week whose digest posted but whose figures were
        never kept (its post's end written, its record refused) has none to add: its first day goes to `unkept`,
        and it is logged."""
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
        missing: list[str] = []
        while True:
            answer = self.client.query(**params)  # type: ignore[arg-type]
            for item in answer.get("Items", []):
                if "body" in item:
                    bodies.append(item["body"]["S"])
                else:
                    missing.append(item["sk"]["S"])
            if "LastEvaluatedKey" not in answer:
                if missing:
                    logger.warning("weeks posted whose figures were never kept", weeks=missing)
                if unkept is not None:
                    unkept += missing
                return bodies
            params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
