"""The deployment's state table (DynamoDB, on-demand, TTL): actions taken and notifications sent.

Actions are partitioned by UTC day so that the weekly digest reads seven partitions. Notification
claims are conditional writes: the first writer of a key wins, so a notification that SNS or a
retry delivers twice is posted once. A claim whose send failed is released, so the retry can send.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from costguard.errors import CostguardError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH = 25  # BatchWriteItem's maximum
MAX_BATCH_ATTEMPTS = 8

_ser = TypeSerializer()
_de = TypeDeserializer()


class LedgerWriteError(CostguardError):
    """DynamoDB kept refusing part of a batch; raised so the invocation is retried."""


@dataclass(frozen=True)
class Action:
    """One thing costguard did (or, in dry-run, would have done) to one instance."""

    at: datetime
    kind: str
    instance_id: str
    region: str
    mode: str
    applied: bool = True
    owner: str = ""
    instance_type: str = ""
    reason: str = ""
    idle_hours: float = 0.0
    hourly_saving: float = 0.0


class Ledger:
    def __init__(self, client: DynamoDBClient, table_name: str, ttl_days: int = 400) -> None:
        self.client = client
        self.table = table_name
        self.ttl = timedelta(days=ttl_days)

    def record(self, action: Action) -> None:
        self.record_many([action])

    def record_many(self, actions: Sequence[Action]) -> None:
        """Write actions 25 at a time (BatchWriteItem's limit), retrying what DynamoDB leaves unprocessed."""
        for start in range(0, len(actions), BATCH):
            requests: list[Any] = [{"PutRequest": {"Item": self._item(a)}} for a in actions[start : start + BATCH]]
            for attempt in range(MAX_BATCH_ATTEMPTS):
                response = self.client.batch_write_item(RequestItems={self.table: requests})
                requests = list((response.get("UnprocessedItems") or {}).get(self.table, []))
                if not requests:
                    break
                time.sleep(min(0.05 * 2**attempt, 2.0))  # throttled: back off, then resend the rest
            else:
                raise LedgerWriteError(
                    f"{len(requests)} ledger items still unprocessed after {MAX_BATCH_ATTEMPTS} tries"
                )

    def _item(self, action: Action) -> dict[str, Any]:
        item: dict[str, Any] = {
            "pk": f"action#{action.at:%Y-%m-%d}",
            "sk": f"{action.at.isoformat()}#{action.instance_id}#{action.kind}",
            "expires_at": int((action.at + self.ttl).timestamp()),
        }
        for key, value in asdict(action).items():
            if key == "at":
                item[key] = value.isoformat()
            elif isinstance(value, float):
                item[key] = Decimal(str(round(value, 6)))
            else:
                item[key] = value
        return {k: _ser.serialize(v) for k, v in item.items()}

    def actions_between(self, start: datetime, end: datetime) -> Iterator[Action]:
        """Actions with start <= at < end, oldest first."""
        names = {f.name for f in fields(Action)}
        day = start.date()
        while day <= end.date():
            paginator = self.client.get_paginator("query")
            pages = paginator.paginate(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": f"action#{day:%Y-%m-%d}"}},
            )
            for page in pages:
                for raw in page.get("Items", []):
                    item = {k: _de.deserialize(v) for k, v in raw.items() if k in names}
                    item["at"] = datetime.fromisoformat(item["at"])
                    for key in ("idle_hours", "hourly_saving"):
                        item[key] = float(item.get(key, 0))
                    action = Action(**item)
                    if start <= action.at < end:
                        yield action
            day += timedelta(days=1)

    def claim(self, key: str, now: datetime, ttl: timedelta | None = None) -> bool:
        """True for the first claimant of `key`; False if it was claimed before."""
        expires = int((now + (ttl or self.ttl)).timestamp())
        try:
            self.client.put_item(
                TableName=self.table,
                Item={
                    "pk": {"S": f"notice#{key}"},
                    "sk": {"S": "notice"},
                    "at": {"S": now.isoformat()},
                    "expires_at": {"N": str(expires)},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release(self, key: str) -> None:
        self.client.delete_item(TableName=self.table, Key={"pk": {"S": f"notice#{key}"}, "sk": {"S": "notice"}})
