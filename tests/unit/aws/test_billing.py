"""The bill's reads for the money model: the exact requests, and a denied read priced on demand."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from costguard.aws import billing
from costguard.aws.billing import BillingReader
from costguard.aws.commitments import reserved_zone
from costguard.core.bill import Bill
from costguard.core.records import Instance

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _no_memory() -> Iterator[None]:
    billing.CE_MEMORY.clear()
    yield
    billing.CE_MEMORY.clear()


def clients() -> tuple[Any, Any, Any]:
    def client(name: str) -> Any:
        return boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x").client(
            name
        )  # type: ignore[call-overload]

    return client("ec2"), client("savingsplans"), client("ce")


def machine(n: int, lifecycle: str = "") -> Instance:
    launched = NOW - timedelta(days=1)
    return Instance(
        f"i-{n:08x}", "us-east-1", "p4d.24xlarge", "running", launched, zone="us-east-1a", lifecycle=lifecycle
    )


def test_a_region_is_read_with_one_call_per_question_and_priced_from_it() -> None:
    ec2, sp, ce = clients()
    with Stubber(ec2) as e, Stubber(sp) as s, Stubber(ce) as c:
        e.add_response(
            "describe_reserved_instances",
            {
                "ReservedInstances": [
                    {
                        "ReservedInstancesId": "ri-1",
                        "InstanceType": "p4d.24xlarge",
                        "InstanceCount": 1,
                        "Start": NOW - timedelta(days=10),
                        "End": NOW + timedelta(days=355),
                        "ProductDescription": "Linux/UNIX (Amazon VPC)",
                        "InstanceTenancy": "default",
                        "Scope": "Region",
                    }
                ]
            },
            {"Filters": [{"Name": "state", "Values": ["active"]}]},
        )
        e.add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    {
                        "CapacityReservationId": "cr-block",
                        "InstanceType": "p5.48xlarge",
                        "AvailabilityZone": "us-east-1a",
                        "TotalInstanceCount": 2,
                        "AvailableInstanceCount": 0,
                        "State": "active",
                        "ReservationType": "capacity-block",
                        "EndDate": NOW + timedelta(days=2),
                    }
                ]
            },
            {"Filters": [{"Name": "state", "Values": ["active", "scheduled", "payment-pending"]}], "MaxResults": 1000},
        )
        s.add_response(
            "describe_savings_plans",
            {
                "savingsPlans": [
                    {
                        "savingsPlanId": "sp-1",
                        "savingsPlanArn": "arn:aws:savingsplans::1:savingsplan/sp-1",
                        "savingsPlanType": "Compute",
                        "start": (NOW - timedelta(days=30)).isoformat(),
                        "end": (NOW + timedelta(days=335)).isoformat(),
                        "commitment": "40.0",
                    }
                ]
            },
            {"states": ["active"]},
        )
        period = {"Start": "2026-11-22", "End": "2026-11-24"}
        c.add_response(
            "get_savings_plans_utilization_details",
            {
                "SavingsPlansUtilizationDetails": [
                    {
                        "SavingsPlanArn": "arn:aws:savingsplans::1:savingsplan/sp-1",
                        "Attributes": {},
                        "Utilization": {
                            "TotalCommitment": "1920.0",
                            "UsedCommitment": "1920.0",
                            "UnusedCommitment": "0.0",
                            "UtilizationPercentage": "100",
                        },
                        "Savings": {"NetSavings": "746.67", "OnDemandCostEquivalent": "2666.67"},
                    }
                ],
                "TimePeriod": period,
            },
            {"TimePeriod": period},
        )
        c.add_response(
            "get_savings_plans_coverage",
            {"SavingsPlansCoverages": [{"Coverage": {"OnDemandCost": "480"}}, {"Coverage": {"OnDemandCost": "480"}}]},
            {"TimePeriod": period, "Granularity": "DAILY"},
        )
        e.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    {
                        "InstanceType": "p4d.24xlarge",
                        "AvailabilityZone": "us-east-1a",
                        "SpotPrice": "9.1",
                        "Timestamp": NOW - timedelta(hours=2),
                    },
                    {
                        "InstanceType": "p4d.24xlarge",
                        "AvailabilityZone": "us-east-1a",
                        "SpotPrice": "9.5",
                        "Timestamp": NOW - timedelta(minutes=5),
                    },
                ]
            },
            {
                "InstanceTypes": ["p4d.24xlarge"],
                "ProductDescriptions": ["Linux/UNIX"],
                "StartTime": ANY,
                "MaxResults": 1000,
            },
        )
        fleet = [machine(1), machine(2), machine(3, lifecycle="spot")]
        read = BillingReader(ec2, sp, ce, "us-east-1").read(fleet, NOW)
    assert read.unread == ()
    assert [(r.reservation_id, r.zone, r.platform, r.size_flexible) for r in read.reserved] == [
        ("ri-1", "", "Linux/UNIX", True)
    ]
    assert read.holds[0].block
    assert read.holds[0].end == NOW + timedelta(days=2)
    assert [(p.kind, p.used_percent, p.commitment_usd_per_hour) for p in read.plans] == [("Compute", 100.0, 40.0)]
    assert read.plans[0].rate == pytest.approx(0.72, abs=1e-4)  # $1,920 of commitment paid for $2,666.67 on demand
    assert read.plan_spill_usd_per_hour == 20.0  # $960 billed on demand over 48 hours
    assert read.spot_prices == {("p4d.24xlarge", "us-east-1a"): 9.5}
    bill = Bill(read, NOW)
    assert bill.price(fleet[0], 21.96).usd_per_hour == 20.0  # one RI for two: on demand, the plan's spill first
    assert bill.price(fleet[2], 21.96).usd_per_hour == 9.5
    # Priced on what runs now: $40/h at 72 % pays for $55.56/h on demand, more than the p4d the RI leaves.
    now = Bill(read, NOW, list_price=lambda _: 21.96).price(fleet[0], 21.96)
    assert (now.usd_per_hour, now.why) == (
        0.0,
        "covered: the Savings Plan's $40.00/h commitment is not used up by what runs now",
    )


def test_a_denied_read_is_named_and_the_machine_priced_on_demand() -> None:
    ec2, sp, ce = clients()
    with Stubber(ec2) as e, Stubber(sp) as s:
        e.add_client_error("describe_reserved_instances", "UnauthorizedOperation", http_status_code=403)
        e.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", http_status_code=403)
        s.add_client_error("describe_savings_plans", "AccessDeniedException", http_status_code=400)
        read = BillingReader(ec2, sp, ce, "us-east-1").read([machine(1)], NOW)
    assert read.unread == ("Reserved Instances", "capacity reservations", "Savings Plans")
    price = Bill(read, NOW).price(machine(1), 21.96)
    assert price.usd_per_hour == 21.96
    assert "Reserved Instances not read" in price.caveat


def test_cost_explorer_is_asked_once_a_day_per_container() -> None:
    ec2, sp, ce = clients()
    plan = {
        "savingsPlanId": "sp-1",
        "savingsPlanArn": "arn:sp-1",
        "savingsPlanType": "EC2Instance",
        "ec2InstanceFamily": "p4d",
        "region": "us-east-1",
        "end": (NOW + timedelta(days=300)).isoformat(),
    }
    with Stubber(ec2) as e, Stubber(sp) as s, Stubber(ce) as c:
        for _ in range(2):
            e.add_response("describe_reserved_instances", {"ReservedInstances": []})
            e.add_response("describe_capacity_reservations", {"CapacityReservations": []})
            s.add_response("describe_savings_plans", {"savingsPlans": [plan]})
        c.add_response(
            "get_savings_plans_utilization_details",
            {
                "SavingsPlansUtilizationDetails": [
                    {"SavingsPlanArn": "arn:sp-1", "Utilization": {"UtilizationPercentage": "60"}}
                ],
                "TimePeriod": {"Start": "2026-11-22", "End": "2026-11-24"},
            },
        )
        c.add_response("get_savings_plans_coverage", {"SavingsPlansCoverages": []})
        reader = BillingReader(ec2, sp, ce, "us-east-1")
        first = reader.read([machine(1)], NOW)
        second = reader.read([machine(1)], NOW + timedelta(minutes=15))
        c.assert_no_pending_responses()
    assert first.plans == second.plans
    assert Bill(second, NOW).price(machine(1), 21.96).usd_per_hour == 0


def test_a_denied_cost_explorer_is_said_and_not_asked_again_that_day() -> None:
    ec2, sp, ce = clients()
    plan = {"savingsPlanId": "sp-1", "savingsPlanArn": "arn:sp-1", "savingsPlanType": "Compute", "end": "2027-06-01"}
    with Stubber(ec2) as e, Stubber(sp) as s, Stubber(ce) as c:
        for _ in range(2):
            e.add_response("describe_reserved_instances", {"ReservedInstances": []})
            e.add_response("describe_capacity_reservations", {"CapacityReservations": []})
            s.add_response("describe_savings_plans", {"savingsPlans": [plan]})
        c.add_client_error("get_savings_plans_utilization_details", "AccessDeniedException", http_status_code=400)
        reader = BillingReader(ec2, sp, ce, "us-east-1")
        first = reader.read([machine(1)], NOW)
        second = reader.read([machine(1)], NOW + timedelta(minutes=15))
        c.assert_no_pending_responses()
    for read in (first, second):
        assert read.unread == ("Savings Plans' use",)
        price = Bill(read, NOW).price(machine(1), 21.96)
        assert price.usd_per_hour == 21.96
        assert price.caveat == "Savings Plans not read; priced on demand"


@pytest.mark.parametrize(
    ("utilization", "savings"),
    [
        ({"UtilizationPercentage": "60"}, None),  # no amounts: the rate is not known
        ({"UtilizationPercentage": "0", "UsedCommitment": "0"}, {"OnDemandCostEquivalent": "0"}),  # unused
        ({"UtilizationPercentage": "60", "UsedCommitment": "576"}, {"NetSavings": "0"}),  # its worth not given
    ],
)
def test_a_plan_whose_rate_cannot_be_had_is_read_without_one(
    utilization: dict[str, str], savings: dict[str, str] | None
) -> None:
    ec2, sp, ce = clients()
    plan = {"savingsPlanId": "sp-1", "savingsPlanArn": "arn:sp-1", "savingsPlanType": "Compute", "end": "2027-06-01"}
    detail: dict[str, Any] = {"SavingsPlanArn": "arn:sp-1", "Utilization": utilization}
    if savings is not None:
        detail["Savings"] = savings
    with Stubber(ec2) as e, Stubber(sp) as s, Stubber(ce) as c:
        e.add_response("describe_reserved_instances", {"ReservedInstances": []})
        e.add_response("describe_capacity_reservations", {"CapacityReservations": []})
        s.add_response("describe_savings_plans", {"savingsPlans": [plan]})
        c.add_response(
            "get_savings_plans_utilization_details",
            {"SavingsPlansUtilizationDetails": [detail], "TimePeriod": {"Start": "2026-11-22", "End": "2026-11-24"}},
        )
        c.add_response("get_savings_plans_coverage", {"SavingsPlansCoverages": []})
        read = BillingReader(ec2, sp, ce, "us-east-1").read([machine(1)], NOW)
    assert [(p.commitment_usd_per_hour, p.rate) for p in read.plans] == [(None, None)]


def test_a_reserved_instances_zone_is_read_the_same_by_the_bill_and_the_commitment_tracker() -> None:
    """One reading of DescribeReservedInstances' scope for both (aws/commitments.reserved_zone): a zonal one names
    its zone, a regional one floats (""), an older answer without Scope is zonal only when it names a zone."""
    assert reserved_zone({"Scope": "Availability Zone", "AvailabilityZone": "us-east-1b"}) == "us-east-1b"
    assert reserved_zone({"Scope": "Region"}) == ""
    assert reserved_zone({"AvailabilityZone": "us-east-1a"}) == "us-east-1a"
    assert reserved_zone({}) == ""
