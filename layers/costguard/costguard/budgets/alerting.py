"""One AWS Budgets notification, from SNS record to Slack: read, explain, post once (or post raw)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from costguard.aws.costexplorer import CostExplorer
from costguard.budgets.messages import budget_alert_message, raw_budget_message
from costguard.budgets.notifications import BudgetParseError, SnsNotification, parse_budget_message
from costguard.core.observability import logger
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims, post_once

# Longer than a month, so a tier crossed on the 1st is still remembered on the 31st.
NOTICE_TTL = timedelta(days=62)


@dataclass(frozen=True)
class Handled:
    message_id: str
    status: str  # "posted", "posted-raw" or "duplicate"
    key: str


def handle_notification(
    notification: SnsNotification,
    *,
    explorer: Callable[[], CostExplorer],
    claims: Claims,
    notifier: SlackNotifier,
    channel: str,
    now: datetime,
) -> Handled:
    try:
        alert = parse_budget_message(notification.message)
    except BudgetParseError as exc:
        logger.warning("unreadable budget notification", message_id=notification.message_id, reason=str(exc))
        message = raw_budget_message(notification, str(exc))
        key, status = f"budget-raw:{notification.message_id}", "posted-raw"
    else:
        message = budget_alert_message(alert, explorer().spend_picture(now.date()))
        key, status = alert.dedupe_key(notification.timestamp.date()), "posted"
    delivery = post_once(claims, notifier, channel, key=key, message=message, now=now, ttl=NOTICE_TTL)
    return Handled(notification.message_id, status if delivery else "duplicate", key)
