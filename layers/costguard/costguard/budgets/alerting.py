"""One AWS Budgets notification, from SNS record to Slack: read, explain, post once (or post raw). One
Cost Anomaly Detection alert, from SNS or EventBridge: explained, posted once, edited when it grows. One
change of costguard's own alarms (the operations topic): posted once, with what to do."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.costexplorer import CostExplorer
from costguard.budgets.alarms import alarm_from_sns, alarm_message
from costguard.budgets.anomalies import Anomaly, anomaly_from_sns, is_anomaly_event, parse_anomaly_event
from costguard.budgets.anomaly_messages import anomaly_message
from costguard.budgets.messages import budget_alert_message, raw_budget_message
from costguard.budgets.notifications import BudgetParseError, SnsNotification, parse_budget_message, parse_sns_event
from costguard.core.errors import EventValidationError, SlackDeliveryError
from costguard.core.observability import logger, metrics
from costguard.slack.blocks import Message
from costguard.slack.notifier import Delivery, SlackNotifier
from costguard.state.claims import Claim, ClaimHeld, Claims, ClaimState, post_once

# Longer than a month, so a tier crossed on the 1st is still remembered on the 31st.
NOTICE_TTL = timedelta(days=62)
# Cost Anomaly Detection keeps an anomaly 90 days: a copy re-sent within them still edits its message.
ANOMALY_TTL = timedelta(days=120)


@dataclass(frozen=True)
class Handled:
    message_id: str
    status: str  # "posted", "posted-raw", "duplicate"; anomalies: "updated", "reposted", "unchanged", "stale"
    key: str
    kind: str = "budget"  # or "anomaly"


@dataclass(frozen=True)
class Desk:
    """What every alert of one invocation is handled with: where it reads, keeps and posts, and when."""

    explorer: Callable[[], CostExplorer]
    claims: Claims
    notifier: SlackNotifier
    channel: str
    now: datetime

    def post_once(self, key: str, message: Message) -> Delivery | None:
        return post_once(
            self.claims, self.notifier, self.channel, key=key, message=message, now=self.now, ttl=NOTICE_TTL
        )


def handle_event(
    event: Any,
    *,
    explorer: Callable[[], CostExplorer],
    claims: Claims,
    notifier: SlackNotifier,
    channel: str,
    now: datetime,
) -> list[dict[str, str]]:
    """An invocation's alerts: a Cost Anomaly Detection event from EventBridge, or each record of an SNS event
    (a budget's tier, an anomaly, an alarm); each one logged and counted by kind and status (BudgetPosted,
    AnomalyUpdated...), and said in the summary."""
    desk = Desk(explorer=explorer, claims=claims, notifier=notifier, channel=channel, now=now)
    anomaly = parse_anomaly_event(event) if is_anomaly_event(event) else None
    notifications = parse_sns_event(event, received=now) if anomaly is None else []
    results = [handle_anomaly(anomaly, desk)] if anomaly else []
    results += [handle_notification(notification, desk) for notification in notifications]
    handled = []
    for result in results:
        logger.info(f"{result.kind} alert", message_id=result.message_id, status=result.status, key=result.key)
        name = f"{result.kind.title()}{result.status.title().replace('-', '')}"
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
        handled.append({"message_id": result.message_id, "status": result.status, "key": result.key})
    return handled


def handle_notification(notification: SnsNotification, desk: Desk) -> Handled:
    try:
        alarm = alarm_from_sns(notification)
        anomaly = anomaly_from_sns(notification) if alarm is None else None
    except EventValidationError as exc:
        # An anomaly or alarm AWS wrote in a shape costguard cannot read: shown as sent, with the field at fault.
        logger.warning("unreadable anomaly or alarm notification", message_id=notification.message_id, reason=str(exc))
        return _post_raw(notification, str(exc), desk)
    if alarm is not None:
        delivery = desk.post_once(alarm.key, alarm_message(alarm))
        return Handled(notification.message_id, "posted" if delivery else "duplicate", alarm.key, kind="alarm")
    if anomaly is not None:
        return handle_anomaly(anomaly, desk)
    try:
        alert = parse_budget_message(notification.message)
    except BudgetParseError as exc:
        logger.warning("unreadable budget notification", message_id=notification.message_id, reason=str(exc))
        return _post_raw(notification, str(exc), desk)
    message = budget_alert_message(alert, desk.explorer().spend_picture(desk.now.date()))
    key = alert.dedupe_key(notification.timestamp.date())
    delivery = desk.post_once(key, message)
    return Handled(notification.message_id, "posted" if delivery else "duplicate", key)


def _post_raw(notification: SnsNotification, reason: str, desk: Desk) -> Handled:
    key = f"budget-raw:{notification.message_id}"
    delivery = desk.post_once(key, raw_budget_message(notification, reason))
    return Handled(notification.message_id, "posted-raw" if delivery else "duplicate", key)


@dataclass(frozen=True)
class Shown:
    """What an anomaly's claim keeps once its message is out: where it is, and what it shows."""

    channel: str = ""
    ts: str = ""  # "" when the webhook posted it: such a message cannot be edited
    revision: str = ""
    total_impact: float | None = None
    sent_at: str = ""  # when AWS sent the copy it shows (ISO), so an older copy never replaces a newer
    posted_on: str = ""  # the day of the first post (ISO)

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def load(cls, detail: str) -> Shown:
        """What the claim kept; an empty Shown if it is unreadable (then the next copy is posted anew)."""
        try:
            found = json.loads(detail)
            return cls(**{k: found[k] for k in cls.__dataclass_fields__ if k in found})
        except (ValueError, TypeError):
            return cls()


