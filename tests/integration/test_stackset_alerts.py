"""The hub's alerts channel hears when the members' StackSet fails in an account: CloudFormation's StackSet
StackInstance Status Change event (events/organization_digest/stackset-failed.json, the documented shape with a
member's stack) through the organization_digest handler, told once however often EventBridge delivers it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from costguard.core.errors import EventValidationError
from costguard.runtime import Runtime
from testing.handlers import LambdaContext, load_event, load_handler
from testing.slack_standin import SlackStandIn

organization = load_handler("organization_digest")
FAILED = load_event("organization_digest/stackset-failed.json")


def handle(runtime: Runtime, event: Any) -> dict[str, Any]:
    return organization.lambda_handler(event, LambdaContext(), runtime=runtime)  # type: ignore[no-any-return]


def test_a_stackset_failure_in_an_account_is_told_in_the_alerts_channel_with_cloudformations_reason(
    runtime: Runtime, slack: SlackStandIn
) -> None:
    result = handle(runtime, FAILED)

    assert result["stackset_failure"] == {
        "account": "111122223333",
        "region": "eu-west-1",
        "status": "FAILED",
        "told": True,
    }
    [alert] = slack.messages
    assert alert.channel == "C0ALERTS"
    text = json.dumps(alert.blocks)
    assert "could not create costguard's stack in account `111122223333` (eu-west-1): *FAILED*" in text
    assert "Access denied for operation 'CreateTable'" in text
    assert "make org-deploy again" in text


def test_the_same_event_delivered_twice_is_told_once(runtime: Runtime, slack: SlackStandIn) -> None:
    handle(runtime, FAILED)
    again = handle(runtime, copy.deepcopy(FAILED))

    assert again["stackset_failure"]["told"] is False
    assert len(slack.messages) == 1


def test_an_instance_that_succeeded_says_nothing(runtime: Runtime, slack: SlackStandIn) -> None:
    event = copy.deepcopy(FAILED)
    event["detail"]["status-details"] = {"status": "CURRENT", "detailed-status": "SUCCEEDED"}

    assert handle(runtime, event)["status"] == "ignored"
    assert slack.messages == []


def test_a_reason_with_slack_markup_is_shown_as_text(runtime: Runtime, slack: SlackStandIn) -> None:
    event = copy.deepcopy(FAILED)
    event["detail"]["status-details"]["status-reason"] = "<!channel> <https://evil.example|click>"

    handle(runtime, event)

    text = json.dumps(slack.messages[0].blocks)
    assert "<!channel>" not in text
    assert "&lt;!channel&gt;" in text


def test_an_event_whose_stack_is_not_an_arn_is_refused_so_it_reaches_the_dead_letter_queue(
    runtime: Runtime, slack: SlackStandIn
) -> None:
    event = copy.deepcopy(FAILED)
    event["detail"]["stack-id"] = "teststack"

    with pytest.raises(EventValidationError):
        handle(runtime, event)
    assert slack.messages == []
