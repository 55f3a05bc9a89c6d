"""commitment_tracker end to end: moto has no Reserved Instances, Savings Plans or CE reports, so their
clients are botocore Stubbers with the exact expected requests; the ledger and Slack are real."""

from __future__ import annotations

import json
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber

from costguard.runtime import Runtime
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import REGION

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("commitment_tracker")
NOW = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
RI_END = NOW + timedelta(days=30, hours=3)
SP_ARN = "arn:aws:savingsplans::123456789012:savingsplan/3f9e8d7c-6b5a-4e3d-9c2b-1a0f9e8d7c6b"
PERIOD = {"Start": "2026-10-22", "End": "2026-11-21"}


def stub_world(stack: ExitStack, runtime: Runtime, *, ri_used: str = "92.5", ce_down: bool = False) -> None:
    ec2 = stack.enter_context(Stubber(runtime.client("ec2", REGION)))
    ec2.add_response(
        "describe_reserved_instances",
        {
            "ReservedInstances": [
                {
                    "ReservedInstancesId": "9d5cb137-5d65-4479-b4ac-8c337example",
                    "InstanceType": "p4d.24xlarge",
                    "InstanceCount": 8,
                    "Start": RI_END - timedelta(days=365),
                    "End": RI_END,
                    "State": "active",
                    "Scope": "Region",
                    "OfferingClass": "convertible",
                    "OfferingType": "No Upfront",
                    "ProductDescription": "Linux/UNIX",
                    "Duration": 31536000,
                }
            ]
        },
        {"Filters": [{"Name": "state", "Values": ["active"]}]},
    )
    sp = stack.enter_context(Stubber(runtime.client("savingsplans", "us-east-1")))
    sp.add_response(
        "describe_savings_plans",
        {
            "savingsPlans": [
                {
                    "savingsPlanId": "3f9e8d7c-6b5a-4e3d-9c2b-1a0f9e8d7c6b",
                    "savingsPlanArn": SP_ARN,
                    "start": "2026-03-01T00:00:00.000Z",
                    "end": "2027-03-01T00:00:00.000Z",
                    "state": "active",
                    "savingsPlanType": "Compute",
                    "paymentOption": "No Upfront",
                    "commitment": "12.5",
                }
            ]
        },
        {"states": ["active"]},
    )
    ce = stack.enter_context(Stubber(runtime.client("ce", "us-east-1")))
    if ce_down:
        ce.add_client_error(
            "get_reservation_utilization",
            "AccessDeniedException",
            expected_params={"TimePeriod": PERIOD, "GroupBy": [{"Type": "DIMENSION", "Key": "SUBSCRIPTION_ID"}]},
        )
        ce.add_client_error(
            "get_savings_plans_utilization_details", "AccessDeniedException", expected_params={"TimePeriod": PERIOD}
        )
    else:
        ce.add_response(
            "get_reservation_utilization",
            {
                "UtilizationsByTime": [
                    {
                        "TimePeriod": PERIOD,
                        "Groups": [
                            {
                                "Key": "SUBSCRIPTION_ID",
                                "Value": "1234567890",
                                "Attributes": {
                                    "leaseId": "9d5cb137-5d65-4479-b4ac-8c337example",
                                    "instanceType": "p4d.24xlarge",
                                },
                                "Utilization": {"UtilizationPercentage": ri_used},
                            }
                        ],
                    }
                ],
                "Total": {},
            },
            {"TimePeriod": PERIOD, "GroupBy": [{"Type": "DIMENSION", "Key": "SUBSCRIPTION_ID"}]},
        )
        ce.add_response(
            "get_savings_plans_utilization_details",
            {
                "SavingsPlansUtilizationDetails": [
                    {"SavingsPlanArn": SP_ARN, "Utilization": {"UtilizationPercentage": "61.0"}}
                ],
                "TimePeriod": PERIOD,
            },
            {"TimePeriod": PERIOD},
        )
    ce.add_response(
        "get_reservation_purchase_recommendation",
        {
            "Recommendations": [
                {
                    "RecommendationDetails": [
                        {
                            "InstanceDetails": {"EC2InstanceDetails": {"InstanceType": "p4d.24xlarge"}},
                            "RecommendedNumberOfInstancesToPurchase": "8",
                            "EstimatedMonthlySavingsAmount": "41210.5",
                        }
                    ],
                    "RecommendationSummary": {"TotalEstimatedMonthlySavingsAmount": "41210.5"},
                }
            ]
        },
        {
            "Service": "Amazon Elastic Compute Cloud - Compute",
            "LookbackPeriodInDays": "THIRTY_DAYS",
            "TermInYears": "ONE_YEAR",
            "PaymentOption": "NO_UPFRONT",
        },
    )


def invoke(
    runtime: Runtime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, at: datetime = NOW, **world: Any
) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: at)
    with ExitStack() as stack:
        stub_world(stack, runtime, **world)
        return app.lambda_handler(load_event("commitment_tracker/daily.json"), lambda_context, runtime=runtime)  # type: ignore[no-any-return]


