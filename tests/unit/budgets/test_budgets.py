"""The AWS Budgets parser over messages in AWS's own wording, and the alert it becomes."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from costguard.aws.costexplorer import periods
from costguard.budgets.alarms import AlarmChange, alarm_message
from costguard.budgets.messages import budget_alert_message, drivers_line, raw_budget_message
from costguard.budgets.notifications import BudgetParseError, Severity, parse_budget_message, parse_sns_event
from costguard.core.errors import EventValidationError
from costguard.core.records import Mover, SpendPicture
from testing.handlers import load_event
from testing.slack_text import as_read, dates_in, plain_times


def message_of(fixture: str) -> str:
    return str(load_event(f"budget_alerts/{fixture}")["Records"][0]["Sns"]["Message"])


@pytest.mark.parametrize(
    ("fixture", "alert_type", "threshold", "amount", "tier", "severity"),
    [
        ("sns-actual-25.json", "ACTUAL", 2500.0, 2612.40, 25, Severity.INFO),
        ("sns-actual-75.json", "ACTUAL", 7500.0, 7612.34, 75, Severity.WARNING),
        ("sns-actual-100.json", "ACTUAL", 10000.0, 10148.90, 100, Severity.CRITICAL),
        ("sns-forecasted-100.json", "FORECASTED", 10000.0, 11240.0, 100, Severity.CRITICAL),
    ],
)
def test_real_notifications_are_read(
    fixture: str, alert_type: str, threshold: float, amount: float, tier: int, severity: Severity
) -> None:
    alert = parse_budget_message(message_of(fixture))
    assert (alert.budget_name, alert.budget_type, alert.budgeted, alert.account) == (
        "ml-monthly",
        "Cost",
        10000.0,
        "123456789012",
    )
    assert (alert.alert_type, alert.threshold, alert.amount) == (alert_type, threshold, amount)
    assert (alert.tier, alert.severity) == (tier, severity)


def test_fifty_percent_is_a_notice_and_forecast_under_budget_a_warning() -> None:
    half = message_of("sns-actual-75.json").replace("$7,500.00", "$5,000.00")
    assert parse_budget_message(half).severity is Severity.NOTICE
    under = (
        message_of("sns-forecasted-100.json").replace("$11,240.00", "$9,800.00").replace("> $10,000.00", "> $9,000.00")
    )
    assert parse_budget_message(under).severity is Severity.WARNING


def test_amounts_without_cents_and_daily_budgets_are_read() -> None:
    text = (
        "AWS Budget Notification June 27, 2026\nAWS Account 123456789012\n\nYou requested that we alert you when the "
        "ACTUAL Cost associated with your gpu-daily budget is greater than $80 per day.\n\nBudget Name: gpu-daily\n"
        "Budget Type: Cost\nBudgeted Amount: $100\nAlert Type: ACTUAL\nAlert Threshold: > $80\nACTUAL Amount: $81\n"
    )
    alert = parse_budget_message(text)
    assert (alert.budgeted, alert.threshold, alert.amount, alert.daily) == (100.0, 80.0, 81.0, True)
    assert alert.dedupe_key(date(2026, 6, 27)) == "budget:123456789012:gpu-daily:ACTUAL:80:2026-06-27"


def test_same_tier_same_month_has_the_same_key_whatever_the_day() -> None:
    alert = parse_budget_message(message_of("sns-actual-75.json"))
    assert alert.dedupe_key(date(2026, 11, 30)) == "budget:123456789012:ml-monthly:ACTUAL:75:2026-11"


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [("sns-unknown.json", "not an AWS Budgets notification"), ("sns-truncated.json", "could not read: budgeted")],
)
def test_unknown_and_truncated_messages_raise_with_a_reason(fixture: str, reason: str) -> None:
    with pytest.raises(BudgetParseError, match=reason):
        parse_budget_message(message_of(fixture))


def test_usage_budgets_are_refused() -> None:
    text = message_of("sns-actual-75.json").replace("Budget Type: Cost", "Budget Type: Usage")
    with pytest.raises(BudgetParseError, match="Usage"):
        parse_budget_message(text)


def test_sns_event_is_read_and_malformed_ones_refused() -> None:
    [note] = parse_sns_event(load_event("budget_alerts/sns-actual-75.json"))
    assert (note.message_id, note.subject) == (
        "0da238f6-da6c-5214-96e1-635d27a9b79b",
        "AWS Budgets: ml-monthly has exceeded your alert threshold",
    )
    bad_events: list[object] = [{}, {"Records": []}, {"Records": [{"Sns": {}}]}, [1]]
    for bad in bad_events:
        with pytest.raises(EventValidationError):
            parse_sns_event(bad)


def test_an_sns_record_whose_timestamp_cannot_be_read_still_carries_its_notification() -> None:
    # Seen in captured records: "2023-04-11T13: 46: 29.757Z". The time only dates the notification;
    # refusing the record would send a budget alert to the dead-letter queue instead of Slack.
    received = datetime(2026, 11, 21, 9, 13, tzinfo=UTC)
    event = load_event("budget_alerts/sns-actual-75.json")
    event["Records"][0]["Sns"]["Timestamp"] = "2026-11-21T09: 12: 44.318Z"
    [note] = parse_sns_event(event, received=received)
    assert note.timestamp == datetime(2026, 11, 21, 9, 12, 44, 318000, tzinfo=UTC)
    for unreadable in ("yesterday", None, 17):
        event["Records"][0]["Sns"]["Timestamp"] = unreadable
        [note] = parse_sns_event(event, received=received)
        assert note.timestamp == received
        assert note.message.startswith("AWS Budget Notification")


def picture() -> SpendPicture:
    return SpendPicture(
        month_to_date=7612.34,
        forecast_month=11020.0,
        by_service=[Mover("Amazon Elastic Compute Cloud - Compute", 6100.0, 3790.0), Mover("Amazon S3", 300.0, 310.0)],
        by_instance_type=[Mover("p4d.24xlarge", 3950.0, 1970.0), Mover("g5.12xlarge", 900.0, 800.0)],
        by_owner=[Mover("alice", 2900.0, 1450.0), Mover("(no owner tag)", 800.0, 700.0)],
    )


def test_the_alert_says_in_one_line_who_and_what_drives_the_spend() -> None:
    assert drivers_line(picture()) == (
        "Driving the spend, versus the same days last month: *Amazon Elastic Compute Cloud - Compute* +$2,310"
        " · *p4d.24xlarge* +$1,980 · owner *alice* +$1,450"
    )


def test_critical_alerts_mention_here_and_others_do_not() -> None:
    critical = budget_alert_message(parse_budget_message(message_of("sns-actual-100.json")), picture())
    warning = budget_alert_message(parse_budget_message(message_of("sns-actual-75.json")), picture())
    assert critical.text.startswith("<!here> Budget ml-monthly: 100%")
    assert "<!here>" not in json.dumps(warning.slack_blocks())
    assert warning.text == "Budget ml-monthly: 75% of this month's budget spent"
    fields = json.dumps(warning.blocks[2])
    assert "$7,612" in fields
    assert "$11,020" in fields


def test_cost_explorer_failures_are_said_in_the_alert() -> None:
    partial = SpendPicture(errors=["GetCostForecast: AccessDeniedException"])
    message = budget_alert_message(parse_budget_message(message_of("sns-actual-75.json")), partial)
    assert "Cost Explorer could not answer GetCostForecast: AccessDeniedException" in json.dumps(message.blocks)
    assert "unknown" in json.dumps(message.blocks[2])


def test_raw_message_keeps_the_text_as_aws_sent_it() -> None:
    [note] = parse_sns_event(load_event("budget_alerts/sns-unknown.json"))
    message = raw_budget_message(note, "no 'Budget Name:' line")
    assert "Amazon SageMaker spend is $412.55 above expected" in message.blocks[2]["text"]["text"]
    assert message.text == "AWS notification costguard could not read: AWS Cost Anomaly Detection Alert"
    # When SNS sent it, in each reader's zone; AWS's own text, quoted as sent, is left as it is.
    assert dates_in(message.blocks[-1]) == [int(note.timestamp.timestamp())]
    assert as_read(message.blocks[-1]["elements"][0]["text"]).endswith(f" at {note.timestamp:%a %d %b %H:%M} UTC")
    assert not plain_times(message.slack_blocks())


@pytest.mark.parametrize(
    ("today", "current", "previous"),
    [
        (date(2026, 11, 21), (date(2026, 11, 1), date(2026, 11, 21)), (date(2026, 10, 1), date(2026, 10, 21))),
        (date(2026, 3, 31), (date(2026, 3, 1), date(2026, 3, 31)), (date(2026, 2, 1), date(2026, 3, 1))),
        (date(2026, 1, 1), (date(2026, 1, 1), date(2026, 1, 1)), (date(2025, 12, 1), date(2025, 12, 1))),
    ],
)
def test_same_days_of_last_month(today: date, current: tuple[date, date], previous: tuple[date, date]) -> None:
    assert periods(today) == (current, previous)


def test_labels_are_read_whatever_their_case() -> None:
    # AWS has sent "Alert Type: Actual" / "Actual Amount:" as well as the upper-case labels.
    text = (
        "AWS Budget Notification March 03, 2026\nAWS Account 111122223333\n\n"
        "Budget Name: gpu-research\nBudget Type: Cost\nBudgeted Amount: $2,000.00\n"
        "Alert Type: Actual\nAlert Threshold: > $1,600.00\nActual Amount: $1,712.40\n"
    )
    alert = parse_budget_message(text)
    assert (alert.alert_type, alert.amount, alert.tier) == ("ACTUAL", 1712.40, 80)
    lower = text.replace("Alert Type: Actual", "alert type: forecasted").replace("Actual Amount", "Forecasted amount")
    assert parse_budget_message(lower).forecast


def test_an_alarm_s_datapoint_time_in_cloudwatch_s_reason_is_shown_in_each_reader_s_zone() -> None:
    reason = (
        "Threshold Crossed: 1 out of the last 1 datapoints [99.5 (02/10/19 16:59:00)] was greater than the "
        "threshold (50.0) (minimum 1 datapoint for OK -> ALARM transition)."
    )  # as CloudWatch wrote it for a change at 2019-10-02T17:04:40Z: day/month/year, UTC
    alarm = AlarmChange("cpu-high", "ALARM", "OK", reason, "", "2019-10-02T17:04:40Z", "123456789012", "us-east-1")
    context = alarm_message(alarm).blocks[-1]["elements"][0]["text"]
    assert dates_in(context) == [int(datetime(2019, 10, 2, 16, 59, tzinfo=UTC).timestamp())]
    assert as_read(context) == (
        "CloudWatch: Threshold Crossed: 1 out of the last 1 datapoints [99.5 (Wed 02 Oct 16:59 UTC)] was greater "
        "than the threshold (50.0) (minimum 1 datapoint for OK -&gt; ALARM transition). (123456789012, us-east-1)"
    )
    assert not plain_times(context)
    odd = replace(alarm, reason="at (31/02/19 10:00:00) & <b>")  # no such day: as written, and escaped
    assert alarm_message(odd).blocks[-1]["elements"][0]["text"].startswith("CloudWatch: at (31/02/19 10:00:00) &amp;")
