"""Cost Anomaly Detection alerts through the budget_alerts handler: the documented SNS and EventBridge
shapes posted, one message for both copies, edited in place (chat.update on the Slack stand-in) when AWS
re-sends the anomaly with a new impact, posted anew when the edit cannot be made, refused when
malformed. Cost Explorer is moto's queue, or botocore's Stubber with the exact requests."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from botocore.stub import Stubber

from costguard.core.errors import EventValidationError
from costguard.runtime import Runtime
from costguard.slack.notifier import SlackCredentials
from costguard.state.claims import ClaimHeld
from testing.aws_gaps import cost_and_usage
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("budget_alerts")
NOW = datetime(2026, 11, 21, 9, 13, tzinfo=UTC)
EC2 = "Amazon Elastic Compute Cloud - Compute"
KEY = "anomaly:7f3e2d1c-4b5a-4c6d-8e9f-0a1b2c3d4e5f"
# Spend by owner on EC2 over the anomaly's days (Nov 18-20) and the three days before, in that order.
OWNERS = [
    cost_and_usage({"Owner$alice": 2400.0, "Owner$bob": 300.0, "Owner$": 860.0}, "2026-11-18", "2026-11-21"),
    cost_and_usage({"Owner$alice": 420.0, "Owner$bob": 310.0, "Owner$": 420.0}, "2026-11-15", "2026-11-18"),
]


def invoke(event: Any, runtime: Runtime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: NOW)
    return app.lambda_handler(event, lambda_context, runtime=runtime)  # type: ignore[no-any-return]


def statuses(result: dict[str, Any]) -> list[str]:
    return [n["status"] for n in result["notifications"]]


def queue_owners(*answers: dict[str, Any]) -> None:
    queued = requests.post(
        "http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results",
        json={"results": list(answers)},
        timeout=5,
    )
    assert queued.status_code == 201


def sns_event(**impact: float) -> dict[str, Any]:
    """The SNS copy, its impact changed where given (AWS re-sending the anomaly as it grows)."""
    event = copy.deepcopy(load_event("budget_alerts/sns-anomaly.json"))
    body = json.loads(event["Records"][0]["Sns"]["Message"])
    body["impact"].update(impact)
    event["Records"][0]["Sns"]["Message"] = json.dumps(body)
    return dict(event)


def grown(event: dict[str, Any], sent: str) -> dict[str, Any]:
    """The same anomaly a day later, bigger, as AWS re-sends it (a new SNS message at a later time)."""
    body = json.loads(event["Records"][0]["Sns"]["Message"])
    body["anomalyEndDate"] = "2026-11-21T00:00:00Z"
    body["impact"].update(totalImpact=3702.6, totalActualSpend=5252.6, totalExpectedSpend=1550.0, maxImpact=1290.0)
    body["impact"]["totalImpactPercentage"] = 238.87
    out = copy.deepcopy(event)
    out["Records"][0]["Sns"].update(Message=json.dumps(body), Timestamp=sent, MessageId=f"resent-{sent}")
    return out


def test_the_documented_sns_alert_is_posted_with_its_root_causes_and_who_drives_it(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue_owners(*OWNERS)
    result = invoke(load_event("budget_alerts/sns-anomaly.json"), runtime, lambda_context, monkeypatch)
    assert result["notifications"] == [
        {"message_id": "5b8e0c1a-2f3d-5e4f-9a6b-7c8d9e0f1a2b", "status": "posted", "key": KEY}
    ]
    [message] = slack.messages
    assert (message.channel, message.route) == ("C0ALERTS", "bot")
    assert as_read(message.text) == f"Cost anomaly: {EC2} +$2,413 (+210%) since Wed 18 Nov 2026 UTC"
    body = json.dumps(message.blocks)
    assert "owner *alice* +$1,980" in body, "alice's EC2 spend over Nov 18-20 against Nov 15-17"
    assert "owner *(no owner tag)* +$440" in body
    assert "owner *bob*" not in body, "bob spent less"
    assert "us-east-1 \\u00b7 BoxUsage:p4d.24xlarge" in body
    assert "/anomalies/7f3e2d1c-4b5a-4c6d-8e9f-0a1b2c3d4e5f|Open the anomaly in AWS Cost Anomaly Detection>" in body


def test_cost_explorer_is_asked_for_the_anomalys_days_and_services_by_owner_and_nothing_else(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ce = runtime.client("ce", "us-east-1", quick=True)
    with Stubber(ce) as stub:
        for answer, period in zip(
            OWNERS,
            ({"Start": "2026-11-18", "End": "2026-11-21"}, {"Start": "2026-11-15", "End": "2026-11-18"}),
            strict=True,
        ):
            expected = {
                "TimePeriod": period,
                "Granularity": "MONTHLY",
                "Metrics": ["UnblendedCost"],
                "GroupBy": [{"Type": "TAG", "Key": "Owner"}],
                "Filter": {"Dimensions": {"Key": "SERVICE", "Values": [EC2]}},
            }
            stub.add_response("get_cost_and_usage", answer, expected)
        invoke(load_event("budget_alerts/eventbridge-anomaly.json"), runtime, lambda_context, monkeypatch)
        stub.assert_no_pending_responses()
        # The same anomaly again, unchanged, through the other route: no post, and no Cost Explorer call
        # (the Stubber would raise on one it was not given).
        again = invoke(load_event("budget_alerts/sns-anomaly.json"), runtime, lambda_context, monkeypatch)
    assert statuses(again) == ["unchanged"]
    [message] = slack.messages
    assert "owner *alice* +$1,980" in json.dumps(message.blocks)


def test_the_sns_and_eventbridge_copies_of_one_anomaly_make_one_message_however_often_delivered(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    for fixture in ("eventbridge-anomaly.json", "sns-anomaly.json", "eventbridge-anomaly.json", "sns-anomaly.json"):
        seen += statuses(invoke(load_event(f"budget_alerts/{fixture}"), runtime, lambda_context, monkeypatch))
    assert seen == ["posted", "unchanged", "unchanged", "unchanged"]
    assert len(slack.messages) == 1
    assert "chat.update" not in slack.calls


def test_the_anomaly_sent_again_with_a_bigger_impact_edits_its_message_in_place(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_event("budget_alerts/sns-anomaly.json")
    invoke(first, runtime, lambda_context, monkeypatch)
    [posted] = slack.messages
    ts = posted.ts
    later = grown(first, "2026-11-22T08:01:00.000Z")
    results = [statuses(invoke(later, runtime, lambda_context, monkeypatch)) for _ in range(2)]
    assert results == [["updated"], ["unchanged"]], "an unchanged re-send of the update edits nothing more"
    [message] = slack.messages
    assert (message.ts, message.updated) == (ts, True)
    assert slack.calls.count("chat.update") == 1
    assert slack.calls.count("chat.postMessage") == 1
    assert as_read(message.text) == f"Cost anomaly: {EC2} +$3,703 (+239%) since Wed 18 Nov 2026 UTC"
    body = json.dumps(message.blocks)
    assert "from Wed 18 Nov 2026 UTC to Sat 21 Nov 2026 UTC" in as_read(body)
    assert "the impact was +$2,413" in body
    # An older copy delivered late (Lambda's retry of the first SNS message) does not undo the edit.
    assert statuses(invoke(sns_event(totalImpact=2500.0), runtime, lambda_context, monkeypatch)) == ["stale"]
    assert slack.messages[0].text == message.text
    assert slack.calls.count("chat.update") == 1


def test_a_deleted_message_is_followed_by_a_new_post_that_says_it_updates_the_earlier_one(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_event("budget_alerts/sns-anomaly.json")
    invoke(first, runtime, lambda_context, monkeypatch)
    slack.messages.clear()  # someone deleted the alert in Slack: chat.update answers message_not_found
    assert statuses(invoke(grown(first, "2026-11-22T08:01:00Z"), runtime, lambda_context, monkeypatch)) == ["reposted"]
    [message] = slack.messages
    assert "This updates costguard's alert of Sat 21 Nov 2026 UTC about the same anomaly" in as_read(message.blocks)
    assert "+$3,703" in message.text
    # The new post is the one the next change edits.
    again = grown(first, "2026-11-23T08:01:00Z")
    json_body = json.loads(again["Records"][0]["Sns"]["Message"])
    json_body["impact"]["totalImpact"] = 4100.0
    again["Records"][0]["Sns"]["Message"] = json.dumps(json_body)
    assert statuses(invoke(again, runtime, lambda_context, monkeypatch)) == ["updated"]
    assert [m.ts for m in slack.messages] == [message.ts]
    assert "+$4,100" in slack.messages[0].text


def test_with_the_webhook_only_an_update_is_a_new_post_through_the_webhook(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_event("budget_alerts/sns-anomaly.json")
    invoke(first, runtime, lambda_context, monkeypatch)
    # The bot token is taken out of the secret: only the incoming webhook is left, which cannot edit.
    monkeypatch.setattr(runtime, "slack_credentials", lambda: SlackCredentials(webhook_url=slack.webhook_url))
    assert statuses(invoke(grown(first, "2026-11-22T08:01:00Z"), runtime, lambda_context, monkeypatch)) == ["reposted"]
    original, update = slack.messages
    assert (original.route, original.updated, update.route) == ("bot", False, "webhook")
    assert "This updates costguard's alert of Sat 21 Nov 2026 UTC" in as_read(update.blocks)
    assert "chat.update" not in slack.calls


def test_a_kill_after_the_edit_before_its_record_edits_again_on_the_retry_and_posts_nothing_new(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_event("budget_alerts/sns-anomaly.json")
    invoke(first, runtime, lambda_context, monkeypatch)
    later = grown(first, "2026-11-22T08:01:00Z")
    claims = runtime.claims
    real = claims.revise

    def killed(key: str, detail: str) -> None:
        raise TimeoutError("Lambda timed out")

    monkeypatch.setattr(claims, "revise", killed)
    with pytest.raises(TimeoutError):
        invoke(later, runtime, lambda_context, monkeypatch)
    monkeypatch.setattr(claims, "revise", real)
    assert statuses(invoke(later, runtime, lambda_context, monkeypatch)) == ["updated"]  # the retry
    assert len(slack.messages) == 1
    assert slack.calls.count("chat.update") == 2, "the same edit, made twice: nothing posted anew"


def test_while_another_attempt_posts_the_anomaly_this_one_fails_to_be_retried(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.claims.claim(KEY, NOW, ttl=timedelta(days=1))  # the other copy, mid-post
    with pytest.raises(ClaimHeld):
        invoke(load_event("budget_alerts/eventbridge-anomaly.json"), runtime, lambda_context, monkeypatch)
    assert slack.messages == []


def test_slack_down_fails_the_first_post_and_the_retry_posts_it(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    slack.fail("chat.postMessage", 500, count=10)
    slack.fail("webhook", 500, count=10)
    with pytest.raises(Exception, match="could not post"):
        invoke(load_event("budget_alerts/eventbridge-anomaly.json"), runtime, lambda_context, monkeypatch)
    slack.faults.clear()
    assert statuses(invoke(load_event("budget_alerts/sns-anomaly.json"), runtime, lambda_context, monkeypatch)) == [
        "posted"
    ]
    assert len(slack.messages) == 1


def test_a_malformed_eventbridge_anomaly_is_refused_and_nothing_is_posted(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = copy.deepcopy(load_event("budget_alerts/eventbridge-anomaly.json"))
    event["detail"]["impact"]["totalImpact"] = "a lot"
    with pytest.raises(EventValidationError, match=r"detail\.impact\.totalImpact is a string of 5 characters"):
        invoke(event, runtime, lambda_context, monkeypatch)
    assert slack.messages == []


def test_a_malformed_anomaly_on_the_shared_topic_is_posted_raw_naming_the_field_at_fault(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = copy.deepcopy(load_event("budget_alerts/sns-anomaly.json"))
    body = json.loads(event["Records"][0]["Sns"]["Message"])
    del body["impact"]
    event["Records"][0]["Sns"]["Message"] = json.dumps(body)
    results = [statuses(invoke(event, runtime, lambda_context, monkeypatch)) for _ in range(2)]
    assert results == [["posted-raw"], ["duplicate"]]
    [message] = slack.messages
    assert "costguard could not read it (Message.impact is missing, not an object)" in json.dumps(message.blocks)
    assert '"anomalyId": "7f3e2d1c' in message.blocks[2]["text"]["text"], "the message as AWS sent it"
