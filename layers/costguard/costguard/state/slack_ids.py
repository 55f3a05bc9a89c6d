"""Owners' Slack ids, kept in the state table for every function: `slack-user#<email>` items.

An id is kept 30 days; "not in Slack" one day, so someone who joins is found the next day. The table
is a cache here: a read that fails is a miss (Slack is asked), a write that fails is only logged.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP_SECONDS = 30 * 86_400
KEEP_ABSENT_SECONDS = 86_400


class KnownSlackUsers:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def get(self, email: str) -> tuple[bool, str | None]:
        try:
            item = self.client.get_item(TableName=self.table, Key=_key(email)).get("Item")
        except (ClientError, BotoCoreError) as exc:
            logger.warning("slack id unreadable from the table", email=email, error=str(exc)[:200])
            return False, None
        if not item or int(item.get("expires_at", {}).get("N", "0")) < time.time():
            return False, None  # DynamoDB deletes expired items within days, not at once
        return True, item.get("user_id", {}).get("S") or None

    def put(self, email: str, user_id: str | None) -> None:
        keep = KEEP_SECONDS if user_id else KEEP_ABSENT_SECONDS
        item = {**_key(email), "user_id": {"S": user_id or ""}, "expires_at": {"N": str(int(time.time()) + keep)}}
        try:
            self.client.put_item(TableName=self.table, Item=item)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("slack id not kept", email=email, error=str(exc)[:200])

    def forget(self, email: str) -> None:
        try:
            self.client.delete_item(TableName=self.table, Key=_key(email))
        except (ClientError, BotoCoreError) as exc:
            logger.warning("slack id not forgotten", email=email, error=str(exc)[:200])


def _key(email: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"slack-user#{email.lower()}"}, "sk": {"S": "slack-user"}}
