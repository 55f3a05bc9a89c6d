"""The daily commitment check: expiry reminders at lead times, and under-used commitment alerts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from costguard.aws.commitments import CommitmentReader
from costguard.commitments.messages import expiry_reminder, underused_alert
from costguard.commitments.rules import reminder_due, underused
from costguard.slack.blocks import Message
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims, post_once

# Reminder keys outlive the commitment's end, so no reminder is ever sent twice. The keys still say
# "reservation", as before the rename, so that an upgrade sends no reminder a second time.
REMINDER_TTL = timedelta(days=120)


@dataclass
class TrackingReport:
    commitments: int = 0
    reminders: list[str] = field(default_factory=list)
    underused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "commitments": self.commitments,
            "reminders": self.reminders,
            "underused": self.underused,
            "cost_explorer_errors": self.errors,
        }


@dataclass
class CommitmentTracker:
    reader: CommitmentReader
    claims: Claims
    notifier: SlackNotifier
    channel: str
    lead_days: Sequence[int]
    utilization_threshold: float

    def run(self, now: datetime) -> TrackingReport:
        today = now.date()
        report = TrackingReport()
        commitments = self.reader.commitments()
        report.commitments = len(commitments)
        usage = self.reader.utilization(today) if commitments else {}
        for commitment in sorted(commitments, key=lambda c: c.end):
            used = usage.get(commitment.arn or commitment.commitment_id)
            lead = reminder_due(commitment, today, self.lead_days, set())
            if lead is not None:
                message = expiry_reminder(
                    commitment,
                    lead,
                    used,
                    threshold=self.utilization_threshold,
                    recommendation=self.reader.recommendation(commitment),
                    now=now,
                )
                key = f"reservation:{commitment.commitment_id}:{lead}"
                if self._post(key, message, now, REMINDER_TTL):
                    report.reminders.append(f"{commitment.commitment_id}:{lead}d")
            if used is not None and underused(used, self.utilization_threshold):
                week = f"{today.isocalendar().year}-W{today.isocalendar().week:02d}"
                key = f"reservation-underused:{commitment.commitment_id}:{week}"
                alert = underused_alert(commitment, used, self.utilization_threshold)
                if self._post(key, alert, now, timedelta(days=14)):
                    report.underused.append(commitment.commitment_id)
        report.errors = list(self.reader.errors)
        return report

    def _post(self, key: str, message: Message, now: datetime, ttl: timedelta) -> bool:
        delivery = post_once(self.claims, self.notifier, self.channel, key=key, message=message, now=now, ttl=ttl)
        return delivery is not None
