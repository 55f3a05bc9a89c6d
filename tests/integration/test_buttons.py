"""buttons end to end: a signed Function URL request is queued; the queued click acts on a moto
instance, once, for the owner or an admin only, and updates the original message."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest

from costguard.core import tags
from costguard.core.settings import Mode
from costguard.runtime import Runtime
from costguard.slack.blocks import Block, Message, actions, section
from costguard.slack.buttons import laid_out, warning_buttons
from costguard.slack.notifier import SlackCredentials, SlackNotifier
from costguard.slack.signature import sign
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, dates_in
from tests.integration.conftest import REGION, SIGNING_SECRET, ec2, make_runtime, tags_of

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("buttons")
receiver = load_handler("slack_receiver")
NOW = datetime(2026, 11, 21, 14, 8, 20, tzinfo=UTC)
__all__ = ["SIGNING_SECRET"]  # the other tests that press sign with it


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> str:
    queue = boto3.client("sqs", region_name=REGION).create_queue(QueueName="costguard-clicks")["QueueUrl"]
    monkeypatch.setenv("CLICK_QUEUE_URL", queue)
    monkeypatch.setenv("TEAM_TIMEZONE", "Europe/Paris")
    monkeypatch.setenv("SLACK_ADMINS", "U0ADMIN,S0PLATFORM")
    app._settings.cache_clear()
    receiver._settings.cache_clear()
    return str(queue)


def runtime_for(slack: SlackStandIn, mode: Mode = Mode.ENFORCE) -> Runtime:
    runtime = make_runtime(slack, mode=mode)
    secret = json.dumps({"bot_token": slack.token, "signing_secret": SIGNING_SECRET})
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(SecretId="costguard/slack", SecretString=secret)
    return runtime


def warned_instance(owner: str = "alice@example.com") -> str:
    return str(
        ec2().run_instances(
            ImageId="ami-12c6146b",
            MinCount=1,
            MaxCount=1,
            InstanceType="g5.12xlarge",
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": [
                        {"Key": "Owner", "Value": owner},
                        {"Key": tags.IDLE_WARNED_AT, "Value": "2026-11-21T14:00:00Z"},
                        {"Key": tags.STOP_AFTER, "Value": "2026-11-21T14:30:00Z"},
                    ],
                }
            ],
        )["Instances"][0]["InstanceId"]
    )


def warning_blocks(iid: str) -> list[Block]:
    """A warning's blocks, its buttons as costguard makes them."""
    return [section(f"`{iid}` is idle"), actions(f"warn:{iid}", laid_out(warning_buttons(iid, REGION, will_stop=True)))]


def post_warning(slack: SlackStandIn, iid: str) -> str:
    """The warning as costguard posted it, so the click can update it."""
    notifier = SlackNotifier(SlackCredentials(bot_token=slack.token), base_url=slack.api_url)
    return notifier.post("U0ALICE", Message("idle", tuple(warning_blocks(iid)))).ts


def click_payload(
    slack: SlackStandIn, iid: str, button: str = "costguard.keep_2h", user: str = "U0ALICE", ts: str = "1.1"
) -> dict[str, Any]:
    payload: dict[str, Any] = load_event("slack_receiver/block-actions-keep-2h.json")
    value = json.dumps({"i": iid, "r": REGION}, separators=(",", ":"))
    payload["actions"][0].update(action_id=button, value=value)
    payload["user"].update(id=user, username=user.lower())
    payload["message"]["ts"] = payload["container"]["message_ts"] = ts
    payload["message"]["blocks"] = warning_blocks(iid)
    payload["response_url"] = slack.response_url(ts)
    return payload


def http_event(
    payload: dict[str, Any], *, secret: str = SIGNING_SECRET, at: datetime = NOW, tamper: bool = False
) -> dict[str, Any]:
    body = urlencode({"payload": json.dumps(payload)}).encode()
    timestamp = str(int(at.timestamp()))
    event: dict[str, Any] = load_event("slack_receiver/function-url-request.json")
    event["headers"]["x-slack-request-timestamp"] = timestamp
    event["headers"]["x-slack-signature"] = sign(secret, timestamp, body)
    event["body"] = base64.b64encode(body + (b"&x=1" if tamper else b"")).decode()
    return event


