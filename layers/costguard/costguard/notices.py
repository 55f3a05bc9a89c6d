"""Posting a notice exactly once, even when its trigger fires twice (SNS redelivery, a retried run).

The ledger claim is taken first; if the post fails the claim is released and the error raised, so
the retry posts it: never twice, never lost.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from costguard.errors import SlackDeliveryError
from costguard.ledger import Ledger
from costguard.slack.blocks import Message
from costguard.slack.notifier import Delivery, SlackNotifier


def post_once(
    ledger: Ledger,
    notifier: SlackNotifier,
    channel: str,
    *,
    key: str,
    message: Message,
    now: datetime,
    ttl: timedelta,
) -> Delivery | None:
    """Post unless `key` was posted before; the delivery, or None if it had been."""
    if not ledger.claim(key, now, ttl=ttl):
        return None
    try:
        return notifier.post(channel, message)
    except SlackDeliveryError:
        ledger.release(key)
        raise
