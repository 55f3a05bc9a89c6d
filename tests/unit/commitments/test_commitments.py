from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any, cast

import pytest

from costguard.aws.commitments import CommitmentReader
from costguard.commitments.messages import expiry_reminder, underused_alert
from costguard.commitments.rules import advice, reminder_due, underused
from costguard.core.records import Commitment
from testing.slack_text import as_read, dates_in, plain_times

TODAY = date(2026, 11, 21)
LEADS = (60, 30, 14, 7, 1)


def ri(days_left: int, instance_type: str = "p4d.24xlarge") -> Commitment:
    end = datetime(2026, 11, 21, 12, tzinfo=UTC) + timedelta(days=days_left)
    return Commitment(
        "reserved-instance", "ri-1", end=end, start=end - timedelta(days=365), instance_type=instance_type, count=8
    )


@pytest.mark.parametrize(
    ("days_left", "sent", "due"),
    [
        (90, set(), None),
        (60, set(), 60),
        (45, {60}, None),
        (30, {60}, 30),
        (29, {60}, 30),  # yesterday's run failed: caught up today
        (10, set(), 14),  # first seen late: only the most urgent reminder, not three at once
        (10, {14}, None),
        (1, {60, 30, 14, 7}, 1),
        (0, set(), 1),
        (-1, set(), None),
    ],
)
def test_reminder_due(days_left: int, sent: set[int], due: int | None) -> None:
    assert reminder_due(ri(days_left), TODAY, LEADS, sent) == due


def test_used_gpu_reservation_is_renewed_convertible() -> None:
    text = advice(ri(30), 92.0, 80.0)
    assert text.startswith("It was 92% used over the last 30 days. *Renew it*")
    assert "*convertible*" in text


def test_underused_reservation_is_not_renewed_as_is() -> None:
    text = advice(ri(30, "c6i.4xlarge"), 41.0, 80.0)
    assert "*Do not renew it as is*" in text
    assert "Compute Savings Plan" in text


def test_unknown_utilization_says_so() -> None:
    assert advice(ri(30), None, 80.0).startswith("Its 30-day utilization is unknown")


def test_savings_plan_advice_prefers_compute_plans() -> None:
    plan = Commitment(
        "savings-plan",
        "sp-1",
        end=datetime(2027, 1, 1, tzinfo=UTC),
        start=datetime(2026, 1, 1, tzinfo=UTC),
        offering_class="EC2Instance",
        hourly_commitment=12.5,
    )
    assert plan.label == "EC2Instance Savings Plan ($12.50/h)"
    assert "Compute Savings Plan over an EC2 Instance Savings Plan" in advice(plan, 95.0, 80.0)


def test_underused_needs_a_known_utilization_below_threshold() -> None:
    assert underused(79.9, 80.0)
    assert not underused(80.0, 80.0)
    assert not underused(None, 80.0)


class _Answers:
    """describe_reserved_instances and describe_savings_plans, answered from the documented shapes."""

    def __init__(self, reserved: list[dict[str, object]]) -> None:
        self.reserved = reserved

    def describe_reserved_instances(self, **_: object) -> dict[str, object]:
        return {"ReservedInstances": self.reserved}

    def describe_savings_plans(self, **_: object) -> dict[str, object]:
        return {"savingsPlans": []}


def _ri(**fields: object) -> dict[str, object]:
    start = datetime(2026, 1, 5, tzinfo=UTC)
    base: dict[str, object] = {
        "ReservedInstancesId": "ri-1",
        "InstanceType": "g5.12xlarge",
        "InstanceCount": 2,
        "Start": start,
        "End": start + timedelta(days=365),
        "State": "active",
    }
    return base | fields


@pytest.mark.parametrize(
    ("fields", "scope"),
    [
        ({"AvailabilityZone": "us-east-1e"}, "us-east-1e"),  # older answers carry no Scope: the zone says it
        ({"Scope": "Availability Zone", "AvailabilityZone": "us-east-1b"}, "us-east-1b"),
        ({"Scope": "Region"}, "Region"),
        ({}, "Region"),
    ],
)
def test_a_zonal_reservation_is_read_from_its_zone(fields: dict[str, object], scope: str) -> None:
    answers = _Answers([_ri(**fields)])
    reader = CommitmentReader({"us-east-1": answers}, cast(Any, answers), cast(Any, None))
    [commitment] = reader.commitments()
    assert commitment.scope == scope


def test_a_commitment_s_end_is_shown_in_each_reader_s_zone_its_fallback_in_utc() -> None:
    commitment = ri(30)
    now = datetime(2026, 11, 21, 12, tzinfo=UTC)
    reminder = expiry_reminder(commitment, 30, 92.0, threshold=80.0, recommendation=None, now=now)
    alert = underused_alert(commitment, 41.0, 80.0)
    for message, fallback in ((reminder, "Mon 21 Dec 12:00 UTC"), (alert, "Mon 21 Dec 2026 UTC")):
        assert dates_in(message.blocks) == [int(commitment.end.timestamp())]
        shown = [as_read(f["text"]) for b in message.blocks for f in b.get("fields", ())]
        assert f"*Ends*\n{fallback}" in shown
        assert not plain_times(message.slack_blocks())
