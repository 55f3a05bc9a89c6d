"""Cost Anomaly Detection alerts: both of AWS's shapes read into one record, refused clearly when
malformed, left alone when they are not anomalies, and the alert they become."""

from __future__ import annotations

import copy
import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from costguard.budgets.anomalies import Anomaly, RootCause, anomaly_from_sns, is_anomaly_event, parse_anomaly_event
from costguard.budgets.anomaly_messages import anomaly_message, drivers_line
from costguard.budgets.notifications import SnsNotification, parse_sns_event
from costguard.core.errors import EventValidationError
from costguard.core.records import Drivers, Mover
from testing.handlers import load_event
from testing.slack_text import as_read, dates_in, plain_times

EC2 = "Amazon Elastic Compute Cloud - Compute"
ANOMALY_ID = "7f3e2d1c-4b5a-4c6d-8e9f-0a1b2c3d4e5f"


def sns_body() -> dict[str, Any]:
    """The JSON an immediate alert subscription publishes (events/budget_alerts/sns-anomaly.json)."""
    return dict(json.loads(load_event("budget_alerts/sns-anomaly.json")["Records"][0]["Sns"]["Message"]))


def sns(body: Any, message_id: str = "m-1") -> SnsNotification:
    text = body if isinstance(body, str) else json.dumps(body)
    return SnsNotification(message_id, "", text, datetime(2026, 11, 21, 8, 2, 17, tzinfo=UTC))


def read(body: dict[str, Any]) -> Anomaly:
    """The anomaly of an SNS message that must be one."""
    found = anomaly_from_sns(sns(body))
    assert found is not None
    return found


def eventbridge() -> dict[str, Any]:
    return dict(load_event("budget_alerts/eventbridge-anomaly.json"))


def test_the_sns_message_is_read_field_by_field() -> None:
    [note] = parse_sns_event(load_event("budget_alerts/sns-anomaly.json"))
    anomaly = anomaly_from_sns(note)
    assert anomaly is not None
    assert (anomaly.anomaly_id, anomaly.start, anomaly.end) == (ANOMALY_ID, date(2026, 11, 18), date(2026, 11, 20))
    assert (anomaly.total_impact, anomaly.actual, anomaly.expected) == (2412.8, 3562.8, 1150.0)
    assert (anomaly.impact_percent, anomaly.max_impact) == (209.81, 1104.2)
    assert (anomaly.score, anomaly.max_score) == (0.78, 0.81)
    assert (anomaly.dimension, anomaly.monitor_name, anomaly.monitor_type) == (EC2, "ml-services", "DIMENSIONAL")
    assert anomaly.monitor_arn.endswith("anomalymonitor/0c6f3c1e-5d2b-4a8e-9f1d-7b3c2a1e0f42")
    assert (anomaly.account_id, anomaly.account_name, anomaly.subscription) == (
        "123456789012",
        "ml-research",
        "costguard-immediate",
    )
    assert anomaly.root_causes[0] == RootCause(EC2, "123456789012", "ml-research", "us-east-1", "BoxUsage:p4d.24xlarge")
    assert anomaly.link.endswith(f"/anomalies/{ANOMALY_ID}")
    assert (anomaly.via, anomaly.sent_at, anomaly.message_id) == (
        "sns",
        datetime(2026, 11, 21, 8, 2, 17, 541000, tzinfo=UTC),
        "5b8e0c1a-2f3d-5e4f-9a6b-7c8d9e0f1a2b",
    )


def test_the_eventbridge_event_is_the_same_anomaly_in_its_own_spelling() -> None:
    event = eventbridge()
    assert is_anomaly_event(event)
    from_bus = parse_anomaly_event(event)
    [note] = parse_sns_event(load_event("budget_alerts/sns-anomaly.json"))
    from_topic = anomaly_from_sns(note)
    assert from_topic is not None
    # One anomaly, one key, one revision: the two copies make one message.
    assert (from_bus.key, from_bus.revision) == (from_topic.key, from_topic.revision)
    assert from_bus.dimension == EC2, "EventBridge spells it dimensionValue, SNS dimensionalValue"
    assert [c.contribution for c in from_bus.root_causes] == [1867.4, 545.4]
    assert (from_bus.via, from_bus.sent_at, from_bus.message_id) == (
        "eventbridge",
        datetime(2026, 11, 21, 8, 2, 15, tzinfo=UTC),
        "c2f4e6a8-1b3d-5f7a-9c0e-2d4f6a8b0c1e",
    )
    assert (from_bus.monitor_type, from_bus.subscription) == ("", "")


def test_an_anomaly_with_no_end_is_going_on_and_runs_to_today() -> None:
    body = sns_body()
    body["anomalyEndDate"] = None
    anomaly = read(body)
    assert anomaly.end is None
    assert anomaly.days(date(2026, 11, 21)) == (date(2026, 11, 18), date(2026, 11, 22))
    assert anomaly.revision.endswith("/ongoing")
    # An end AWS dates after today (a clock apart) is read up to today only.
    body["anomalyEndDate"] = "2026-11-25"
    assert read(body).days(date(2026, 11, 21)) == (date(2026, 11, 18), date(2026, 11, 22))


