"""AWS Budgets notifications: parsed from the plain text AWS sends to SNS, and graded. Pure: no I/O.

AWS sends English prose, not JSON, for example:

    AWS Budget Notification November 21, 2026
    AWS Account 123456789012
    ...
    Budget Name: ml-monthly
    Budget Type: Cost
    Budgeted Amount: $10,000.00
    Alert Type: ACTUAL
    Alert Threshold: > $7,500.00
    ACTUAL Amount: $7,612.34

The labelled lines are read, not the sentence, which AWS rewords now and then. A message whose lines
cannot be read raises BudgetParseError; the caller posts it raw, never drops it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum
from functools import cached_property
from typing import Any

from costguard.core import shapes
from costguard.core.errors import CostguardError, EventValidationError
from costguard.core.observability import logger


class BudgetParseError(CostguardError, ValueError):
    """The text is not an AWS Budgets notification costguard can read."""


class Severity(StrEnum):
    INFO = "info"
    NOTICE = "notice"
    WARNING = "warning"
    CRITICAL = "critical"


@dataclass(frozen=True)
class SnsNotification:
    message_id: str
    subject: str
    message: str
    timestamp: datetime

    @cached_property
    def json_object(self) -> Mapping[str, Any] | None:
        """The message as a JSON object (what Cost Anomaly Detection and CloudWatch alarms publish), or
        None (AWS Budgets' prose, anything else); parsed once, whichever reader asks first."""
        text = self.message.lstrip()
        if not text.startswith("{"):
            return None
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            return None
        return body if isinstance(body, Mapping) else None


@dataclass(frozen=True)
class BudgetAlert:
    budget_name: str
    budget_type: str
    budgeted: float
    alert_type: str  # ACTUAL or FORECASTED
    threshold: float  # the amount the alert fires above
    amount: float  # the actual or forecasted amount
    account: str = ""
    notified_on: date | None = None
    daily: bool = False  # a daily budget ("per day"), as opposed to the current month

    @property
    def tier(self) -> int:
        """The threshold as a percentage of the budget, as the notifications were set (25, 50, 75, 100)."""
        return round(self.threshold / self.budgeted * 100) if self.budgeted else 0

    @property
    def used_percent(self) -> float:
        return self.amount / self.budgeted * 100 if self.budgeted else 0.0

    @property
    def forecast(self) -> bool:
        return self.alert_type == "FORECASTED"

    @property
    def severity(self) -> Severity:
        if self.forecast:
            return Severity.CRITICAL if self.amount > self.budgeted else Severity.WARNING
        if self.tier >= 100:
            return Severity.CRITICAL
        if self.tier >= 75:
            return Severity.WARNING
        if self.tier >= 50:
            return Severity.NOTICE
        return Severity.INFO

    def dedupe_key(self, fallback: date) -> str:
        """One post per budget, alert type, tier and month (per day for daily budgets)."""
        day = self.notified_on or fallback
        period = f"{day:%Y-%m-%d}" if self.daily else f"{day:%Y-%m}"
        return f"budget:{self.account}:{self.budget_name}:{self.alert_type}:{self.tier}:{period}"


_MONEY = r"\$\s?([\d,]+(?:\.\d+)?)"
_LINES = {
    "budget_name": re.compile(r"^Budget Name:\s*(.+?)\s*$", re.M | re.I),
    "budget_type": re.compile(r"^Budget Type:\s*(.+?)\s*$", re.M | re.I),
    "budgeted": re.compile(rf"^Budgeted Amount:\s*{_MONEY}", re.M | re.I),
    "alert_type": re.compile(r"^Alert Type:\s*([A-Z]+)\s*$", re.M | re.I),
    "threshold": re.compile(rf"^Alert Threshold:\s*[><=]*\s*{_MONEY}", re.M | re.I),
}
# The labels' case is not fixed: "ACTUAL Amount" and "Actual Amount" have both been sent.
_AMOUNT = re.compile(rf"^(ACTUAL|FORECASTED) Amount:\s*{_MONEY}", re.M | re.I)
_ACCOUNT = re.compile(r"^AWS Account\s+(\d{12})\s*$", re.M)
_DATE = re.compile(r"^AWS Budget Notification\s+([A-Z][a-z]+ \d{1,2}, \d{4})\s*$", re.M)


def parse_budget_message(text: str) -> BudgetAlert:
    if not isinstance(text, str) or "budget name:" not in text.lower():
        raise BudgetParseError("no 'Budget Name:' line: not an AWS Budgets notification")
    found: dict[str, str] = {}
    missing = []
    for key, pattern in _LINES.items():
        match = pattern.search(text)
        if match:
            found[key] = match.group(1)
        else:
            missing.append(key)
    amount = _AMOUNT.search(text)
    if amount is None:
        missing.append("amount")
    if missing:
        raise BudgetParseError(f"could not read: {', '.join(missing)}")
    assert amount is not None
    alert_type = found["alert_type"].upper()
    if alert_type not in ("ACTUAL", "FORECASTED") or amount.group(1).upper() != alert_type:
        raise BudgetParseError(f"unknown alert type {alert_type!r}")
    budget_type = found["budget_type"]
    if budget_type.lower() != "cost":
        raise BudgetParseError(f"budget type {budget_type!r}: costguard reads cost budgets")
    notified_on = None
    date_match = _DATE.search(text)
    if date_match:
        try:
            notified_on = datetime.strptime(date_match.group(1), "%B %d, %Y").replace(tzinfo=UTC).date()
        except ValueError:
            notified_on = None
    account = _ACCOUNT.search(text)
    return BudgetAlert(
        budget_name=found["budget_name"],
        budget_type=budget_type,
        budgeted=_money(found["budgeted"]),
        alert_type=alert_type,
        threshold=_money(found["threshold"]),
        amount=_money(amount.group(2)),
        account=account.group(1) if account else "",
        notified_on=notified_on,
        daily="per day" in text,
    )


def parse_sns_event(event: Any, *, received: datetime | None = None) -> list[SnsNotification]:
    """The SNS records of a Lambda SNS event; EventValidationError naming the field if it is not one.

    A record's time only dates its notification: one that cannot be read (captured records hold
    "13: 46: 29.757Z") is the time it was `received`, so that the notification still reaches Slack."""
    records = shapes.items(shapes.obj(event, "event").get("Records"), "Records")
    if not records:
        raise EventValidationError("not an SNS event: no Records")
    out = []
    for record in records:
        sns = shapes.obj(shapes.obj(record, "Records[]").get("Sns"), "Records[].Sns")
        out.append(
            SnsNotification(
                shapes.text(sns, "MessageId", "Sns", limit=100),
                shapes.optional_text(sns, "Subject", "Sns", limit=500),
                shapes.text(sns, "Message", "Sns", limit=262_144),
                _sent_at(sns.get("Timestamp"), received),
            )
        )
    return out


def _sent_at(stamp: object, received: datetime | None) -> datetime:
    if isinstance(stamp, str) and len(stamp) <= 40:
        with contextlib.suppress(ValueError):
            at = datetime.fromisoformat(re.sub(r"\s+", "", stamp))
            return at if at.tzinfo else at.replace(tzinfo=UTC)
    if received is None:
        raise EventValidationError(f"SNS record with a bad Timestamp: {str(stamp)[:40]!r}")
    logger.warning("SNS record with a bad Timestamp: dated when received", timestamp=str(stamp)[:40])
    return received


def _money(text: str) -> float:
    return float(text.replace(",", ""))