def handle_anomaly(anomaly: Anomaly, desk: Desk) -> Handled:
    """Post the anomaly once; when AWS sends it again with a new impact, edit that message in place (or,
    if it cannot be edited, post a new one that says it updates the earlier one). An unchanged or older
    copy posts nothing, and costs no Cost Explorer call. ClaimHeld while another attempt is at it."""
    seen = _as_claimed(anomaly, desk)
    if isinstance(seen, Handled):
        return seen
    claims, now = desk.claims, desk.now
    edit = claims.claim(f"{anomaly.key}:edit", now, ttl=ANOMALY_TTL)  # one edit at a time, released after
    if edit.state is not ClaimState.TAKEN:
        raise ClaimHeld(f"{anomaly.key} is being edited by another attempt")
    try:
        shown = _as_claimed(anomaly, desk)  # read again, under the edit's lease
        if isinstance(shown, Handled):
            return shown
        drivers = desk.explorer().drivers(*anomaly.days(now.date()), anomaly.services)
        try:
            edited = anomaly_message(anomaly, drivers, was=shown.total_impact, updated_at=now)
            delivery = desk.notifier.update(shown.channel, shown.ts, edited)
            status, posted_on = "updated", shown.posted_on
        except SlackDeliveryError as exc:
            logger.warning("anomaly message not editable, posting anew", key=anomaly.key, reason=str(exc))
            replaces = date.fromisoformat(shown.posted_on) if shown.posted_on else now.date()
            delivery = desk.notifier.post(desk.channel, anomaly_message(anomaly, drivers, replaces=replaces))
            status, posted_on = "reposted", now.date().isoformat()
        claims.revise(anomaly.key, _shown(anomaly, delivery, posted_on).dump())
        return Handled(anomaly.message_id, status, anomaly.key, "anomaly")
    finally:
        claims.release(edit)


def _as_claimed(anomaly: Anomaly, desk: Desk) -> Handled | Shown:
    """The anomaly's claim, taken or read: a first post made (the claim was free, or expired), a copy that
    changes nothing, or what its message shows now (to be edited). ClaimHeld while another attempt posts it."""
    claim = desk.claims.claim(anomaly.key, desk.now, ttl=ANOMALY_TTL)
    if claim.state is ClaimState.TAKEN:
        return _first_post(anomaly, claim, desk)
    if claim.state is ClaimState.HELD:
        raise ClaimHeld(f"{anomaly.key} is being posted by another attempt")
    shown = Shown.load(claim.detail)
    if skip := _unneeded(anomaly, shown):
        return Handled(anomaly.message_id, skip, anomaly.key, "anomaly")
    return shown


def _first_post(anomaly: Anomaly, claim: Claim, desk: Desk) -> Handled:
    now = desk.now
    try:
        message: Message = anomaly_message(
            anomaly, desk.explorer().drivers(*anomaly.days(now.date()), anomaly.services)
        )
        delivery = desk.notifier.post(desk.channel, message)
    except SlackDeliveryError:
        desk.claims.release(claim)
        raise
    desk.claims.done(claim, detail=_shown(anomaly, delivery, now.date().isoformat()).dump())
    return Handled(anomaly.message_id, "posted", anomaly.key, "anomaly")


def _unneeded(anomaly: Anomaly, shown: Shown) -> str:
    """Why this copy changes nothing ("unchanged", "stale"), or "" when the message must change."""
    if shown.revision == anomaly.revision:
        return "unchanged"
    if anomaly.sent_at is not None and shown.sent_at and anomaly.sent_at < datetime.fromisoformat(shown.sent_at):
        return "stale"  # a retry of an older copy, after a newer one was shown
    return ""


def _shown(anomaly: Anomaly, delivery: Delivery, posted_on: str) -> Shown:
    return Shown(
        channel=delivery.channel,
        ts=delivery.ts,
        revision=anomaly.revision,
        total_impact=anomaly.total_impact,
        sent_at=anomaly.sent_at.isoformat() if anomaly.sent_at else "",
        posted_on=posted_on,
    )
