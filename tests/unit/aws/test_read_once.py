"""The weekly digest lists its commitments once per invocation and region: the bill it prices idle hours on and
the section of commitments about to expire share the answers (aws/commitments.py, ReadOnce)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from costguard.aws.billing import BillingReader
from costguard.aws.commitments import CommitmentReader, ReadOnce
from costguard.core.money import UNREAD_PLANS, UNREAD_RIS

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)
ACTIVE = {"Filters": [{"Name": "state", "Values": ["active"]}]}
RI = {
    "ReservedInstancesId": "ri-1",
    "InstanceType": "p4d.24xlarge",
    "InstanceCount": 2,
    "Start": NOW - timedelta(days=10),
    "End": NOW + timedelta(days=20),
    "ProductDescription": "Linux/UNIX (Amazon VPC)",
    "InstanceTenancy": "default",
    "Scope": "Region",
}
PLAN = {
    "savingsPlanId": "sp-1",
    "savingsPlanArn": "arn:aws:savingsplans::1:savingsplan/sp-1",
    "savingsPlanType": "Compute",
    "start": "2026-01-01T00:00:00Z",
    "end": "2026-12-10T00:00:00Z",
    "commitment": "12.5",
}


def client(name: str) -> Any:
    session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return session.client(name)  # type: ignore[call-overload]


def test_the_bill_and_the_commitments_section_share_one_listing_of_each() -> None:
    ec2, sp, ce = client("ec2"), client("savingsplans"), client("ce")
    once = ReadOnce()
    # One answer each: a second DescribeReservedInstances or DescribeSavingsPlans would find none and fail.
    with Stubber(ec2) as e, Stubber(sp) as s:
        e.add_response("describe_reserved_instances", {"ReservedInstances": [RI]}, ACTIVE)
        e.add_response("describe_capacity_reservations", {"CapacityReservations": []})
        s.add_response("describe_savings_plans", {"savingsPlans": [PLAN]}, {"states": ["active"]})
        billing = BillingReader(ec2, sp, None, "us-east-1").read([], NOW, once=once)
        listed = CommitmentReader({"us-east-1": ec2}, sp, ce, once=once).commitments()
        e.assert_no_pending_responses()
        s.assert_no_pending_responses()
    assert [(r.reservation_id, r.count) for r in billing.reserved] == [("ri-1", 2)]
    assert [p.plan_id for p in billing.plans] == ["sp-1"]
    assert [(c.kind, c.commitment_id, c.count) for c in listed] == [
        ("reserved-instance", "ri-1", 2),
        ("savings-plan", "sp-1", 0),
    ]


def test_a_refused_listing_is_asked_once_and_each_reader_says_so() -> None:
    ec2, sp, ce = client("ec2"), client("savingsplans"), client("ce")
    once = ReadOnce()
    with Stubber(ec2) as e, Stubber(sp) as s:
        e.add_client_error("describe_reserved_instances", "UnauthorizedOperation", http_status_code=403)
        e.add_response("describe_capacity_reservations", {"CapacityReservations": []})
        s.add_client_error("describe_savings_plans", "AccessDeniedException", http_status_code=400)
        reader = BillingReader(ec2, sp, None, "us-east-1")
        billing = reader.read([], NOW, once=once)
        with pytest.raises(ClientError) as refused:
            CommitmentReader({"us-east-1": ec2}, sp, ce, once=once).commitments()
    assert {UNREAD_RIS, UNREAD_PLANS} <= set(billing.unread)
    assert reader.errors == [
        "DescribeReservedInstances: UnauthorizedOperation",
        "DescribeSavingsPlans: AccessDeniedException",
    ]
    assert refused.value.operation_name == "DescribeReservedInstances"


def test_without_a_shared_listing_each_reader_asks_for_itself() -> None:
    ec2, sp, ce = client("ec2"), client("savingsplans"), client("ce")
    with Stubber(ec2) as e, Stubber(sp) as s:
        for _ in range(2):
            e.add_response("describe_reserved_instances", {"ReservedInstances": [RI]}, ACTIVE)
            s.add_response("describe_savings_plans", {"savingsPlans": [PLAN]}, {"states": ["active"]})
        reader = CommitmentReader({"us-east-1": ec2}, sp, ce)
        assert len(reader.commitments()) == len(reader.commitments()) == 2
        e.assert_no_pending_responses()
        s.assert_no_pending_responses()