def queued(queue: str) -> list[dict[str, Any]]:
    messages = (
        boto3.client("sqs", region_name=REGION)
        .receive_message(QueueUrl=queue, MaxNumberOfMessages=10)
        .get("Messages", [])
    )
    return [{"body": m["Body"]} for m in messages]


def call(
    event: Any, runtime: Runtime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, at: datetime = NOW
) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: at)
    handler = receiver if isinstance(event, dict) and "requestContext" in event else app  # the URL, or the queue
    return handler.lambda_handler(event, lambda_context, runtime=runtime)  # type: ignore[no-any-return]


def press(
    payload: dict[str, Any], runtime: Runtime, queue: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Slack posts the click; the worker then takes it from the queue."""
    answer = call(http_event(payload), runtime, lambda_context, monkeypatch)
    assert answer == {"statusCode": 200, "body": ""}
    return call({"Records": queued(queue)}, runtime, lambda_context, monkeypatch)


# ------------------------------------------------------------------ the HTTP side


def test_a_signed_click_is_queued_and_answered_at_once(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    answer = call(http_event(click_payload(slack, iid)), runtime, lambda_context, monkeypatch)
    assert answer["statusCode"] == 200
    [message] = queued(env)
    assert json.loads(message["body"])["button"] == "costguard.keep_2h"
    assert tags.KEEP_UNTIL not in tags_of(iid), "nothing changes before the worker runs"


@pytest.mark.parametrize(
    "variant",
    [{"secret": "wrong-secret"}, {"tamper": True}, {"at": NOW - timedelta(minutes=6)}],
    ids=["wrong secret", "tampered body", "stale timestamp"],
)
def test_unverified_requests_get_401_and_change_nothing(
    aws: None,
    slack: SlackStandIn,
    env: str,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    variant: dict[str, Any],
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    answer = call(http_event(click_payload(slack, iid), **variant), runtime, lambda_context, monkeypatch)
    assert answer["statusCode"] == 401
    assert queued(env) == []
    assert tags.KEEP_UNTIL not in tags_of(iid)


def test_a_click_that_cannot_be_verified_or_queued_for_want_of_aws_is_a_503_never_a_200(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    boto3.client("secretsmanager", region_name=REGION).delete_secret(
        SecretId="costguard/slack", ForceDeleteWithoutRecovery=True
    )
    answer = call(http_event(click_payload(slack, iid)), runtime, lambda_context, monkeypatch)
    assert answer["statusCode"] == 503  # Slack shows the person an error: they press again
    assert queued(env) == []


# ------------------------------------------------------------------ the buttons


def test_keep_2h_tags_the_instance_clears_the_warning_and_updates_the_message(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    ts = post_warning(slack, iid)
    result = press(click_payload(slack, iid, ts=ts), runtime, env, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": "costguard.keep_2h", "status": "done"}]
    t = tags_of(iid)
    assert t[tags.KEEP_UNTIL] == "2026-11-21T16:08:20Z"
    assert t[tags.KEPT_BY] == "u0alice"
    assert tags.IDLE_WARNED_AT not in t
    [message] = slack.messages
    assert message.updated
    assert [b["type"] for b in message.blocks] == ["section", "context"], "buttons replaced by who did what"
    assert "<@U0ALICE> kept" in message.blocks[-1]["elements"][0]["text"]
    # Slack shows each reader the time in their own zone; the fallback is the owner's clock (here the team's:
    # the stand-in's people set no zone), and names it.
    assert "until Sat 21 Nov 17:08 CET" in as_read(message.text)
    assert dates_in(message.text) == [int((NOW + timedelta(hours=2)).timestamp())]


def test_keep_until_monday_uses_the_team_timezone(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    press(click_payload(slack, iid, "costguard.keep_monday"), runtime, env, lambda_context, monkeypatch)
    assert tags_of(iid)[tags.KEEP_UNTIL] == "2026-11-23T08:00:00Z"


def test_stop_now_stops_and_start_starts_again(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    press(click_payload(slack, iid, "costguard.stop_now", ts="2.2"), runtime, env, lambda_context, monkeypatch)
    state = ec2().describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state in ("stopping", "stopped")
    assert tags_of(iid)[tags.STOP_REASON] == "stopped from Slack by u0alice"
    press(click_payload(slack, iid, "costguard.start", ts="3.3"), runtime, env, lambda_context, monkeypatch)
    state = ec2().describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state in ("pending", "running")


def test_only_the_owner_or_an_admin_may_act(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    slack.users["mallory@example.com"] = "U0MALLORY"
    slack.groups["S0PLATFORM"] = ["U0PLATFORM"]
    iid = warned_instance()
    refused = press(click_payload(slack, iid, user="U0MALLORY", ts="4.4"), runtime, env, lambda_context, monkeypatch)
    assert refused["clicks"][0]["status"] == "refused"
    assert tags.KEEP_UNTIL not in tags_of(iid)
    [reply] = slack.ephemeral
    assert (reply["response_type"], reply["replace_original"]) == ("ephemeral", False)
    assert reply["text"] == "Only the owner (alice@example.com) or a costguard admin can do that."
    for admin, ts in (("U0ADMIN", "5.5"), ("U0PLATFORM", "6.6")):
        done = press(click_payload(slack, iid, user=admin, ts=ts), runtime, env, lambda_context, monkeypatch)
        assert done["clicks"][0]["status"] == "done", admin


def test_a_double_click_or_replayed_payload_does_one_thing(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    payload = click_payload(slack, iid, ts="7.7")
    first = press(payload, runtime, env, lambda_context, monkeypatch)
    second = press(payload, runtime, env, lambda_context, monkeypatch)
    assert [first["clicks"][0]["status"], second["clicks"][0]["status"]] == ["done", "duplicate"]
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName="costguard-state")["Items"]
    assert [i["kind"]["S"] for i in items if i["pk"]["S"].startswith("action#")] == ["keep"]


def test_notify_only_refuses_stop_now_and_dry_run_changes_nothing(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    notify_only = runtime_for(slack, Mode.NOTIFY_ONLY)
    iid = warned_instance()
    result = press(
        click_payload(slack, iid, "costguard.stop_now", ts="8.8"), notify_only, env, lambda_context, monkeypatch
    )
    assert result["clicks"][0]["status"] == "refused"
    assert "notify-only" in slack.ephemeral[-1]["text"]

    dry = Runtime(dataclasses.replace(notify_only.settings, mode=Mode.DRY_RUN), notify_only.clients)
    result = press(click_payload(slack, iid, ts="9.9"), dry, env, lambda_context, monkeypatch)
    assert result["clicks"][0]["status"] == "dry-run"
    assert tags.KEEP_UNTIL not in tags_of(iid)
    assert ec2().describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"] == "running"


def test_a_choice_in_the_warnings_overflow_menu_goes_through_the_receiver_and_the_worker_as_its_button(
    aws: None, slack: SlackStandIn, env: str, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack)
    iid = warned_instance()
    ts = post_warning(slack, iid)
    row = laid_out(warning_buttons(iid, REGION, will_stop=True))
    overflow = row[-1]
    assert overflow["type"] == "overflow"
    option = next(o for o in overflow["options"] if o["text"]["text"] == "Keep while it works")
    payload = click_payload(slack, iid, ts=ts)
    # What Slack sends for a choice in an overflow menu: the element's type and action_id, and the option chosen.
    payload["actions"] = [
        {
            "type": "overflow",
            "action_id": overflow["action_id"],
            "block_id": f"costguard:{iid}",
            "selected_option": option,
            "action_ts": "1763734100.123456",
        }
    ]
    result = press(payload, runtime, env, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": "costguard.keep_while_busy", "status": "done"}]
    assert tags.KEEP_WHILE_BUSY in tags_of(iid)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
