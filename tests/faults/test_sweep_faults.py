"""The idle sweep killed or refused between its steps: every warning and stop told once (at most one
duplicate per kill between a post and its record), every stop recorded, no notice of a stop that did
not happen."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from costguard.core import tags
from costguard.core.formatting import format_time
from costguard.idle.sweep import idle_stopper
from costguard.runtime import Runtime
from testing import moto_fixes
from testing.killpoints import KillSwitch
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, dates_in, marked, notices
from tests.faults.conftest import Killed, armed_on, kill_at, refuse, switch
from tests.integration.conftest import REGION, TABLE, ec2, tags_of
from tests.integration.test_idle_stopper import app, idle, launch, publish, warn_tags

SWEEP = {"costguard": "sweep"}
__all__ = ["switch"]
# The killed sweep runs a sweep interval before `now`; the metrics reach `now`, so the retry sees fresh data.
EARLIER = timedelta(minutes=15)


def sweep(runtime: Runtime, at: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(runtime, "now", lambda: at)
    return app.lambda_handler(SWEEP, lambda_context, runtime=runtime)


def stop_entries() -> list[str]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i["instance_id"]["S"] for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "stop"]


def state(iid: str) -> str:
    return str(ec2().describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"])


def killed_right_after_its_stop(
    runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> str:
    """An idle machine warned an hour ago, whose sweep dies right after AWS took its stop; its id."""
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=60))
    publish(iid, now, gpus=[idle(), idle()])
    kill_at(runtime.client("ec2", REGION), "StopInstances", after=True)
    with pytest.raises(Killed):
        sweep(runtime, now - EARLIER, lambda_context, monkeypatch)
    return iid


def test_a_sweep_killed_after_its_warnings_but_before_their_tags_warns_nobody_twice(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    owners = ["alice@example.com", "carol@example.com"]
    ids = [launch(now, owner=o) for o in owners]
    for iid in ids:
        publish(iid, now, gpus=[idle(), idle()])
    kill_at(runtime.client("ec2", REGION), "CreateTags")

    with pytest.raises(Killed):
        sweep(runtime, now - EARLIER, lambda_context, monkeypatch)
    assert len(slack.messages) == 2  # both warned before the kill
    sweep(runtime, now, lambda_context, monkeypatch)

    assert len(slack.messages) == 2, [m.text for m in slack.messages]  # nobody warned twice
    for iid in ids:
        assert tags_of(iid)[tags.IDLE_WARNED_AT] == (now - EARLIER).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_sweep_killed_right_after_aws_took_its_stops_loses_neither_record_nor_notice(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = killed_right_after_its_stop(runtime, now, lambda_context, monkeypatch)
    assert state(iid) in ("stopping", "stopped")
    sweep(runtime, now, lambda_context, monkeypatch)

    assert stop_entries() == [iid]
    assert tags.STOPPED_AT in tags_of(iid)
    told = notices(slack.messages, "stop")
    assert len(told) == 1


def test_a_stop_whose_sweep_died_and_whose_owner_started_the_machine_again_is_still_recorded_and_told(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = killed_right_after_its_stop(runtime, now, lambda_context, monkeypatch)
    # Before the next sweep, its owner finds it stopped and starts it again (EC2 gives it a new launch time).
    ec2().start_instances(InstanceIds=[iid])
    moto_fixes.set_launch_time(iid, REGION, now - timedelta(minutes=5))
    sweep(runtime, now, lambda_context, monkeypatch)

    assert stop_entries() == [iid]  # costguard's stop is in the ledger
    told = notices(slack.messages, "stop")
    assert len(told) == 1  # and its owner learns why it stopped
    assert tags.STOPPED_AT not in tags_of(iid)  # it runs: no stopped-at tag on it


def test_a_pending_stop_of_a_machine_that_never_stopped_is_dropped(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=60))
    publish(iid, now, gpus=[idle(), idle()])
    kill_at(runtime.client("ec2", REGION), "StopInstances")  # killed before the call: AWS stopped nothing
    with pytest.raises(Killed):
        sweep(runtime, now - EARLIER, lambda_context, monkeypatch)
    assert state(iid) == "running"
    slack.messages.clear()
    idle_stopper(runtime, app._policy(), REGION).recovery.run(now)  # the next sweep's first step
    assert stop_entries() == []
    assert not notices(slack.messages, "stop")


def test_no_stop_notice_goes_out_for_a_stop_aws_refused(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=40))
    publish(iid, now, gpus=[idle(), idle()])
    refuse(runtime.client("ec2", REGION), "StopInstances", "OperationNotPermitted")

    sweep(runtime, now, lambda_context, monkeypatch)

    assert state(iid) == "running"
    assert not notices(slack.messages, "stop")
    assert [m.text for m in slack.messages] == [f"Could not stop idle g5.12xlarge {iid}: OperationNotPermitted"]
    assert stop_entries() == []


def test_a_stop_notice_killed_after_it_was_posted_is_found_in_slack_not_sent_again(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    switch: KillSwitch,
) -> None:
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=60))
    publish(iid, now, gpus=[idle(), idle()])
    first = now - timedelta(minutes=20)
    with armed_on(switch, "slack:chat.postMessage", after=True):  # posted; its record never written
        sweep(runtime, first, lambda_context, monkeypatch)
    assert len(notices(slack.messages, "stop")) == 1
    for later in (1, 3, 15):  # Lambda's two retries, then the next scheduled sweep
        sweep(runtime, first + timedelta(minutes=later), lambda_context, monkeypatch)

    told = notices(slack.messages, "stop")
    assert len(told) == 1  # its lease ran out, and Slack's history showed it had gone: not sent again
    assert stop_entries() == [iid]
    assert "conversations.history" in slack.calls


def test_a_warning_posted_by_a_killed_sweep_waits_for_slacks_history_and_is_recorded_once(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    switch: KillSwitch,
) -> None:
    """Posted, then killed before its record; when the next sweeps cannot read Slack's history, the warning is
    neither forgotten (warned again, the first with no ledger entry) nor taken as sent: its machine waits."""
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    first = now - timedelta(minutes=30)
    with armed_on(switch, "slack:chat.postMessage", after=True):
        sweep(runtime, first, lambda_context, monkeypatch)
    assert len(notices(slack.messages, "warn")) == 1
    slack.fail("conversations.history", 500, count=10)  # every lookup of the next sweep, with its retries
    sweep(runtime, first + timedelta(minutes=15), lambda_context, monkeypatch)
    assert len(notices(slack.messages, "warn")) == 1  # not warned again while it cannot be known
    slack.faults.clear()
    sweep(runtime, now, lambda_context, monkeypatch)

    assert len(notices(slack.messages, "warn")) == 1
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    warns = [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "warn"]
    assert [(w["instance_id"]["S"], w["at"]["S"][:16]) for w in warns] == [(iid, first.isoformat()[:16])]
    assert tags_of(iid)[tags.IDLE_WARNED_AT] == first.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_throttled_writes_are_retried_by_the_next_sweep_and_nothing_is_lost(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=60))
    publish(iid, now, gpus=[idle(), idle()])
    refuse(runtime.client("ec2", REGION), "StopInstances", "RequestLimitExceeded", times=2)  # the batch, then alone

    result = sweep(runtime, now - EARLIER, lambda_context, monkeypatch)  # ends normally: no retry, no DLQ
    assert "RequestLimitExceeded" in result["regions"][REGION]["errors"][0]
    assert state(iid) == "running"
    assert not slack.messages, "no notice for a stop that did not happen"
    sweep(runtime, now, lambda_context, monkeypatch)
    assert state(iid) in ("stopping", "stopped")
    assert len(notices(slack.messages, "stop")) == 1
    assert stop_entries() == [iid]


@pytest.mark.parametrize(
    "kill",
    [("ec2", "CreateTags", False, 0), ("dynamodb", "TransactWriteItems", True, 1)],
    ids=["before its tags", "right after its transaction"],  # the 1st transaction is its lease, the 2nd its record
)
def test_a_warning_killed_before_its_tags_is_withdrawn_by_a_sweep_that_finds_a_data_gap(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    kill: tuple[str, str, bool, int],
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])  # the last point 5 minutes before `now`, then none
    service, operation, after, skip = kill
    kill_at(runtime.client(service, REGION), operation, after=after, skip=skip)
    with pytest.raises(Killed):
        sweep(runtime, now - EARLIER, lambda_context, monkeypatch)
    withdrawn_after_a_gap(iid, runtime, slack, now, lambda_context, monkeypatch)


def test_a_warning_posted_by_a_sweep_killed_before_any_record_is_withdrawn_by_one_that_finds_a_data_gap(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    switch: KillSwitch,
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    with armed_on(switch, "slack:chat.postMessage", after=True):  # posted; neither its message nor it recorded
        sweep(runtime, now - EARLIER, lambda_context, monkeypatch)
    withdrawn_after_a_gap(iid, runtime, slack, now, lambda_context, monkeypatch)


def withdrawn_after_a_gap(
    iid: str, runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: Any
) -> None:
    """The warning a killed sweep posted, then a sweep 25 minutes after the machine's last point: the warning
    says it will not be carried out, and nothing is left to complete it later."""
    [warning] = notices(slack.messages, "warn")
    assert "costguard stops it" in as_read(warning.blocks)

    sweep(runtime, now + timedelta(minutes=20), lambda_context, monkeypatch)  # 25 minutes without a point

    [warning] = notices(slack.messages, "warn")  # changed in place, not told again
    said = as_read(warning.blocks)
    assert "costguard stops it" not in said
    assert "costguard will not stop it now" in said
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert state(iid) == "running"
    left = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    assert [i["sk"]["S"] for i in left if i["pk"]["S"].startswith("outbox#")] == []  # no warning to complete later


def test_every_stop_held_back_by_a_30_minute_429_storm_is_announced_within_two_sweeps_after_it(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    owners = [f"owner{k}@example.com" for k in range(6)]
    slack.users.update({o: f"U0OWNER{k}" for k, o in enumerate(owners)})
    ids = [launch(now, owner=o, tags=warn_tags(now, warned_minutes_ago=80)) for o in [*owners, "nobody@example.com"]]
    for iid in ids:
        publish(iid, now, gpus=[idle(), idle()])
    storm = ("chat.postMessage", "chat.update", "conversations.history", "users.lookupByEmail")
    for method in storm:  # Slack asks for more than the invocation has: nothing waits, nothing goes out
        slack.fail(method, 429, count=10_000, retry_after=1_000)
    for minutes in (0, 15):  # the storm's 30 minutes: the first sweep stops them all
        sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)
    assert [state(i) for i in ids] == ["stopped"] * len(ids)
    assert notices(slack.messages, "stop") == []
    slack.faults.clear()  # the storm is over

    told: dict[str, Any] = {}
    for minutes in (30, 45):
        sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)
        told |= {m.ts: m for m in notices(slack.messages, "stop")}
    stopped_told = {iid for m in told.values() for b in marked(m, "stop") for iid in ids if iid in b}
    assert stopped_told == set(ids)
    for message in told.values():  # when the stop happened, not when its notice went out
        assert int(now.timestamp()) in dates_in(message.blocks), as_read(message.blocks)


def test_a_warning_whose_tags_a_storm_refuses_for_an_hour_is_completed_after_it_not_told_again(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now)
    storm = [True]

    def refused(**_: Any) -> None:
        if storm[0]:
            raise ClientError({"Error": {"Code": "RequestLimitExceeded", "Message": "storm"}}, "CreateTags")

    def idle_sweep(minutes: int) -> None:
        publish(iid, now + timedelta(minutes=minutes), gpus=[idle(), idle()])  # idle up to each sweep
        sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)

    runtime.client("ec2", REGION).meta.events.register("before-call.ec2.CreateTags", refused)
    idle_sweep(0)  # the warning told, its tags refused (the next sweeps' too, while the storm lasts)
    [warning] = notices(slack.messages, "warn")
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    storm[0] = False
    idle_sweep(45)  # the storm over, after the warning's record would have been let go (40 minutes)

    assert notices(slack.messages, "warn") == [warning]  # its record is the warning: completed, not told again
    assert tags_of(iid)[tags.IDLE_WARNED_AT] == format_time(now)
    idle_sweep(60)
    assert state(iid) == "stopped"  # the promise kept, late


def test_a_warning_its_owner_kept_is_neither_completed_nor_withdrawn_by_the_next_sweep(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keep takes the warning's tags off (the buttons worker does, and says so in the message): the warning's
    record, still in the outbox for a while, is then no untagged warning to complete or withdraw."""
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    sweep(runtime, now - EARLIER, lambda_context, monkeypatch)
    [warning] = notices(slack.messages, "warn")
    assert tags.IDLE_WARNED_AT in tags_of(iid)
    until = format_time(now + timedelta(hours=2))
    ec2().create_tags(
        Resources=[iid], Tags=[{"Key": tags.KEEP_UNTIL, "Value": until}, {"Key": tags.KEPT_BY, "Value": "alice"}]
    )
    ec2().delete_tags(Resources=[iid], Tags=[{"Key": k} for k in tags.WARNING_TAGS])

    result = sweep(runtime, now, lambda_context, monkeypatch)

    [decision] = [d for d in result["regions"][REGION]["decisions"] if d["instance_id"] == iid]
    assert decision["action"] == "skip", decision
    assert "costguard will not stop it now" not in as_read(warning.blocks)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
