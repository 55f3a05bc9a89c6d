"""No message goes on promising a stop that will not happen: a warning is carried out, or withdrawn in its own
message no later than the next sweep that can write, whatever DynamoDB refused on the way (the fault week's
storms on BatchWriteItem and PutItem left warnings saying "costguard stops it" for hours)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from costguard.core import tags
from costguard.core.formatting import format_time
from costguard.idle.sweep import idle_stopper  # noqa: F401 (the sweep's modules loaded before a hook is set)
from costguard.runtime import Runtime
from testing.killpoints import KillSwitch
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, marked, notices
from tests.faults.conftest import Killed, armed_on, kill_at, switch
from tests.faults.test_sweep_faults import state, sweep
from tests.integration.conftest import REGION, TABLE, answers, midday, report, tags_of
from tests.integration.test_activity_check import sweep as check_sweep
from tests.integration.test_activity_check import warned_machine
from tests.integration.test_idle_stopper import idle, launch, publish

PROMISE = "costguard stops it"
WITHDRAWN = "costguard will not stop it now"
__all__ = ["answers", "switch"]


def storm(client: Any, operation: str, *, event: str = "before-call") -> Callable[[bool], None]:
    """Every call of `operation` refused while the storm is on (it starts on); the switch that ends it."""
    on = [True]

    def refused(**_: Any) -> None:
        if on[0]:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "storm"}}, operation)

    prefix = client.meta.service_model.endpoint_prefix
    client.meta.events.register(f"{event}.{prefix}.{operation}", refused)
    return lambda state: on.__setitem__(0, state)


def busy(n: int = 6) -> list[float]:
    return [90.0] * n


def stale_marks() -> list[str]:
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=TABLE, Key={"pk": {"S": "live-stale"}, "sk": {"S": "live-stale"}}
    )
    return list(item.get("Item", {}).get("messages", {}).get("SS", []))


def outbox_keys() -> list[str]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i["sk"]["S"] for i in items if i["pk"]["S"].startswith("outbox#")]


def warned_a_sweep_ago(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> str:
    """An idle machine whose warning, posted by the sweep a sweep interval ago, promises its stop: its id."""
    iid = launch(now)
    publish(iid, now - timedelta(minutes=15), gpus=[idle(), idle()])
    sweep(runtime, now - timedelta(minutes=15), lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)
    return iid


def test_a_warning_posted_while_batch_writes_are_refused_says_so_when_its_machine_works_again(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The storm refuses the batch that keeps the warning's message (to change it later): the message is kept
    an item at a time, so that the sweep that finds the machine at work says so in it."""
    iid = launch(now)
    publish(iid, now - timedelta(minutes=15), gpus=[idle(), idle()])
    end = storm(runtime.client("dynamodb", REGION), "BatchWriteItem")
    sweep(runtime, now - timedelta(minutes=15), lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)
    assert tags.IDLE_WARNED_AT in tags_of(iid)
    end(False)

    publish(iid, now, gpus=[busy(), busy()])  # at work again before its stop time
    sweep(runtime, now, lambda_context, monkeypatch)

    [warning] = notices(slack.messages, "warn")  # changed in place
    assert PROMISE not in as_read(warning.blocks)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert state(iid) == "running"


def test_a_withdrawal_its_message_could_not_show_in_a_put_item_storm_is_shown_by_the_next_sweep(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = warned_a_sweep_ago(runtime, slack, now, lambda_context, monkeypatch)

    end = storm(runtime.client("dynamodb", REGION), "PutItem")  # the message's record cannot be changed
    publish(iid, now, gpus=[busy(), busy()])
    sweep(runtime, now, lambda_context, monkeypatch)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)  # withdrawn: its tags gone, its ledger record written
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)  # but the storm kept the message from saying so
    end(False)

    publish(iid, now + timedelta(minutes=15), gpus=[busy(3), busy(3)])
    sweep(runtime, now + timedelta(minutes=15), lambda_context, monkeypatch)

    [warning] = notices(slack.messages, "warn")
    said = as_read(warning.blocks)
    assert PROMISE not in said
    assert WITHDRAWN in said
    assert outbox_keys() == []  # nothing left to show


