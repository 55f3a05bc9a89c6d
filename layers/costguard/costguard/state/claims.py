"""Once-only delivery: claims in the state table, and posting a notice exactly once.

A claim is a conditional write: the first writer of a key wins, so a notification that SNS or a
retry delivers twice is posted once. The claim is taken first; if the post fails the claim is
released and the error raised, so the retry posts it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from costguard.core.errors import SlackDeliveryError
from costguard.slack.blocks import Message
from costguard.slack.notifier import Delivery, SlackNotifier

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class Claims:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def claim(self, key: str, now: datetime, ttl: timedelta) -> bool:
        """True for the first claimant of `key`; False if it was claimed before."""
        expires = int((now + ttl).timestamp())
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


def post_once(
    claims: Claims,
    notifier: SlackNotifier,
    channel: str,
    *,
    key: str,
    message: Message,
    now: datetime,
    ttl: timedelta,
) -> Delivery | None:
    """Post unless `key` was posted before; the delivery, or None if it had been."""
    if not claims.claim(key, now, ttl=ttl):
        return None
    try:
        return notifier.post(channel, message)
    except SlackDeliveryError:
        claims.release(key)
        raise
