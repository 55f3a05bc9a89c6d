"""One Slack app, two accounts: the hub's receiver routes a click to the member account of its machine,
whose own worker acts with its own role; a click for an account the hub does not serve goes nowhere.

moto serves both accounts (the member's through STS AssumeRole credentials). It does not evaluate a
queue policy across accounts, so the hub's sends to the member's queue use the member's credentials
here; `tests/template` asserts the policy that lets exactly the hub's receiver role do it in AWS.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from costguard.aws.clients import ClientFactory
from costguard.core import tags
from costguard.runtime import Runtime
from testing.handlers import LambdaContext, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import (
    MEMBER,
    MEMBER_REGION,
    REGION,
    SECRET,
    MemberContext,
    make_runtime,
    member_with_machine,
)
from tests.integration.test_buttons import SIGNING_SECRET, click_payload, http_event

HUB = "123456789012"
receiver = load_handler("slack_receiver")
worker = load_handler("buttons")
NOW = datetime(2026, 11, 21, 14, 8, 20, tzinfo=UTC)


@pytest.fixture
def world(
    aws: None, slack: SlackStandIn, member: boto3.session.Session, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    hub = make_runtime(slack)
    secret = json.dumps({"bot_token": slack.token, "signing_secret": SIGNING_SECRET})
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(SecretId=SECRET, SecretString=secret)
    hub_queue = boto3.client("sqs", region_name=REGION).create_queue(QueueName="hub-clicks")["QueueUrl"]
    member_queue = member.client("sqs").create_queue(QueueName="member-clicks")["QueueUrl"]
    machine = member_with_machine(member, slack, "g5.12xlarge")
    monkeypatch.setenv("CLICK_QUEUE_URL", hub_queue)
    monkeypatch.setenv("MEMBER_CLICK_QUEUES", f"arn:aws:sqs:{MEMBER_REGION}:{MEMBER}:member-clicks")
    monkeypatch.setenv("TEAM_TIMEZONE", "UTC")
    receiver._settings.cache_clear()
    worker._settings.cache_clear()
    hub.clients._clients[("sqs", MEMBER_REGION)] = member.client("sqs")  # what the member's queue policy allows
    monkeypatch.setattr(hub, "now", lambda: NOW)
    settings = dataclasses.replace(hub.settings, governed_regions=(MEMBER_REGION,), home_region=MEMBER_REGION)
    member_runtime = Runtime(settings, ClientFactory(member, default_region=MEMBER_REGION))
    member_runtime.slack_pace = 0.0
    monkeypatch.setattr(member_runtime, "now", lambda: NOW)
    yield {
        "hub": hub,
        "member": member_runtime,
        "hub_queue": hub_queue,
        "member_queue": member_queue,
        "machine": machine,
        "sqs": member.client("sqs"),
        "ec2": member.client("ec2"),
    }
    receiver._settings.cache_clear()
    worker._settings.cache_clear()


def press(world: dict[str, Any], slack: SlackStandIn, account: str) -> dict[str, Any]:
    payload = click_payload(slack, world["machine"])
    payload["actions"][0]["value"] = json.dumps({"i": world["machine"], "r": MEMBER_REGION, "a": account})
    return receiver.lambda_handler(http_event(payload, at=NOW), LambdaContext(), runtime=world["hub"])  # type: ignore[no-any-return]


def queued(client: Any, url: str) -> list[dict[str, str]]:
    return [
        {"body": m["Body"]} for m in client.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    ]


def test_a_click_in_slack_reaches_the_member_account_of_its_machine_and_is_acted_on_there(
    world: dict[str, Any], slack: SlackStandIn
) -> None:
    answer = press(world, slack, MEMBER)
    assert answer["statusCode"] == 200
    assert queued(boto3.client("sqs", region_name=REGION), world["hub_queue"]) == []
    records = queued(world["sqs"], world["member_queue"])
    assert len(records) == 1
    done = worker.lambda_handler({"Records": records}, MemberContext(), runtime=world["member"])
    assert done["clicks"][0]["status"] == "done"
    found = world["ec2"].describe_tags(Filters=[{"Name": "resource-id", "Values": [world["machine"]]}])["Tags"]
    assert tags.KEEP_UNTIL in {t["Key"] for t in found}


def test_a_click_for_an_account_the_hub_does_not_serve_goes_nowhere(world: dict[str, Any], slack: SlackStandIn) -> None:
    answer = press(world, slack, "999999999999")
    assert answer["statusCode"] == 400
    assert queued(boto3.client("sqs", region_name=REGION), world["hub_queue"]) == []
    assert queued(world["sqs"], world["member_queue"]) == []


def test_a_member_that_cannot_be_reached_is_a_503_so_the_person_presses_again(
    world: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBER_CLICK_QUEUES", f"arn:aws:sqs:{MEMBER_REGION}:{MEMBER}:deleted-queue")
    receiver._settings.cache_clear()
    assert press(world, slack, MEMBER)["statusCode"] == 503


def test_a_click_for_another_account_is_never_acted_on_by_this_accounts_worker(
    world: dict[str, Any], slack: SlackStandIn
) -> None:
    press(world, slack, MEMBER)
    records = queued(world["sqs"], world["member_queue"])
    # The hub's own worker (its account, its role) given the member's click by mistake refuses it.
    done = worker.lambda_handler({"Records": records}, LambdaContext(), runtime=world["hub"])
    assert done["clicks"][0]["status"] == "refused"
    assert "111122223333" in slack.ephemeral[-1]["text"]
