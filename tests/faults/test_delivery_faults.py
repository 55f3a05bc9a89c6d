"""Notices posted once whatever happens around the post: a kill during it, a claim whose write was
applied but answered with an error, a Slack 429 storm longer than the time left, a Cost Explorer that
throttles, an event delivered twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core.errors import SlackDeliveryError
from costguard.runtime import Runtime
from costguard.slack.blocks import Message, section
from costguard.slack.notifier import SlackCredentials, SlackNotifier
from costguard.state.claims import Claims, ClaimState, post_once
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from tests.faults.conftest import Killed, refuse
from tests.integration.conftest import REGION, TABLE

NOW = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)
budget_alerts = load_handler("budget_alerts")


def claims() -> Claims:
    return Claims(boto3.client("dynamodb", region_name=REGION), TABLE)


def test_a_claim_whose_write_was_applied_but_whose_answer_was_lost_is_still_ours(runtime: Runtime) -> None:
    client = boto3.client("dynamodb", region_name=REGION)
    real = client.put_item

    def applied_then_resent(**params: Any) -> Any:
        real(**params)  # DynamoDB applied it; the answer is lost, so botocore sends it again:
        return real(**params)  # ...which fails its condition

    client.put_item = applied_then_resent  # type: ignore[method-assign]
    claim = Claims(client, TABLE).claim("budget:x", NOW, ttl=timedelta(days=1))
    assert claim.state is ClaimState.TAKEN


def test_a_post_killed_mid_way_is_made_by_the_retry_after_the_lease(runtime: Runtime, slack: SlackStandIn) -> None:
    notifier = SlackNotifier(SlackCredentials(bot_token=slack.token), base_url=slack.api_url)
    message = Message("budget at 80 %")

    class Dying(SlackNotifier):
        def post(self, channel: str, message: Message, *, thread_ts: str = "", broadcast: bool = False) -> Any:
            raise Killed("during the post")

    with pytest.raises(Killed):
        post_once(
            claims(),
            Dying(SlackCredentials(bot_token=slack.token)),
            "C0",
            key="k",
            message=message,
            now=NOW,
            ttl=timedelta(days=1),
        )
    # A retry inside the lease waits (it fails, to be retried); one after the lease posts.
    with pytest.raises(Exception, match="another attempt"):
        post_once(
            claims(), notifier, "C0", key="k", message=message, now=NOW + timedelta(seconds=20), ttl=timedelta(days=1)
        )
    post_once(claims(), notifier, "C0", key="k", message=message, now=NOW + timedelta(minutes=2), ttl=timedelta(days=1))
    post_once(claims(), notifier, "C0", key="k", message=message, now=NOW + timedelta(minutes=3), ttl=timedelta(days=1))
    assert [m.text for m in slack.messages] == ["budget at 80 %"]


def test_a_429_storm_longer_than_the_time_left_fails_at_once_for_a_later_retry(slack: SlackStandIn) -> None:
    slack.fail("chat.postMessage", 429, count=5, retry_after=120)
    notifier = SlackNotifier(SlackCredentials(bot_token=slack.token), base_url=slack.api_url, time_left=lambda: 60.0)
    started = datetime.now(UTC)
    with pytest.raises(SlackDeliveryError):
        notifier.post("C0", Message("x"))
    assert datetime.now(UTC) - started < timedelta(seconds=10)  # not 2 minutes of waiting past the timeout


def budget_event() -> Any:
    return load_event("budget_alerts/sns-actual-75.json")


def test_a_budget_alert_is_posted_without_its_breakdown_when_cost_explorer_throttles(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for operation in ("GetCostAndUsage", "GetCostForecast"):
        refuse(runtime.client("ce", "us-east-1", quick=True), operation, "ThrottlingException")
    monkeypatch.setattr(runtime, "now", lambda: NOW)
    result = budget_alerts.lambda_handler(budget_event(), lambda_context, runtime=runtime)
    assert result["notifications"][0]["status"] == "posted"
    [message] = slack.messages
    assert "Cost Explorer could not answer" in str(message.blocks)
    assert "ThrottlingException" in str(message.blocks)


def test_a_budget_notification_delivered_twice_is_posted_once(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: NOW)
    budget_alerts.lambda_handler(budget_event(), lambda_context, runtime=runtime)
    monkeypatch.setattr(runtime, "now", lambda: NOW + timedelta(minutes=2))
    again = budget_alerts.lambda_handler(budget_event(), lambda_context, runtime=runtime)
    assert again["notifications"][0]["status"] == "duplicate"
    assert len(slack.messages) == 1


@pytest.mark.parametrize(
    "lost",
    [{"status": 0, "hang_s": 1.5}, {"status": 503}],
    ids=["timed out", "503"],
)
def test_a_reply_slack_took_before_its_answer_was_lost_is_one_message_in_its_thread(
    slack: SlackStandIn, lost: dict[str, Any]
) -> None:
    creds = SlackCredentials(bot_token=slack.token, webhook_url=slack.webhook_url)
    notifier = SlackNotifier(creds, base_url=slack.api_url, timeout=1, channel_pace=0.0)
    warning = notifier.post("C0ALERTS", Message("i-1 is idle", (section("i-1 is idle"),)).marked("cg-warn-i-1"))
    slack.fail("chat.postMessage", lost.pop("status"), accepted=True, **lost)
    stop = Message("Stopped: i-1", (section("Stopped: i-1"),)).marked("cg-stop-i-1")
    delivery = notifier.post("C0ALERTS", stop, thread_ts=warning.ts, broadcast=True)
    told = [m for m in slack.messages if m.text == "Stopped: i-1"]
    assert [(m.route, m.thread_ts) for m in told] == [("bot", warning.ts)]
    assert delivery.ts == told[0].ts
