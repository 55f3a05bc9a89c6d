"""The commitment messages: an expiry reminder that says what to do, and an under-use alert. Pure."""

from __future__ import annotations

from datetime import datetime

from costguard.commitments.rules import advice
from costguard.core.records import Commitment
from costguard.slack.blocks import DAY, Message, context, fields_section, header, section, when


def _what(commitment: Commitment) -> list[str]:
    where = commitment.region or "all regions"
    if commitment.kind == "reserved-instance":
        return [
            f"*What*\n{commitment.label} in {where}",
            f"*Scope*\n{commitment.scope}",
            f"*Offering class*\n{commitment.offering_class or 'unknown'}",
            f"*Payment*\n{commitment.payment_option or 'unknown'}",
        ]
    applies = (
        f"{commitment.instance_type} in {where}" if commitment.instance_type else "any instance family, any region"
    )
    return [
        f"*What*\n{commitment.label}",
        f"*Applies to*\n{applies}",
        f"*Plan type*\n{commitment.offering_class}",
        f"*Payment*\n{commitment.payment_option or 'unknown'}",
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
    due = "tomorrow" if days == 1 else ("today" if days <= 0 else f"in {days} days")
    title = f"{commitment.label} expire{'s' if commitment.kind == 'savings-plan' else ''} {due}"
    usage = f"{used:.0f}%" if used is not None else "unknown"
    blocks = [
        header(title),
        fields_section([*_what(commitment), "*Ends*\n" + when(commitment.end), f"*Used, last 30 days*\n{usage}"]),
        section(f"*What to do*\n{advice(commitment, used, threshold)}"),
    ]
    if recommendation:
        blocks.append(section(recommendation))
    blocks.append(context(f"{lead}-day reminder · {commitment.commitment_id}"))
    return Message(f"{title}: {usage} used over the last 30 days", tuple(blocks))


def underused_alert(commitment: Commitment, used: float, threshold: float) -> Message:
    title = f"{commitment.label} only {used:.0f}% used"
    verb = "were" if commitment.kind == "reserved-instance" and commitment.count != 1 else "was"
    fact = f"Over the last 30 days {commitment.label} {verb} used {used:.0f}% (alert below {threshold:g}%)"
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
            fields_section([*_what(commitment), "*Ends*\n" + when(commitment.end, style=DAY)]),
            context(commitment.commitment_id),
        ),
    )
