"""AWS Cost Anomaly Detection alerts, read from either of the two ways AWS sends them. Pure: no I/O.

An immediate alert subscription publishes JSON to an SNS topic (daily and weekly summaries go by email
only, never to SNS), and AWS also puts an EventBridge event (`source: aws.ce`, `detail-type: Anomaly
Detected`) on the account's default bus. Both carry the same anomaly with two spellings: SNS writes
`dimensionalValue` (and adds `monitorType` and the subscription), EventBridge `dimensionValue` (and
a `contribution` to each root cause). Both become one `Anomaly`, so one anomaly makes one message.

AWS sends the same anomaly again as it grows: its `anomalyId` stays, its impact and end date change.
`revision` is what a re-sent copy must change to be worth an edit of the message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from costguard.budgets.notifications import SnsNotification
from costguard.core import shapes
from costguard.core.errors import EventValidationError

SOURCE, DETAIL_TYPE = "aws.ce", "Anomaly Detected"
ROOT_CAUSES_KEPT = 10  # AWS ranks them by impact; the rest adds nothing a person reads
_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}:\d{2}(\.\d+)?Z)?$")  # the API's own pattern, and ms
# Only a console link is passed on as a link: the topic is shared, and a link is what phishing needs.
_CONSOLE = re.compile(r"^https://([a-z0-9-]+\.)*console\.(aws\.amazon\.com|amazonaws\.cn|amazonaws-us-gov\.com)/")
CONSOLE_ANOMALIES = "https://console.aws.amazon.com/cost-management/home#/anomaly-detection"


@dataclass(frozen=True)
class RootCause:
    service: str = ""
    linked_account: str = ""
    linked_account_name: str = ""
    region: str = ""
    usage_type: str = ""
    contribution: float | None = None  # USD of the impact (EventBridge only)


@dataclass(frozen=True)
class Anomaly:
    anomaly_id: str
    start: date
    end: date | None  # None: still going on when AWS wrote
    total_impact: float  # actual minus expected, USD, over the whole anomaly
    actual: float | None
    expected: float | None
    impact_percent: float | None  # AWS omits it when nothing was expected
    max_impact: float | None  # the worst day's impact
    dimension: str = ""  # what the monitor watches that jumped: a service, an account, a tag value
    monitor_name: str = ""
    monitor_arn: str = ""
    monitor_type: str = ""  # DIMENSIONAL or CUSTOM (SNS only)
    score: float | None = None
    max_score: float | None = None
    root_causes: tuple[RootCause, ...] = ()
    link: str = ""  # the console page of the anomaly (an AWS console URL, or "")
    account_id: str = ""
    account_name: str = ""
    subscription: str = ""  # the alert subscription that sent it (SNS only)
    sent_at: datetime | None = None  # when AWS sent this copy: SNS's Timestamp, EventBridge's time
    via: str = "sns"  # "sns" or "eventbridge"
    message_id: str = ""  # the SNS message id or the EventBridge event id, for the logs

    @property
    def key(self) -> str:
        """One message per anomaly, whichever way and however often AWS sends it."""
        return f"anomaly:{self.anomaly_id}"

    @property
    def revision(self) -> str:
        """What makes a copy new: its impact and its end date (cents, so float noise is no change)."""
        figures = (self.total_impact, self.actual, self.expected, self.max_impact)
        text = "/".join("-" if f is None else f"{f:.2f}" for f in figures)
        return f"{text}/{self.end.isoformat() if self.end else 'ongoing'}"

    def days(self, today: date) -> tuple[date, date]:
        """The anomaly's days as a period [start, end) that Cost Explorer can answer: up to today at most
        (an anomaly still going on runs to today)."""
        last = min(self.end or today, today)
        return min(self.start, last), last + timedelta(days=1)

    @property
    def services(self) -> tuple[str, ...]:
        """The services the root causes name, in AWS's order (its ranking by impact), once each."""
        return tuple(dict.fromkeys(c.service for c in self.root_causes if c.service))

    @property
    def console_link(self) -> str:
        if self.link:
            return self.link
        monitor = self.monitor_arn.rsplit("/", 1)[-1] if "/" in self.monitor_arn else ""
        if monitor and re.fullmatch(r"[A-Za-z0-9-]+", monitor) and re.fullmatch(r"[A-Za-z0-9-]+", self.anomaly_id):
            return f"{CONSOLE_ANOMALIES}/monitors/{monitor}/anomalies/{self.anomaly_id}"
        return f"{CONSOLE_ANOMALIES}/overview"


def anomaly_from_sns(notification: SnsNotification) -> Anomaly | None:
    """The anomaly an SNS message carries; None when the message is not one (a budget's prose, anything
    else: the caller reads it as before). EventValidationError naming the field when it is an anomaly
    (JSON with an `anomalyId`) that cannot be read."""
    body = notification.json_object
    if body is None or "anomalyId" not in body:
        return None
    stamp = notification.timestamp
    sent_at = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    return _anomaly(body, "Message", via="sns", sent_at=sent_at, message_id=notification.message_id)


