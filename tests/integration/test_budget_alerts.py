"""budget_alerts end to end: SNS events in AWS's wording, Cost Explorer (moto's queue, or Stubber with the
exact requests where moto has nothing), Slack payloads, and once-only posting."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from botocore.stub import Stubber

from costguard.runtime import Runtime
from testing.aws_gaps import cost_and_usage
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("budget_alerts")
NOW = datetime(2026, 11, 21, 9, 13, tzinfo=UTC)
EC2 = "Amazon Elastic Compute Cloud - Compute"


# What Cost Explorer says about November 1-21 and October 1-21, in the order costguard asks.
ANSWERS = [
    cost_and_usage({EC2: 6100.0, "Amazon S3": 300.0, "Amazon SageMaker": 1212.34}, "2026-11-01", "2026-11-21"),
    cost_and_usage({EC2: 3790.0, "Amazon S3": 310.0, "Amazon SageMaker": 900.0}, "2026-10-01", "2026-10-21"),
    cost_and_usage({"p4d.24xlarge": 3950.0, "g5.12xlarge": 900.0, "c6i.4xlarge": 1250.0}, "2026-11-01", "2026-11-21"),
    cost_and_usage({"p4d.24xlarge": 1970.0, "g5.12xlarge": 800.0, "c6i.4xlarge": 1020.0}, "2026-10-01", "2026-10-21"),
    cost_and_usage(
        {"Owner$alice": 2900.0, "Owner$bob@example.com": 1100.0, "Owner$": 3612.34}, "2026-11-01", "2026-11-21"
    ),
    cost_and_usage(
        {"Owner$alice": 1450.0, "Owner$bob@example.com": 1000.0, "Owner$": 2550.0}, "2026-10-01", "2026-10-21"
    ),
    cost_and_usage(
        {"USE1-Host:ml.g5.12xlarge": 1020.0, "USE1-Notebk:ml.g5.xlarge": 192.34}, "2026-11-01", "2026-11-21"
    ),
    cost_and_usage({"USE1-Host:ml.g5.12xlarge": 700.0, "USE1-Notebk:ml.g5.xlarge": 200.0}, "2026-10-01", "2026-10-21"),
]


def invoke(event: Any, runtime: Runtime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: NOW)
    return app.lambda_handler(event, lambda_context, runtime=runtime)  # type: ignore[no-any-return]


def test_75_percent_alert_names_the_top_movers_and_is_posted_once_when_sns_delivers_twice(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued = requests.post(
        "http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results", json={"results": ANSWERS}, timeout=5
    )
    assert queued.status_code == 201
    event = load_event("budget_alerts/sns-actual-75.json")

    first = invoke(event, runtime, lambda_context, monkeypatch)
    again = invoke(event, runtime, lambda_context, monkeypatch)

    assert [n["status"] for n in first["notifications"] + again["notifications"]] == ["posted", "duplicate"]
    [message] = slack.messages
    assert message.channel == "C0ALERTS"
    assert message.text == "Budget ml-monthly: 75% of this month's budget spent"
    body = json.dumps(message.blocks)
    assert f"*{EC2}* +$2,310" in body
    assert "*p4d.24xlarge* +$1,980" in body
    assert "owner *alice* +$1,450" in body
    # Who drives the SageMaker spend: its usage types, named for people.
    assert "SageMaker *ml.g5.12xlarge endpoints (USE1)* +$320" in body
    assert "*SageMaker usage*" in body
    assert "$7,612" in body, "month to date: the sum of the services"
    # moto has no GetCostForecast: the alert says so instead of hiding it.
    assert "Cost Explorer could not answer GetCostForecast: NotImplementedError" in body


def test_cost_explorer_is_asked_exactly_what_it_needs(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ce = runtime.client("ce", "us-east-1", quick=True)  # the breakdown is read with few, quick tries
    current = {"Start": "2026-11-01", "End": "2026-11-21"}
    previous = {"Start": "2026-10-01", "End": "2026-10-21"}
    by = [
        ({"Type": "DIMENSION", "Key": "SERVICE"}, None),
        ({"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}, {"Dimensions": {"Key": "SERVICE", "Values": [EC2]}}),
        ({"Type": "TAG", "Key": "Owner"}, None),
        (
            {"Type": "DIMENSION", "Key": "USAGE_TYPE"},
            {"Dimensions": {"Key": "SERVICE", "Values": ["Amazon SageMaker"]}},
        ),
    ]
    with Stubber(ce) as stub:
        answers = iter(ANSWERS)
        for group_by, scope in by:
            for period in (current, previous):
                expected: dict[str, Any] = {
                    "TimePeriod": period,
                    "Granularity": "MONTHLY",
                    "Metrics": ["UnblendedCost"],
                    "GroupBy": [group_by],
                }
                if scope:
                    expected["Filter"] = scope
                stub.add_response("get_cost_and_usage", next(answers), expected)
        stub.add_response(
            "get_cost_forecast",
            {"Total": {"Amount": "3407.66", "Unit": "USD"}, "ForecastResultsByTime": []},
            {
                "TimePeriod": {"Start": "2026-11-21", "End": "2026-12-01"},
                "Metric": "UNBLENDED_COST",
                "Granularity": "MONTHLY",
            },
        )
        invoke(load_event("budget_alerts/sns-forecasted-100.json"), runtime, lambda_context, monkeypatch)
        stub.assert_no_pending_responses()
    [message] = slack.messages
    assert message.text == "<!here> Budget ml-monthly: forecast to reach 112% of this month's budget"
    assert "*Forecast for the month*\\n$11,020" in json.dumps(message.blocks), "7,612.34 so far + 3,407.66 to come"


@pytest.mark.parametrize("fixture", ["sns-unknown.json", "sns-truncated.json"])
def test_unreadable_notifications_are_posted_raw_once(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, fixture: str
) -> None:
    event = load_event(f"budget_alerts/{fixture}")
    results = [invoke(event, runtime, lambda_context, monkeypatch)["notifications"][0]["status"] for _ in range(2)]
    assert results == ["posted-raw", "duplicate"]
    [message] = slack.messages
    raw = event["Records"][0]["Sns"]["Message"]
    assert raw.splitlines()[-1] in message.blocks[2]["text"]["text"]


def test_each_tier_is_posted_once_per_month(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for fixture in ("sns-actual-25.json", "sns-actual-75.json", "sns-actual-100.json", "sns-actual-75.json"):
        invoke(load_event(f"budget_alerts/{fixture}"), runtime, lambda_context, monkeypatch)
    assert [m.text for m in slack.messages] == [
        "Budget ml-monthly: 25% of this month's budget spent",
        "Budget ml-monthly: 75% of this month's budget spent",
        "<!here> Budget ml-monthly: 100% of this month's budget spent",
    ]


def test_slack_outage_fails_the_invocation_and_the_retry_posts(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = load_event("budget_alerts/sns-actual-75.json")
    slack.fail("chat.postMessage", 500, count=10)
    slack.fail("webhook", 500, count=10)
    with pytest.raises(Exception, match="could not post"):
        invoke(event, runtime, lambda_context, monkeypatch)
    assert slack.messages == []
    slack.faults.clear()  # Slack is back
    # Lambda's retry of the SNS event, a minute later: the first attempt's claim has run out, and as a 500
    # may come after Slack took the message, the channel's history is read before posting again.
    monkeypatch.setattr(runtime, "now", lambda: NOW + timedelta(minutes=1))
    result = app.lambda_handler(event, lambda_context, runtime=runtime)
    assert result["notifications"][0]["status"] == "posted"
    assert len(slack.messages) == 1
    assert "conversations.history" in slack.calls