def test_aws_omits_the_percentage_when_nothing_was_expected() -> None:
    body = sns_body()
    body["impact"] = {"maxImpact": 40.0, "totalImpact": 61.5, "totalActualSpend": 61.5, "totalExpectedSpend": 0}
    anomaly = read(body)
    assert anomaly.impact_percent is None
    assert "(+" not in anomaly_message(anomaly, Drivers(date(2026, 11, 18), date(2026, 11, 21))).text


def test_the_revision_follows_the_impact_and_the_end_not_the_score() -> None:
    body = sns_body()
    first = read(body)
    body["anomalyScore"] = {"maxScore": 0.9, "currentScore": 0.9}
    rescored = read(body)
    body["impact"]["totalImpact"] = 3100.0
    grown = read(body)
    body["anomalyEndDate"] = "2026-11-21T00:00:00Z"
    longer = read(body)
    assert first.revision == rescored.revision
    assert len({first.revision, grown.revision, longer.revision}) == 3


def mutate(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    *parents, last = path.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    index: Any = int(last) if last.isdigit() else last
    if value is KeyError:
        del node[index]
    else:
        node[index] = value
    return out


MALFORMED = [
    ("anomalyId", 42, "anomalyId is a int"),
    ("anomalyStartDate", "yesterday", "anomalyStartDate 'yesterday' is not a date"),
    ("anomalyStartDate", "2026-13-45", "is not a date"),
    ("anomalyEndDate", 20261120, "anomalyEndDate is a int, not a string"),
    ("impact", KeyError, "impact is missing, not an object"),
    ("impact", "2412.80", "impact is a string of 7 characters, not an object"),
    ("impact.totalImpact", KeyError, "impact.totalImpact is missing, not a number"),
    ("impact.totalImpact", "2412.80", "impact.totalImpact is a string of 7 characters, not a number"),
    ("impact.totalImpact", True, "impact.totalImpact is a bool, not a number"),
    ("impact.totalImpact", float("nan"), "impact.totalImpact is a float, not a number"),
    ("impact.totalActualSpend", [1], "impact.totalActualSpend is a list, not a number"),
    ("anomalyScore", [0.5], "anomalyScore is a list, not an object"),
    ("rootCauses", {"service": EC2}, "rootCauses is a dict, not a list"),
    ("rootCauses.0", "Amazon EC2", "rootCauses[0] is a string of 10 characters, not an object"),
    ("rootCauses.0.service", ["EC2"], "rootCauses[0].service is a list, not a string"),
]


@pytest.mark.parametrize(("path", "value", "reason"), MALFORMED)
def test_a_malformed_anomaly_is_refused_naming_the_field_in_either_shape(path: str, value: Any, reason: str) -> None:
    with pytest.raises(EventValidationError, match=reason.replace("[", r"\[").replace("(", r"\(")) as from_topic:
        anomaly_from_sns(sns(mutate(sns_body(), path, value)))
    assert str(from_topic.value).startswith("Message.")
    event = eventbridge()
    event["detail"] = mutate(event["detail"], path, value)
    with pytest.raises(EventValidationError, match=reason.replace("[", r"\[").replace("(", r"\(")) as from_bus:
        parse_anomaly_event(event)
    assert str(from_bus.value).startswith("detail.")


def test_an_event_with_no_anomaly_id_is_refused_and_such_an_sns_message_is_not_taken_for_an_anomaly() -> None:
    event = eventbridge()
    del event["detail"]["anomalyId"]
    with pytest.raises(EventValidationError, match=r"detail\.anomalyId is missing, not a non-empty string"):
        parse_anomaly_event(event)
    # On the shared topic, JSON without an anomalyId is someone else's: the budget reader posts it raw.
    assert anomaly_from_sns(sns(mutate(sns_body(), "anomalyId", KeyError))) is None


@pytest.mark.parametrize(
    "message",
    [
        "AWS Budget Notification November 21, 2026\nBudget Name: ml-monthly\n",
        '{"AlarmName": "costguard-idle", "NewStateValue": "ALARM"}',
        "{not json at all",
        "[1, 2, 3]",
        "",
    ],
)
def test_a_message_that_is_not_an_anomaly_is_left_to_the_budget_reader(message: str) -> None:
    assert anomaly_from_sns(sns(message)) is None


def test_other_events_of_cost_explorer_are_refused_and_an_sns_event_is_not_taken_for_one() -> None:
    event = eventbridge()
    event["detail-type"] = "Cost Explorer Report Ready"
    assert is_anomaly_event(event)
    with pytest.raises(EventValidationError, match=r"costguard reads 'Anomaly Detected' of aws\.ce"):
        parse_anomaly_event(event)
    bad_time = eventbridge()
    bad_time["time"] = "Saturday"
    with pytest.raises(EventValidationError, match=r"event\.time 'Saturday' is not a time"):
        parse_anomaly_event(bad_time)
    assert not is_anomaly_event(load_event("budget_alerts/sns-anomaly.json"))
    assert not is_anomaly_event([eventbridge()])


def test_only_a_console_link_is_passed_on_else_costguard_makes_its_own() -> None:
    body = sns_body()
    body["anomalyDetailsLink"] = "https://evil.example/login?next=console.aws.amazon.com/"
    anomaly = read(body)
    assert anomaly.link == ""
    assert anomaly.console_link == (
        "https://console.aws.amazon.com/cost-management/home#/anomaly-detection/monitors/"
        f"0c6f3c1e-5d2b-4a8e-9f1d-7b3c2a1e0f42/anomalies/{ANOMALY_ID}"
    )
    del body["monitorArn"]
    assert read(body).console_link == "https://console.aws.amazon.com/cost-management/home#/anomaly-detection/overview"


def anomaly() -> Anomaly:
    return parse_anomaly_event(eventbridge())


def drivers(**changes: Any) -> Drivers:
    base = Drivers(
        date(2026, 11, 18),
        date(2026, 11, 21),
        (EC2,),
        [
            Mover("alice", 2100.0, 300.0),
            Mover("(no owner tag)", 500.0, 300.0),
            Mover("carol", 905.0, 800.0),  # +$105: under 5% of the anomaly's $2,413, drives nothing
            Mover("bob", 10.0, 50.0),
        ],
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def body_of(message: Any) -> str:
    return json.dumps(message.slack_blocks())


def test_the_alert_says_what_jumped_by_how_much_since_when_and_who_drives_it() -> None:
    message = anomaly_message(anomaly(), drivers())
    assert as_read(message.text) == f"Cost anomaly: {EC2} +$2,413 (+210%) since Wed 18 Nov 2026 UTC"
    assert message.blocks[0]["text"]["text"] == f"Cost anomaly: {EC2} +$2,413 (+210%)"  # plain text: no day
    summary = as_read(message.blocks[1]["text"]["text"])
    assert (
        f"*{EC2}* spent *$3,563* where $1,150 was expected, from Wed 18 Nov 2026 UTC to Fri 20 Nov 2026 UTC" in summary
    )
    # AWS's days (UTC), each the day a reader sees wherever they are: its noon.
    noon = [int(datetime(2026, 11, d, 12, tzinfo=UTC).timestamp()) for d in (18, 20)]
    assert dates_in(message.text) == noon[:1]
    assert dates_in(message.blocks[1]) == noon
    assert not plain_times(message.slack_blocks())
    assert not plain_times(message.text)
    assert "Its worst day: +$1,104." in summary
    assert summary.endswith(
        f"Driving it on {EC2}, by owner tag, versus the 3 days before: owner *alice* +$1,800 · "
        "owner *(no owner tag)* +$200"
    )
    body = body_of(message)
    assert "us-east-1 \\u00b7 BoxUsage:p4d.24xlarge: +$1,867" in body, "the root causes, with AWS's contribution"
    assert "*Score*\\n0.78 (highest 0.81)" in body
    assert "bob" not in body, "an owner whose spend fell drives nothing"
    assert "carol" not in body, "nor one whose spend rose by a trifle of the anomaly"
    assert f"/anomalies/{ANOMALY_ID}|Open the anomaly in AWS Cost Anomaly Detection>" in body


def test_no_rising_owner_and_a_failed_cost_explorer_are_said() -> None:
    quiet = anomaly_message(anomaly(), drivers(by_owner=[Mover("bob", 10.0, 50.0)]))
    assert f"No owner's spend on {EC2} rose by $121 or more." in body_of(quiet)
    failed = anomaly_message(anomaly(), drivers(by_owner=[], errors=["GetCostAndUsage by Owner: ThrottlingException"]))
    assert "Cost Explorer could not answer GetCostAndUsage by Owner: ThrottlingException" in body_of(failed)
    assert drivers_line(drivers(errors=["x"]), 2412.8) == f"Who drives it could not be read from Cost Explorer ({EC2})."


def test_an_edit_says_what_the_impact_was_and_a_new_post_says_what_it_replaces() -> None:
    edited = anomaly_message(anomaly(), drivers(), was=1200.0, updated_at=datetime(2026, 11, 22, 8, 5, tzinfo=UTC))
    assert "updated Sun 22 Nov 08:05 UTC, the impact was +$1,200" in as_read(body_of(edited))
    assert int(datetime(2026, 11, 22, 8, 5, tzinfo=UTC).timestamp()) in dates_in(edited.blocks[-1])
    again = anomaly_message(anomaly(), drivers(), replaces=date(2026, 11, 21))
    said = again.blocks[1]["text"]["text"]
    assert "This updates costguard's alert of Sat 21 Nov 2026 UTC about the same anomaly" in as_read(said)
    assert not plain_times(edited.slack_blocks())
    assert not plain_times(again.slack_blocks())
