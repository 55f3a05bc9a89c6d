"""The daily reservation check: expiry reminders at lead times, and under-used commitment alerts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from costguard.commitments import CommitmentReader
from costguard.ledger import Ledger
from costguard.notices import post_once
from costguard.reservations import Commitment, advice, reminder_due, underused
from costguard.slack.blocks import Message, context, escape, fields_section, header, section
from costguard.slack.notifier import SlackNotifier

# Reminder keys outlive the commitment's end, so no reminder is ever sent twice.
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
class ReservationTracker:
    reader: CommitmentReader
    ledger: Ledger
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
        delivery = post_once(self.ledger, self.notifier, self.channel, key=key, message=message, now=now, ttl=ttl)
        return delivery is not None


def _what(commitment: Commitment) -> list[str]:
    where = commitment.region or "all regions"
    if commitment.kind == "reserved-instance":
        return [
            f"*What*\n{escape(commitment.label)} in {escape(where)}",
            f"*Scope*\n{escape(commitment.scope)}",
            f"*Offering class*\n{escape(commitment.offering_class or 'unknown')}",
            f"*Payment*\n{escape(commitment.payment_option or 'unknown')}",
        ]
    applies = (
        f"{commitment.instance_type} in {where}" if commitment.instance_type else "any instance family, any region"
    )
    return [
        f"*What*\n{escape(commitment.label)}",
        f"*Applies to*\n{escape(applies)}",
        f"*Plan type*\n{escape(commitment.offering_class)}",
        f"*Payment*\n{escape(commitment.payment_option or 'unknown')}",
    ]


def expiry_reminder(
    commitment: Commitment,
    lead: int,
    used: float | None,
    *,
    threshold: float,
    recommendation: str | None,
    now: datetime,
) -> Message:
    days = commitment.days_left(now.date())
    when = "tomorrow" if days == 1 else ("today" if days <= 0 else f"in {days} days")
    title = f"{commitment.label} expire{'s' if commitment.kind == 'savings-plan' else ''} {when}"
    usage = f"{used:.0f}%" if used is not None else "unknown"
    blocks = [
        header(title),
        fields_section(
            [*_what(commitment), f"*Ends*\n{commitment.end:%Y-%m-%d %H:%M} UTC", f"*Used, last 30 days*\n{usage}"]
        ),
        section(f"*What to do*\n{advice(commitment, used, threshold)}"),
    ]
    if recommendation:
        blocks.append(section(escape(recommendation)))
    blocks.append(context(f"{lead}-day reminder · {escape(commitment.commitment_id)}"))
    return Message(f"{title}: {usage} used over the last 30 days", tuple(blocks))


def underused_alert(commitment: Commitment, used: float, threshold: float) -> Message:
    title = f"{commitment.label} only {used:.0f}% used"
    verb = "were" if commitment.kind == "reserved-instance" and commitment.count != 1 else "was"
    fact = f"Over the last 30 days {escape(commitment.label)} {verb} used {used:.0f}% (alert below {threshold:g}%)"
    if commitment.kind == "reserved-instance":
        what = (
            "you pay for the rest. Move matching workloads onto it, exchange it if it is convertible, or sell "
            "it on the Reserved Instance Marketplace if it is standard."
        )
    else:
        what = "the unused commitment is paid for anyway. Size the next plan to the usage you actually have."
    return Message(
        title,
        (
            header(title),
            section(f"{fact}: {what}"),
            fields_section([*_what(commitment), f"*Ends*\n{commitment.end:%Y-%m-%d}"]),
            context(escape(commitment.commitment_id)),
        ),
    )
