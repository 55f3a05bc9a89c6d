"""costguard's own alarms reach the alerts channel: the dead-letter alarm publishes to the operations
topic, which budget_alerts reads, so a failed invocation is told in Slack even when no one subscribed an
email (OpsEmail is optional), once per change of state, with what to do."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from costguard.runtime import Runtime
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("budget_alerts")
NOW = datetime(2026, 11, 23, 3, 11, tzinfo=UTC)


def invoke(event: Any, runtime: Runtime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: NOW)
    return app.lambda_handler(event, lambda_context, runtime=runtime)  # type: ignore[no-any-return]


def with_alarm(change: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = copy.deepcopy(load_event("budget_alerts/sns-costguard-alarm.json"))
    sns = event["Records"][0]["Sns"]
    sns["Message"] = json.dumps({**json.loads(sns["Message"]), **change})
    return event


def test_the_dead_letter_alarm_is_posted_once_with_what_to_do(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = load_event("budget_alerts/sns-costguard-alarm.json")

    first = invoke(event, runtime, lambda_context, monkeypatch)
    again = invoke(event, runtime, lambda_context, monkeypatch)  # SNS delivers at least once

    assert [n["status"] for n in first["notifications"] + again["notifications"]] == ["posted", "duplicate"]
    [message] = slack.messages
    assert message.channel == "C0ALERTS"
    assert message.text == "Alarm costguard-DeadLetterAlarm-7QF2M1EXAMPLE is ALARM"
    body = json.dumps(message.blocks)
    assert "is ALARM (was OK)" in body
    assert "Read the function's logs, fix the cause, then redrive the queue." in body
    assert "Threshold Crossed: 1 out of the last 1 datapoints" in body
    assert "could not read" not in body


def test_a_later_change_of_the_same_alarm_is_its_own_message(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke(load_event("budget_alerts/sns-costguard-alarm.json"), runtime, lambda_context, monkeypatch)
    later = with_alarm({"StateChangeTime": "2026-11-24T03:10:48.526+0000"})

    assert invoke(later, runtime, lambda_context, monkeypatch)["notifications"][0]["status"] == "posted"
    assert len(slack.messages) == 2


def test_an_alarm_costguard_cannot_read_is_posted_as_sent_with_the_field_named(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke(with_alarm({"NewStateValue": 3}), runtime, lambda_context, monkeypatch)

    assert result["notifications"][0]["status"] == "posted-raw"
    [message] = slack.messages
    body = json.dumps(message.blocks)
    assert "Message.NewStateValue is" in body
    assert "costguard-DeadLetterAlarm-7QF2M1EXAMPLE" in body