def test_thirty_day_reminder_says_what_expires_its_use_and_what_to_do(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(runtime, lambda_context, monkeypatch)

    assert result["reminders"] == ["9d5cb137-5d65-4479-b4ac-8c337example:30d"]
    reminder, underused = slack.messages
    assert reminder.text == "8 × p4d.24xlarge Reserved Instances expire in 30 days: 92% used over the last 30 days"
    body = json.dumps(reminder.blocks, ensure_ascii=False)
    for expected in (
        "convertible",
        "No Upfront",
        "Region",
        "*Renew it*",
        "8 × p4d.24xlarge (1 year, no upfront)",
        "$41,210 a month",
        "30-day reminder",
    ):
        assert expected in body, expected
    assert underused.text == "Compute Savings Plan ($12.50/h) only 61% used"


def test_reminders_and_underuse_alerts_are_not_repeated(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke(runtime, lambda_context, monkeypatch)
    again = invoke(runtime, lambda_context, monkeypatch)  # a retry the same day
    next_day = invoke(runtime, lambda_context, monkeypatch, at=NOW + timedelta(days=1))
    assert (again["reminders"], again["underused"]) == ([], [])
    assert (next_day["reminders"], next_day["underused"]) == ([], []), "same ISO week, 30-day reminder already sent"
    assert len(slack.messages) == 2


def test_a_missed_day_is_caught_up(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(runtime, lambda_context, monkeypatch, at=NOW + timedelta(days=1))  # the 30-day run never happened
    assert result["reminders"] == ["9d5cb137-5d65-4479-b4ac-8c337example:30d"]
    assert "expire in 29 days" in slack.messages[0].text


def test_cost_explorer_failure_still_reminds_and_says_use_is_unknown(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(runtime, lambda_context, monkeypatch, ce_down=True)
    assert result["cost_explorer_errors"] == [
        "GetReservationUtilization: AccessDeniedException",
        "GetSavingsPlansUtilizationDetails: AccessDeniedException",
    ]
    [reminder] = slack.messages
    assert reminder.text.endswith("unknown used over the last 30 days")
    assert "utilization is unknown" in json.dumps(reminder.blocks)


def test_wrong_event_is_refused(runtime: Runtime, lambda_context: Any) -> None:
    with pytest.raises(Exception, match="expects"):
        app.lambda_handler({"costguard": "sweep"}, lambda_context, runtime=runtime)


def test_savings_plan_reminder_carries_cost_explorers_compute_plan_recommendation(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: NOW)
    end = NOW + timedelta(days=6, hours=20)
    with ExitStack() as stack:
        stack.enter_context(Stubber(runtime.client("ec2", REGION))).add_response(
            "describe_reserved_instances",
            {"ReservedInstances": []},
            {"Filters": [{"Name": "state", "Values": ["active"]}]},
        )
        stack.enter_context(Stubber(runtime.client("savingsplans", "us-east-1"))).add_response(
            "describe_savings_plans",
            {
                "savingsPlans": [
                    {
                        "savingsPlanId": "sp-ending",
                        "savingsPlanArn": SP_ARN,
                        "start": "2025-11-28T04:00:00.000Z",
                        "end": end.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                        "state": "active",
                        "savingsPlanType": "EC2Instance",
                        "ec2InstanceFamily": "g5",
                        "region": "us-east-1",
                        "paymentOption": "All Upfront",
                        "commitment": "4.2",
                    }
                ]
            },
            {"states": ["active"]},
        )
        ce = stack.enter_context(Stubber(runtime.client("ce", "us-east-1")))
        ce.add_response(
            "get_reservation_utilization",
            {"UtilizationsByTime": [], "Total": {}},
            {"TimePeriod": PERIOD, "GroupBy": [{"Type": "DIMENSION", "Key": "SUBSCRIPTION_ID"}]},
        )
        ce.add_response(
            "get_savings_plans_utilization_details",
            {
                "SavingsPlansUtilizationDetails": [
                    {"SavingsPlanArn": SP_ARN, "Utilization": {"UtilizationPercentage": "97.2"}}
                ],
                "TimePeriod": PERIOD,
            },
            {"TimePeriod": PERIOD},
        )
        ce.add_response(
            "get_savings_plans_purchase_recommendation",
            {
                "SavingsPlansPurchaseRecommendation": {
                    "SavingsPlansPurchaseRecommendationSummary": {
                        "HourlyCommitmentToPurchase": "5.1",
                        "EstimatedMonthlySavingsAmount": "1540.25",
                    }
                }
            },
            {
                "SavingsPlansType": "COMPUTE_SP",
                "TermInYears": "ONE_YEAR",
                "PaymentOption": "NO_UPFRONT",
                "LookbackPeriodInDays": "THIRTY_DAYS",
            },
        )
        result = app.lambda_handler(load_event("commitment_tracker/daily.json"), lambda_context, runtime=runtime)
        ce.assert_no_pending_responses()
    assert result["reminders"] == ["sp-ending:7d"]
    [reminder] = slack.messages
    assert reminder.text == "EC2Instance Savings Plan ($4.20/h) expires in 7 days: 97% used over the last 30 days"
    body = json.dumps(reminder.blocks)
    assert "g5 in us-east-1" in body
    assert "Compute Savings Plan over an EC2 Instance Savings Plan" in body
    assert "Compute Savings Plan of $5.10/h (1 year, no upfront), saving about $1,540 a month" in body