def test_a_warning_past_its_stop_time_that_a_read_keeps_the_sweeps_from_carrying_out_is_withdrawn(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Missing data is never idleness: a stop that waits for a read that keeps failing (here the machine's last
    two weeks, to see whether work recurs on it) is not made, and its warning says so in place."""
    iid = launch(now)
    publish(iid, now - timedelta(minutes=45), gpus=[idle(), idle()])
    sweep(runtime, now - timedelta(minutes=45), lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)

    fortnight = [False]

    def asked(params: dict[str, Any], **_: Any) -> None:
        fortnight[0] = params["EndTime"] - params["StartTime"] > timedelta(days=2)

    def unanswered(parsed: dict[str, Any], **_: Any) -> None:  # CloudWatch's own word for a series it failed
        for result in parsed.get("MetricDataResults", []) if fortnight[0] else []:
            result["StatusCode"] = "InternalError"

    cloudwatch = runtime.client("cloudwatch", REGION)
    cloudwatch.meta.events.register("provide-client-params.monitoring.GetMetricData", asked)
    cloudwatch.meta.events.register("after-call.monitoring.GetMetricData", unanswered)
    for minutes in (-30, -15, 0):  # its grace, its stop time (now - 15 min), then the next sweep
        publish(iid, now + timedelta(minutes=minutes), gpus=[idle(3), idle(3)])
        sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)
        if minutes == -15:
            assert PROMISE in as_read(notices(slack.messages, "warn")[0].blocks)  # one late read is waited for

    assert state(iid) == "running"
    [warning] = notices(slack.messages, "warn")
    said = as_read(warning.blocks)
    assert PROMISE not in said
    assert WITHDRAWN in said
    assert tags.IDLE_WARNED_AT not in tags_of(iid)


def test_a_withdrawal_killed_between_its_record_and_slacks_edit_is_shown_by_the_next_sweep(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    switch: KillSwitch,
) -> None:
    """The message's record says the machine is at work again, then Lambda ends the invocation before Slack's edit:
    the next sweep, which has nothing new to say about the machine, shows the message as its record says."""
    iid = warned_a_sweep_ago(runtime, slack, now, lambda_context, monkeypatch)

    publish(iid, now, gpus=[busy(), busy()])
    with armed_on(switch, "slack:chat.update"):
        sweep(runtime, now, lambda_context, monkeypatch)
    assert switch.passed[-2:] == ["dynamodb:PutItem", "slack:chat.update"]  # the record written, then killed
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert PROMISE in as_read(notices(slack.messages, "warn")[0].blocks)

    publish(iid, now + timedelta(minutes=15), gpus=[busy(3), busy(3)])
    sweep(runtime, now + timedelta(minutes=15), lambda_context, monkeypatch)

    [warning] = notices(slack.messages, "warn")  # changed in place, as the killed sweep's record says
    said = as_read(warning.blocks)
    assert PROMISE not in said
    assert "At work again: costguard does not stop it." in said
    sweep(runtime, now + timedelta(minutes=30), lambda_context, monkeypatch)  # its mark, found twice, cleared
    assert stale_marks() == []


def test_a_withdrawal_killed_after_its_tags_went_and_before_its_message_changed_is_shown_by_the_retry(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep that finds the machine at work again removes the warning's tags, then Lambda ends it before it
    changes the message: the retry finds no warning on the machine, so only what the sweep kept before its
    writes can tell it that the message still promises the stop."""
    iid = warned_a_sweep_ago(runtime, slack, now, lambda_context, monkeypatch)

    publish(iid, now, gpus=[busy(), busy()])
    cleared = [False]  # the kill: at the sweep's first read of its messages once the tags are gone

    def tags_gone(**_: Any) -> None:
        cleared[0] = True

    def dead(**_: Any) -> None:
        if cleared[0]:
            raise Killed("after the clear, before the edit")

    runtime.client("ec2", REGION).meta.events.register("after-call.ec2.DeleteTags", tags_gone)
    dynamodb = runtime.client("dynamodb", REGION)
    for operation in ("GetItem", "BatchGetItem"):
        dynamodb.meta.events.register(f"before-call.dynamodb.{operation}", dead)
    with pytest.raises(Killed):
        sweep(runtime, now, lambda_context, monkeypatch)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)  # withdrawn on the machine
    assert PROMISE in as_read(notices(slack.messages, "warn")[0].blocks)  # not yet in its message

    cleared[0] = False
    sweep(runtime, now + timedelta(minutes=1), lambda_context, monkeypatch)  # Lambda's retry

    [warning] = notices(slack.messages, "warn")
    said = as_read(warning.blocks)
    assert PROMISE not in said
    assert WITHDRAWN in said or "At work again: costguard does not stop it." in said
    assert len(slack.messages) == 1  # said in place, nothing posted
    assert outbox_keys() == []


