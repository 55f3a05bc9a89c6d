"""A Keep is never lost: the click worker killed between its steps, Slack failing the owner lookup or the
reply, IAM refusing a stop; a click delivered twice does one thing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
import pytest

from costguard.core import tags
from costguard.runtime import Runtime
from testing.slack_standin import SlackStandIn
from tests.faults.conftest import Killed, kill_at, refuse
from tests.integration.conftest import REGION, TABLE, tags_of
from tests.integration.test_buttons import (
    NOW,
    call,
    click_payload,
    env,
    http_event,
    queued,
    runtime_for,
    warned_instance,
)

__all__ = ["env"]  # the click queue fixture


def keep_entries() -> list[dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "keep"]


SEEN: dict[str, list[dict[str, Any]]] = {}


def deliver(
    queue: str, runtime: Runtime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, after: timedelta
) -> dict[str, Any]:
    """The queued click, delivered (again, as SQS does after a failure) `after` the click."""
    records = queued(queue) or SEEN[queue]
    SEEN[queue] = records
    return call({"Records": records}, runtime, lambda_context, monkeypatch, at=NOW + after)


def queue_click(slack: SlackStandIn, iid: str, runtime: Runtime, lambda_context: Any, mp: Any, **kw: Any) -> None:
    assert call(http_event(click_payload(slack, iid, **kw)), runtime, lambda_context, mp)["statusCode"] == 200


def test_a_worker_killed_before_the_keep_tag_keeps_the_machine_on_redelivery(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    queue_click(slack, iid, runtime, lambda_context, monkeypatch)
    kill_at(runtime.client("ec2", REGION), "CreateTags")

    with pytest.raises(Killed):
        deliver(env, runtime, lambda_context, monkeypatch, timedelta(seconds=1))
    deliver(env, runtime, lambda_context, monkeypatch, timedelta(minutes=3))  # SQS: after the visibility timeout

    assert tags.KEEP_UNTIL in tags_of(iid)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert len(keep_entries()) == 1


def test_an_owner_whose_lookup_failed_is_not_refused_and_the_keep_applies_on_redelivery(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    queue_click(slack, iid, runtime, lambda_context, monkeypatch)
    slack.fail("users.lookupByEmail", 500, count=3)  # every retry of the first delivery

    with pytest.raises(Exception, match="look up"):
        deliver(env, runtime, lambda_context, monkeypatch, timedelta(seconds=1))
    assert not [r for r in slack.ephemeral if "Only the owner" in str(r)]
    deliver(env, runtime, lambda_context, monkeypatch, timedelta(minutes=3))

    assert tags.KEEP_UNTIL in tags_of(iid)


def test_a_reply_that_fails_after_the_keep_applies_and_records_it_once(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    queue_click(slack, iid, runtime, lambda_context, monkeypatch)
    slack.fail("response_url", 500, count=3)

    with pytest.raises(Exception, match="response_url"):
        deliver(env, runtime, lambda_context, monkeypatch, timedelta(seconds=1))
    deliver(env, runtime, lambda_context, monkeypatch, timedelta(minutes=3))

    assert tags.KEEP_UNTIL in tags_of(iid)
    assert len(keep_entries()) == 1


def test_stop_now_on_an_exempt_machine_is_answered_not_retried(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    queue_click(slack, iid, runtime, lambda_context, monkeypatch, button="costguard.stop_now")
    refuse(runtime.client("ec2", REGION), "StopInstances", "UnauthorizedOperation")  # IAM: costguard:exempt

    result = deliver(env, runtime, lambda_context, monkeypatch, timedelta(seconds=1))

    assert result["clicks"][0]["status"] == "refused"
    assert "exempt" in str(slack.ephemeral[-1])


def test_a_click_delivered_twice_does_one_thing(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    queue_click(slack, iid, runtime, lambda_context, monkeypatch)
    records = queued(env)
    call({"Records": records}, runtime, lambda_context, monkeypatch, at=NOW)
    again = call({"Records": records}, runtime, lambda_context, monkeypatch, at=NOW + timedelta(minutes=3))
    assert again["clicks"][0]["status"] == "duplicate"
    assert len(keep_entries()) == 1
