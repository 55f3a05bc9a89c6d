"""Each account's latest week, as handed to the hub: `handoff#<account>` items in the state table.

The hub keeps the newest hand-off of each account (a retried or late one never replaces a newer
week), so its digest can say which accounts reported this week and when the others last did.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from costguard.state.ledger import MAX_BATCH_ATTEMPTS, StateTableBusy, backoff

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=120)


class HandedWeeks:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def keep(self, account: str, end: datetime, body: str) -> bool:
        """Keep `body` as the account's week ending `end`, unless a newer one is kept; True if kept."""
        item = {
            **_key(account),
            "end": {"S": end.isoformat()},
            "end_at": {"N": str(int(end.timestamp()))},
            "body": {"S": body},
            "expires_at": {"N": str(int((end + KEEP).timestamp()))},
        }
        try:
            self.client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk) OR end_at <= :end",
                ExpressionAttributeValues={":end": item["end_at"]},
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def latest(self, accounts: list[str]) -> dict[str, str]:
        """The kept hand-off (its body) of each of `accounts` that has one."""
        found: dict[str, str] = {}
        for start in range(0, len(accounts), 100):
            keys = [_key(a) for a in accounts[start : start + 100]]
            request = {self.table: {"Keys": keys, "ConsistentRead": True}}
            for attempt in range(MAX_BATCH_ATTEMPTS):
                answer = self.client.batch_get_item(RequestItems=request)  # type: ignore[arg-type]
                for item in answer.get("Responses", {}).get(self.table, []):
                    found[item["pk"]["S"].removeprefix("handoff#")] = item["body"]["S"]
                request = answer.get("UnprocessedKeys") or {}  # type: ignore[assignment]
                if not request:
                    break
                if attempt < MAX_BATCH_ATTEMPTS - 1:
                    backoff(attempt)  # throttled: back off, then ask for the rest
            else:
                raise StateTableBusy(f"kept weeks still unread after {MAX_BATCH_ATTEMPTS} tries")
        return found


def _key(account: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"handoff#{account}"}, "sk": {"S": "handoff"}}