def is_anomaly_event(event: Any) -> bool:
    """An EventBridge event from Cost Anomaly Detection (of any detail type), not an SNS event."""
    return isinstance(event, Mapping) and event.get("source") == SOURCE and "Records" not in event


def parse_anomaly_event(event: Any) -> Anomaly:
    """The anomaly of an EventBridge `Anomaly Detected` event, or EventValidationError naming the field."""
    body = shapes.obj(event, "event")
    detail_type = shapes.text(body, "detail-type", "event", limit=100)
    if body.get("source") != SOURCE or detail_type != DETAIL_TYPE:
        raise EventValidationError(f"event of detail-type {detail_type!r}: costguard reads {DETAIL_TYPE!r} of {SOURCE}")
    detail = shapes.obj(body.get("detail"), "event.detail")
    stamp = shapes.optional_text(body, "time", "event", limit=40)
    sent_at = _time(stamp, "event.time") if stamp else None
    event_id = shapes.optional_text(body, "id", "event", limit=100)
    return _anomaly(detail, "detail", via="eventbridge", sent_at=sent_at, message_id=event_id)


def _anomaly(body: Mapping[str, Any], where: str, *, via: str, sent_at: datetime | None, message_id: str) -> Anomaly:
    impact = shapes.obj(body.get("impact"), f"{where}.impact")
    score = shapes.optional_obj(body, "anomalyScore", where)
    causes = shapes.items(body.get("rootCauses"), f"{where}.rootCauses")
    end = shapes.optional_text(body, "anomalyEndDate", where, limit=40)
    link = shapes.optional_text(body, "anomalyDetailsLink", where, limit=2048)
    dimension = shapes.optional_text(body, "dimensionalValue", where, limit=1024) or shapes.optional_text(
        body, "dimensionValue", where, limit=1024
    )
    return Anomaly(
        anomaly_id=shapes.text(body, "anomalyId", where, limit=400),
        start=_day(shapes.text(body, "anomalyStartDate", where, limit=40), f"{where}.anomalyStartDate"),
        end=_day(end, f"{where}.anomalyEndDate") if end else None,
        total_impact=_number(impact, "totalImpact", f"{where}.impact", required=True) or 0.0,
        actual=_number(impact, "totalActualSpend", f"{where}.impact"),
        expected=_number(impact, "totalExpectedSpend", f"{where}.impact"),
        impact_percent=_number(impact, "totalImpactPercentage", f"{where}.impact"),
        max_impact=_number(impact, "maxImpact", f"{where}.impact"),
        dimension=dimension,
        monitor_name=shapes.optional_text(body, "monitorName", where, limit=1024),
        monitor_arn=shapes.optional_text(body, "monitorArn", where, limit=2048),
        monitor_type=shapes.optional_text(body, "monitorType", where, limit=40),
        score=_number(score, "currentScore", f"{where}.anomalyScore"),
        max_score=_number(score, "maxScore", f"{where}.anomalyScore"),
        root_causes=tuple(_cause(c, f"{where}.rootCauses[{i}]") for i, c in enumerate(causes[:ROOT_CAUSES_KEPT])),
        link=link if _CONSOLE.match(link) else "",
        account_id=shapes.optional_text(body, "accountId", where, limit=40),
        account_name=shapes.optional_text(body, "accountName", where, limit=1024),
        subscription=shapes.optional_text(body, "subscriptionName", where, limit=1024),
        sent_at=sent_at,
        via=via,
        message_id=message_id,
    )


def _cause(value: Any, where: str) -> RootCause:
    cause = shapes.obj(value, where)
    return RootCause(
        service=shapes.optional_text(cause, "service", where, limit=1024),
        linked_account=shapes.optional_text(cause, "linkedAccount", where, limit=40),
        linked_account_name=shapes.optional_text(cause, "linkedAccountName", where, limit=1024),
        region=shapes.optional_text(cause, "region", where, limit=100),
        usage_type=shapes.optional_text(cause, "usageType", where, limit=1024),
        contribution=_number(shapes.optional_obj(cause, "impact", where), "contribution", f"{where}.impact"),
    )


def _number(parent: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> float | None:
    value = parent.get(key)
    if value is None and not required:
        return None
    # bool is an int to Python, never a sum of money to AWS; NaN and Infinity are JSON to Python, not to AWS
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise EventValidationError(f"{where}.{key} is {shapes.kind(value)}, not a number")
    return float(value)


def _day(value: str, where: str) -> date:
    match = _DAY.match(value)
    try:
        if match is None:
            raise ValueError(value)
        return date.fromisoformat(match.group(1))
    except ValueError:
        raise EventValidationError(
            f"{where} {value[:40]!r} is not a date (2026-11-20 or 2026-11-20T00:00:00Z)"
        ) from None


def _time(value: str, where: str) -> datetime:
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise EventValidationError(f"{where} {value[:40]!r} is not a time (2026-11-20T09:12:44Z)") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)
