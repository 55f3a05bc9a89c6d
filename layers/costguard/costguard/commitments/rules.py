"""Reserved Instances and Savings Plans: which reminder is due, and what to advise. Pure: no I/O.

Reminders go out at lead times (default 60, 30, 14, 7 and 1 days), each once per commitment and lead
time. Only the most urgent lead time due is sent: a run that failed is caught up the next day, and a
commitment first seen 10 days before its end gets the 14-day reminder, not three at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from costguard.core.records import Commitment


def reminder_due(commitment: Commitment, today: date, lead_days: Iterable[int], already_sent: set[int]) -> int | None:
    """The lead time whose reminder should go out today, or None."""
    left = commitment.days_left(today)
    if left < 0:
        return None
    due = [lead for lead in sorted(set(lead_days)) if left <= lead]
    if not due or due[0] in already_sent:
        return None
    return due[0]


def advice(commitment: Commitment, utilization: float | None, threshold: float) -> str:
    """What a head of ML infrastructure should do about an expiring commitment, in a sentence or two."""
    if utilization is None:
        used = "Its 30-day utilization is unknown (Cost Explorer did not say)."
        verdict = "Check its use before renewing."
    elif utilization >= threshold:
        used = f"It was {utilization:.0f}% used over the last 30 days."
        verdict = "*Renew it*: the capacity is in use."
    else:
        used = f"It was only {utilization:.0f}% used over the last 30 days."
        verdict = "*Do not renew it as is*: buy less (or smaller), or let it lapse."
    if commitment.kind == "reserved-instance":
        if commitment.gpu:
            playbook = (
                "For GPU capacity the usual choice is 1 year, no upfront, *convertible*: GPU generations change "
                "fast and a convertible reservation can be exchanged for the next one. A Compute Savings Plan "
                "covers any family and region, if the team moves between them."
            )
        else:
            playbook = (
                "Prefer a Compute Savings Plan (1 year, no upfront): it follows the workload across families "
                "and regions."
            )
    else:
        playbook = (
            "Prefer a Compute Savings Plan over an EC2 Instance Savings Plan: it applies across instance families "
            "and regions. 1 year, no upfront keeps the commitment short."
        )
    return f"{used} {verdict} {playbook}"


def underused(utilization: float | None, threshold: float) -> bool:
    return utilization is not None and utilization < threshold