def test_a_warning_withdrawn_soon_after_an_earlier_one_of_its_machine_says_so_too(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under faults a machine may be warned again minutes after a warning of it was withdrawn (a sweep that could
    not ask the machine judges it on its metrics). The first withdrawal's record, kept 40 minutes, is that
    warning's: the second warning, withdrawn in turn, says so too, instead of promising its stop for good. In
    the day: in the evening, a machine that cannot answer and whose nights costguard has not watched is held
    (rules/automation.py), and is not warned again."""
    now = midday(now)
    iid = warned_machine(now)
    answers[iid] = report(sessions=[{"tty": "pts/1", "idle_s": 50}])
    check_sweep(runtime, now, lambda_context, monkeypatch)
    [first] = slack.messages
    assert marked(first, "cancel")

    del answers[iid]  # not asked: judged on its metrics alone, and warned again
    publish(iid, now + timedelta(minutes=1), gpus=[idle(), idle(), idle(), idle()])
    check_sweep(runtime, now + timedelta(minutes=1), lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)

    stop_time = datetime.fromisoformat(tags_of(iid)[tags.STOP_AFTER].replace("Z", "+00:00"))
    assert stop_time - now < timedelta(minutes=40)  # the first withdrawal's record still stands
    answers[iid] = report(sessions=[{"tty": "pts/1", "idle_s": 50}])
    publish(iid, stop_time, gpus=[idle(), idle(), idle(), idle()])
    check_sweep(runtime, stop_time, lambda_context, monkeypatch)

    assert state(iid) == "running"
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE not in as_read(warning.blocks), [m.text for m in slack.messages]


def test_a_withdrawal_told_apart_after_its_warning_could_not_change_says_so_in_the_warning_later(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warning's message is found, but its record cannot be read to change it, and a second read of where it
    is fails too: the withdrawal goes out as a message of its own, and the warning, whose place was found once,
    is kept to be changed by the next sweep, instead of promising its stop for good."""
    iid = launch(now)
    answers[iid] = report()  # nothing alive: warned
    publish(iid, now - timedelta(minutes=30), gpus=[idle(), idle()])
    check_sweep(runtime, now - timedelta(minutes=30), lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)

    pointers: list[str] = []

    def refused(params: dict[str, Any], **_: Any) -> None:
        key = str(params.get("Key", {}).get("pk", {}).get("S", ""))
        if key.startswith("live-of#"):
            pointers.append(key)
        if key.startswith("live#") or len(pointers) > 1:  # the message's record, then where it is, unread
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected"}}, "GetItem")

    dynamodb = runtime.client("dynamodb", REGION)
    dynamodb.meta.events.register("provide-client-params.dynamodb.GetItem", refused)
    answers[iid] = report(sessions=[{"tty": "pts/1", "idle_s": 50}])
    publish(iid, now, gpus=[idle(), idle()])
    check_sweep(runtime, now, lambda_context, monkeypatch)
    dynamodb.meta.events.unregister("provide-client-params.dynamodb.GetItem", refused)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert [m for m in slack.messages if marked(m, "cancel")]  # told apart
    assert PROMISE in as_read(notices(slack.messages, "warn")[0].blocks)

    publish(iid, now + timedelta(minutes=15), gpus=[idle(), idle()])
    check_sweep(runtime, now + timedelta(minutes=15), lambda_context, monkeypatch)

    said = as_read(notices(slack.messages, "warn")[0].blocks)
    assert PROMISE not in said
    assert WITHDRAWN in said


def test_a_warning_killed_before_its_tags_on_a_machine_tagged_by_an_older_warning_is_completed_by_the_retry(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine carries an older warning's tag, one that promised no stop (it had no GPU data then). The sweep
    warns it again, promising a stop, and is killed after recording the warning, before its tags. The record is the
    newer warning: the retry completes it (its tags), instead of taking the older tag for it and leaving the
    message promising a stop no sweep will make."""
    older = format_time(now - timedelta(hours=1))
    iid = launch(now, tags={tags.IDLE_WARNED_AT: older})
    publish(iid, now, gpus=[idle(), idle()])
    kill_at(runtime.client("ec2", REGION), "CreateTags")
    with pytest.raises(Killed):
        sweep(runtime, now, lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)
    assert tags_of(iid)[tags.IDLE_WARNED_AT] == older

    sweep(runtime, now + timedelta(minutes=1), lambda_context, monkeypatch)  # Lambda's retry

    assert tags_of(iid)[tags.IDLE_WARNED_AT] == format_time(now)
    assert tags_of(iid)[tags.STOP_AFTER] == format_time(now + timedelta(minutes=30))
    assert len(notices(slack.messages, "warn")) == 1


@pytest.mark.parametrize("older_tag", [False, True], ids=["untagged machine", "older warning's tag"])
def test_a_warning_killed_before_its_tags_is_completed_once_its_record_is_past_its_lease(
    older_tag: bool,
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As above, but the sweep that completes the warning comes once its record's lease has run out (the sweeps in
    between had their CreateTags refused): an older warning's tag is still not this warning's. Before, the record
    was dropped as stale, the machine warned a second time, and the first message went on promising its stop
    (fails on fd767fe)."""
    older = format_time(now - timedelta(hours=1))
    iid = launch(now, tags={tags.IDLE_WARNED_AT: older} if older_tag else {})
    publish(iid, now, gpus=[idle(), idle()])
    kill_at(runtime.client("ec2", REGION), "CreateTags")
    with pytest.raises(Killed):
        sweep(runtime, now, lambda_context, monkeypatch)
    later = now + timedelta(minutes=45)  # past the record's 40-minute lease
    publish(iid, later, gpus=[idle(), idle()])

    sweep(runtime, later, lambda_context, monkeypatch)

    assert tags_of(iid)[tags.IDLE_WARNED_AT] == format_time(now)
    assert len(notices(slack.messages, "warn")) == 1


def test_a_warning_found_in_slacks_history_is_kept_to_change_though_the_outbox_cleanup_is_refused(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    switch: KillSwitch,
) -> None:
    """The sweep is killed right after Slack took its warning. The next one finds the post in Slack's history and
    records it, but a BatchWriteItem storm refuses the outbox's cleanup (an old record to drop): the warning's
    message is still kept, to be changed later, so the sweep that finds the machine at work says so in it."""
    iid = launch(now)
    publish(iid, now - timedelta(minutes=30), gpus=[idle(), idle()])
    with armed_on(switch, "slack:chat.postMessage", after=True):
        sweep(runtime, now - timedelta(minutes=30), lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert PROMISE in as_read(warning.blocks)

    old = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    boto3.client("dynamodb", region_name=REGION).put_item(  # a delivered warning of a machine long gone: dropped
        TableName=TABLE,
        Item={
            "pk": {"S": f"outbox#{REGION}"},
            "sk": {"S": "warn#i-0gone"},
            "kind": {"S": "warn"},
            "instance_id": {"S": "i-0gone"},
            "at": {"S": old},
            "status": {"S": "delivered"},
            "lease_until": {"N": "1"},
        },
    )
    end = storm(runtime.client("dynamodb", REGION), "BatchWriteItem")
    publish(iid, now - timedelta(minutes=15), gpus=[idle(), idle()])
    sweep(runtime, now - timedelta(minutes=15), lambda_context, monkeypatch)
    end(False)
    assert len(notices(slack.messages, "warn")) == 1  # found, not posted again

    publish(iid, now, gpus=[busy(), busy()])
    sweep(runtime, now, lambda_context, monkeypatch)

    [warning] = notices(slack.messages, "warn")
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert PROMISE not in as_read(warning.blocks)
