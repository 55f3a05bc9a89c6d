"""Owners' Slack ids, kept in the state table for every function: `slack-user#<email>` items.

An id is kept 30 days; "not in Slack" one day, so someone who joins is found the next day. The table
is a cache here: a read that fails is a miss (Slack is asked), a write that fails is only logged. Many
owners at once (a digest's, a sweep's) are read 100 a BatchGetItem and kept 25 a BatchWriteItem, not
one call each.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.observability import logger
from costguard.state.ledger import MAX_BATCH_ATTEMPTS, StateTableBusy, backoff, write_batch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP_SECONDS = 30 * 86_400
KEEP_ABSENT_SECONDS = 86_400
BATCH_GET = 100  # BatchGetItem's maximum


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

    def get_many(self, emails: Iterable[str]) -> dict[str, str | None]:
        """The kept answer (an id, or None for "not in Slack") of each of `emails` the table knows; the
        others are left out. A batch that cannot be read is a miss for its emails."""
        by_key = {_key(e)["pk"]["S"]: e for e in emails}
        keys = list(by_key)
        found: dict[str, str | None] = {}
        for start in range(0, len(keys), BATCH_GET):
            request: Any = {self.table: {"Keys": [_key_of(k) for k in keys[start : start + BATCH_GET]]}}
            try:
                for attempt in range(MAX_BATCH_ATTEMPTS):
                    answer = self.client.batch_get_item(RequestItems=request)
                    for item in answer.get("Responses", {}).get(self.table, []):
                        if int(item.get("expires_at", {}).get("N", "0")) >= time.time():
                            found[by_key[item["pk"]["S"]]] = item.get("user_id", {}).get("S") or None
                    request = answer.get("UnprocessedKeys") or {}
                    if not request:
                        break
                    backoff(attempt)  # throttled: back off, then ask for the rest
            except (ClientError, BotoCoreError) as exc:
                logger.warning("slack ids unreadable from the table", error=str(exc)[:200])
        return found

    def put(self, email: str, user_id: str | None) -> None:
        try:
            self.client.put_item(TableName=self.table, Item=_item(email, user_id, int(time.time())))
        except (ClientError, BotoCoreError) as exc:
            logger.warning("slack id not kept", email=email, error=str(exc)[:200])

    def put_many(self, ids: Mapping[str, str | None]) -> None:
        """Keep each email's answer (an id, or None: not in Slack), 25 a write."""
        now = int(time.time())
        # One item per key: emails that differ only in case are one person to Slack.
        items = {_key(email)["pk"]["S"]: _item(email, user_id, now) for email, user_id in ids.items()}
        try:
            write_batch(self.client, self.table, [{"PutRequest": {"Item": item}} for item in items.values()])
        except (ClientError, BotoCoreError, StateTableBusy) as exc:
            logger.warning("slack ids not kept", count=len(items), error=str(exc)[:200])

    def forget(self, email: str) -> None:
        try:
            self.client.delete_item(TableName=self.table, Key=_key(email))
        except (ClientError, BotoCoreError) as exc:
            logger.warning("slack id not forgotten", email=email, error=str(exc)[:200])


def _item(email: str, user_id: str | None, now: int) -> dict[str, Any]:
    keep = KEEP_SECONDS if user_id else KEEP_ABSENT_SECONDS
    return {**_key(email), "user_id": {"S": user_id or ""}, "expires_at": {"N": str(now + keep)}}


def _key(email: str) -> dict[str, dict[str, str]]:
    return _key_of(f"slack-user#{email.lower()}")


def _key_of(pk: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": pk}, "sk": {"S": "slack-user"}}
