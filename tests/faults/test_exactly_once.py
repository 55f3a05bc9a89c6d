"""The findings of issue 23, one test each: a stop told and recorded twice after a retry, warnings
missing from the ledger, several duplicates for one kill, an owner tag whose record was lost, and a
sweep dead-lettered for a storm the next sweep absorbs. Each failed on the code before the fix."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.runtime import Runtime
from testing.handlers import load_handler
from testing.killpoints import KillSwitch
from testing.slack_standin import SlackStandIn
from testing.slack_text import notices
from tests.faults.conftest import armed_on, refuse, switch
from tests.integration.conftest import REGION, TABLE, ec2, tags_of
from tests.integration.test_idle_stopper import app, idle, launch, publish, warn_tags
from tests.integration.test_owner_tagger import event_for
from tests.integration.test_owner_tagger import launch as launch_untagged

SWEEP = {"costguard": "sweep"}
__all__ = ["switch"]
owner_tagger = load_handler("owner_tagger").lambda_handler


def sweep(runtime: Runtime, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(runtime, "now", lambda: at)
    return app.lambda_handler(SWEEP, context, runtime=runtime)


def killed_sweep(
    switch: KillSwitch, point: str, runtime: Runtime, at: datetime, context: Any, mp: pytest.MonkeyPatch, **kw: Any
) -> None:
    """A sweep killed at the first call of `point`."""
    with armed_on(switch, point, after=kw.get("after", False)):
        sweep(runtime, at, context, mp)


def ledger(kind: str) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == kind]


def stop_notices(slack: SlackStandIn) -> list[Any]:
    return notices(slack.messages, "stop")  # by the stop's marker: its warning, changed in place, is not one


def test_a_stop_whose_first_attempt_died_before_stopinstances_is_told_and_recorded_once(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: Any, switch: KillSwitch
) -> None:
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=60))
    publish(iid, now, gpus=[idle(), idle()])
    first = now - timedelta(minutes=20)

    killed_sweep(switch, "ec2:StopInstances", runtime, first, lambda_context, monkeypatch)
    sweep(runtime, first + timedelta(minutes=1), lambda_context, monkeypatch)  # Lambda's retry stops it
    sweep(runtime, first + timedelta(minutes=15), lambda_context, monkeypatch)  # the next scheduled sweep

    assert len(stop_notices(slack)) == 1, [m.text for m in slack.messages]
    [entry] = ledger("stop")
    # One stop, whichever attempt made it: its tag and its record say the same time.
    stopped_at = tags_of(iid)[tags.STOPPED_AT]
    assert formatting.parse_time(entry["at"]["S"]) == formatting.parse_time(stopped_at)


def test_warnings_whose_sweep_died_after_their_tags_reach_the_ledger(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: Any, switch: KillSwitch
) -> None:
    ids = [launch(now, owner=o) for o in ("alice@example.com", "carol@example.com")]
    for iid in ids:
        publish(iid, now, gpus=[idle(), idle()])
    first = now - timedelta(minutes=20)

    killed_sweep(switch, "ec2:CreateTags", runtime, first, lambda_context, monkeypatch, after=True)
    sweep(runtime, first + timedelta(minutes=1), lambda_context, monkeypatch)

    assert sorted(i["instance_id"]["S"] for i in ledger("warn")) == sorted(ids)
    assert len(slack.messages) == 2


def test_warnings_whose_ledger_write_was_throttled_out_reach_the_ledger(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: Any
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    first = now - timedelta(minutes=20)
    refuse(runtime.client("dynamodb"), "BatchWriteItem", "ProvisionedThroughputExceededException", times=3)

    with contextlib.suppress(RuntimeError):  # the code before the fix failed the sweep here
        sweep(runtime, first, lambda_context, monkeypatch)
    sweep(runtime, first + timedelta(minutes=15), lambda_context, monkeypatch)

    assert [i["instance_id"]["S"] for i in ledger("warn")] == [iid]
    assert len(slack.messages) == 1


def test_a_kill_while_eight_warnings_are_being_posted_costs_at_most_one_duplicate(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: Any, switch: KillSwitch
) -> None:
    owners = [f"owner{k}@example.com" for k in range(10)]
    slack.users.update({o: f"U0OWNER{k}" for k, o in enumerate(owners)})
    slack.latency_s = 0.2  # every thread's post is under way when the first one is answered
    ids = [launch(now, owner=o) for o in owners]
    for iid in ids:
        publish(iid, now, gpus=[idle()])
    first = now - timedelta(minutes=20)
    # Killed as the first warning is recorded: the other threads have posted theirs, unrecorded.
    killed_sweep(switch, "slack:chat.postMessage", runtime, first, lambda_context, monkeypatch, after=True)
    slack.latency_s = 0.0
    for later in (1, 3, 15):  # Lambda's two retries, then the next scheduled sweep
        sweep(runtime, first + timedelta(minutes=later), lambda_context, monkeypatch)

    warned = Counter(m.channel for m in notices(slack.messages, "warn"))
    assert set(warned) == {f"U0OWNER{k}" for k in range(10)}, "everyone warned"
    assert sum(warned.values()) - len(warned) <= 1, warned
    assert sorted(i["instance_id"]["S"] for i in ledger("warn")) == sorted(ids)
    for iid in ids:
        assert tags.IDLE_WARNED_AT in tags_of(iid)


def test_an_owner_tag_whose_ledger_record_was_lost_to_a_kill_is_recorded_on_redelivery(
    runtime: Runtime, lambda_context: Any, switch: KillSwitch
) -> None:
    iid = launch_untagged()
    event = event_for("runinstances-iam-user.json", iid)
    with armed_on(switch, "ec2:CreateTags", after=True):  # the instance's tags applied, then the end
        owner_tagger(event, lambda_context, runtime=runtime)
    assert tags_of(iid)["Owner"] == "alice"
    owner_tagger(event, lambda_context, runtime=runtime)  # EventBridge's retry

    [record] = [i for i in ledger("owner-tagged") if i["instance_id"]["S"] == iid]
    assert record["owner"]["S"] == "alice"
    assert "iam" in record["reason"]["S"].lower() or "alice" in record["reason"]["S"]


@pytest.mark.parametrize("operation", ["CreateTags", "StopInstances"])
def test_a_sweep_in_a_write_storm_ends_normally_and_the_next_sweep_finishes(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: Any,
    operation: str,
) -> None:
    warned = launch(now, tags=warn_tags(now, warned_minutes_ago=60))
    fresh = launch(now, owner="carol@example.com")
    for iid in (warned, fresh):
        publish(iid, now, gpus=[idle(), idle()])
    refuse(runtime.client("ec2", REGION), operation, "RequestLimitExceeded")

    result = sweep(runtime, now - timedelta(minutes=15), lambda_context, monkeypatch)  # no exception: no DLQ

    assert result["status"] == "done"
    assert result["regions"][REGION]["errors"], "what was left is reported"
    monkeypatch.setattr(runtime, "clients", type(runtime.clients)(default_region=REGION))  # the storm is over
    sweep(runtime, now, lambda_context, monkeypatch)
    state = ec2().describe_instances(InstanceIds=[warned])["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state in ("stopping", "stopped")
    assert tags.IDLE_WARNED_AT in tags_of(fresh)
    assert len(ledger("stop")) == 1
    assert [i["instance_id"]["S"] for i in ledger("warn")] == [fresh]


def test_a_post_found_in_slack_whose_record_a_storm_refuses_is_not_told_again(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: Any, switch: KillSwitch
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    first = now - timedelta(minutes=30)
    killed_sweep(switch, "slack:chat.postMessage", runtime, first, lambda_context, monkeypatch, after=True)
    # The next sweep finds the warning in Slack, but DynamoDB refuses to record it (throttled once).
    refuse(runtime.client("dynamodb"), "TransactWriteItems", "ThrottlingException", times=1)
    sweep(runtime, first + timedelta(minutes=15), lambda_context, monkeypatch)
    assert len(notices(slack.messages, "warn")) == 1
    monkeypatch.setattr(runtime, "clients", type(runtime.clients)(default_region=REGION))  # the storm is over
    sweep(runtime, first + timedelta(minutes=30), lambda_context, monkeypatch)

    assert len(notices(slack.messages, "warn")) == 1
    assert [i["instance_id"]["S"] for i in ledger("warn")] == [iid]
    assert tags_of(iid)[tags.IDLE_WARNED_AT] == formatting.format_time(first)
