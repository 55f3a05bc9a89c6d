"""Scarce capacity, through the handler: a start EC2 refuses for capacity is told to the owner at once,
tried again at the next sweeps and made when capacity returns; an idle machine of a scarce type is not
warned or stopped while its owner works (told once a day, with the evidence), and is after."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from costguard.aws.ec2 import Ec2
from costguard.core import formatting, tags
from costguard.core.scarcity import FailedStart
from costguard.idle.rules.schedule import parse_schedule
from costguard.runtime import Runtime
from costguard.state.capacity import CapacityLog
from costguard.state.entries import EntryKind
from costguard.state.startlog import DAY, StartLog, StartRecord
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, notices
from tests.integration.conftest import REGION, TABLE, ec2, tags_of
from tests.integration.test_idle_stopper import (
    SWEEP,
    idle,
    launch,
    publish,
    run,
    schedule_around,
    state_of,
    warn_tags,
)
from tests.integration.test_learned_starts import quarter, quarterly

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone
QUARTER = timedelta(minutes=15)


def refused_first(times: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """EC2 refuses the first `times` starts for capacity, as it does in a GPU shortage; the starts asked."""
    asked: list[str] = []
    start = Ec2.start

    def short_of_capacity(self: Ec2, instance_id: str) -> bool:
        asked.append(instance_id)
        if len(asked) <= times:
            message = "We currently do not have sufficient capacity"
            raise ClientError({"Error": {"Code": "InsufficientInstanceCapacity", "Message": message}}, "StartInstances")
        return start(self, instance_id)

    monkeypatch.setattr(Ec2, "start", short_of_capacity)
    return asked


def entries(kind: str) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i for i in items if i.get("kind", {}).get("S") == kind]


def refusals_told(slack: SlackStandIn) -> list[Any]:
    return [m for m in slack.messages if "Start refused" in json.dumps(m.blocks)]


def test_a_start_refused_for_capacity_is_told_at_once_tried_again_and_made_when_capacity_returns(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, "p4d.24xlarge", tags={tags.SCHEDULE: schedule_around(now, 0, 8)})  # its hours open now
    ec2().stop_instances(InstanceIds=[iid])
    asked = refused_first(2, monkeypatch)

    first = run(SWEEP, runtime, now - timedelta(minutes=10), lambda_context, monkeypatch)
    assert first["regions"][REGION]["started"] == []
    [told] = refusals_told(slack)
    assert told.channel == "U0ALICE"  # its owner, at once
    assert "tries again every sweep until" in json.dumps(told.blocks)
    assert "Skip the planned start" not in json.dumps(told.blocks)  # a working-hours start: not one to skip
    [failed] = entries("start-failed")  # for the digest
    assert failed["instance_id"]["S"] == iid
    assert failed["reason"]["S"].startswith("InsufficientInstanceCapacity in ")

    run(SWEEP, runtime, now + timedelta(minutes=5), lambda_context, monkeypatch)  # its hours open: tried again
    assert asked == [iid, iid]
    assert state_of(iid) == "stopped"
    assert len(refusals_told(slack)) == 1  # told once per start, not once per refusal
    assert len(entries("start-failed")) == 1

    third = run(SWEEP, runtime, now + timedelta(minutes=20), lambda_context, monkeypatch)
    assert third["regions"][REGION]["started"] == [iid]
    assert state_of(iid) in ("pending", "running")
    [morning] = entries("morning-start")
    assert [step["M"]["why"]["S"] for step in morning["trail"]["L"]] == [morning["reason"]["S"]]


def test_a_start_refused_for_another_reason_is_not_taken_for_scarcity_nor_tried_again_late(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, "p4d.24xlarge", tags={tags.SCHEDULE: schedule_around(now, 0, 8)})
    ec2().stop_instances(InstanceIds=[iid])
    asked: list[str] = []

    def refused(self: Ec2, instance_id: str) -> bool:
        asked.append(instance_id)
        raise ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "no"}}, "StartInstances")

    monkeypatch.setattr(Ec2, "start", refused)
    run(SWEEP, runtime, now - timedelta(minutes=10), lambda_context, monkeypatch)
    run(SWEEP, runtime, now + timedelta(minutes=5), lambda_context, monkeypatch)
    assert asked == [iid]  # tried in its lead only, as before
    assert refusals_told(slack) == []
    assert entries("start-failed") == []


def test_an_idle_scarce_machine_is_left_running_while_its_owner_works_said_once_a_day_and_warned_after(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, "p4d.24xlarge")
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    failures = [
        FailedStart("p4d.24xlarge", "", now - timedelta(hours=h), "CloudTrail", region=REGION) for h in (2, 5, 9)
    ]
    CapacityLog(boto3.client("dynamodb", region_name=REGION), TABLE).add(REGION, failures, read_until=now)
    working = {"now": True}
    monkeypatch.setattr("costguard.idle.rules.pipeline.working_now", lambda *_: working["now"])

    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    [told] = [m for m in slack.messages if "hard to get back" in json.dumps(m.blocks)]
    assert told.channel == "U0ALICE"
    assert "3 p4d.24xlarge starts failed for capacity this week" in json.dumps(told.blocks)

    [left] = entries("left-running")  # the ledger keeps the day's decision, with its trail
    assert left["instance_id"]["S"] == iid
    rules = [step["M"]["rule"]["S"] for step in left["trail"]["L"]]
    assert rules[0] == "idle verdict"
    assert "scarce capacity" in rules

    run(SWEEP, runtime, now, lambda_context, monkeypatch)  # the next sweep, on the same data
    assert len([m for m in slack.messages if "hard to get back" in json.dumps(m.blocks)]) == 1  # once a day
    assert len(entries("left-running")) == 1  # recorded with the day's tell, not with every sweep

    working["now"] = False  # the evening: warned and stopped as any other
    # Its owner's day twelve hours off: a run of this test at 05:00 UTC found the team's 08:00 too near to stop
    # for (a stop before a start that soon does not pay, rightly), and nothing warned.
    back = now + timedelta(hours=12)
    hours = parse_schedule(f"daily {back:%H:%M}-{back + timedelta(hours=1):%H:%M} UTC")
    monkeypatch.setattr("costguard.idle.rules.capacity.owners_hours", lambda *_: hours)
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert tags.STOP_AFTER in tags_of(iid)
    assert state_of(iid) == "running"


def test_a_scarce_machine_stopped_after_hours_is_promised_a_start_before_the_next_working_day(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, "p4d.24xlarge", tags=warn_tags(now, 35))  # warned, its grace over
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    failures = [FailedStart("p4d.24xlarge", "", now - timedelta(hours=h), "CloudTrail", region=REGION) for h in (2, 5)]
    CapacityLog(boto3.client("dynamodb", region_name=REGION), TABLE).add(REGION, failures, read_until=now)
    monkeypatch.setattr("costguard.idle.rules.pipeline.working_now", lambda *_: False)
    back = now + timedelta(hours=12)  # its owner's day far enough off for a stop to pay, at any hour of the run
    hours = parse_schedule(f"daily {back:%H:%M}-{back + timedelta(hours=1):%H:%M} UTC")
    monkeypatch.setattr("costguard.idle.rules.capacity.owners_hours", lambda *_: hours)

    run(SWEEP, runtime, now, lambda_context, monkeypatch)

    assert state_of(iid) in ("stopping", "stopped")
    start_at = formatting.parse_time(tags_of(iid).get(tags.START_AT))
    opens = hours.next_start(now)
    assert start_at == opens - timedelta(minutes=15)  # its lead before its owner's day; made 45 min sooner still
    [notice] = notices(slack.messages, "stop")
    said = as_read(notice.blocks)
    assert "It might not start again when its owner's day begins" in said
    assert f"costguard starts it again *{start_at:%a %d %b %H:%M} UTC*, before the working day." in said

    # Started for its owner's day: kept and recorded as such, never judged as a learned run's start (which a
    # morning without work at that time would count against a pattern near it).
    assert run(SWEEP, runtime, start_at, lambda_context, monkeypatch)["regions"][REGION]["started"] == [iid]
    [made] = StartLog(boto3.client("dynamodb", region_name=REGION), TABLE).fetch(iid).starts
    assert made["o"] == DAY
    assert len(entries(EntryKind.DAY_START.value)) == 1
    assert entries(EntryKind.LEARNED_START.value) == []


def late_morning(now: datetime) -> datetime:
    """The last weekday's 11:30 UTC at or before `now` (the team's clock is UTC in these tests)."""
    at = now.replace(hour=11, minute=30)
    while at > now or at.weekday() >= 5:
        at -= timedelta(days=1)
    return at


@pytest.mark.parametrize("readied_by", ["costguard", "its person"])
def test_a_scarce_machine_costguard_readied_for_a_day_its_person_does_not_come_is_warned_not_spared(
    readied_by: str,
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A p4d whose person began work on it at 09:00 or 10:00 on seven weekdays of the last two weeks, started at
    07:00 today before its owner's day and idle since: at 11:30, an hour past the latest time its person began,
    it is warned (and would be stopped after its grace, readied again for the next day). Started at 07:00 by
    someone costguard only found it started by, it is spared through its owner's day, as before."""
    at = late_morning(now)
    iid = launch(at, "p4d.24xlarge", hours=4.5)  # 07:00
    busy: set[datetime] = set()
    worked = [d for d in (at - timedelta(days=k) for k in range(1, 14)) if d.weekday() < 5][:7]
    for n, day in enumerate(worked):
        begin = day.replace(hour=9 + n % 2, minute=0)
        busy |= {begin + QUARTER * k for k in range(8)}
    begin = quarter(at) - timedelta(days=14)
    quarterly(iid, [begin + QUARTER * k for k in range(14 * 96) if begin + QUARTER * k < at - timedelta(hours=3)], busy)
    publish(iid, at, gpus=[idle(36)], cpu=idle(36))  # the last three hours: idle
    failures = [FailedStart("p4d.24xlarge", "", at - timedelta(hours=h), "CloudTrail", region=REGION) for h in (2, 5)]
    CapacityLog(boto3.client("dynamodb", region_name=REGION), TABLE).add(REGION, failures, read_until=at)
    started = formatting.format_time(at.replace(hour=7, minute=0))
    expected = formatting.format_time(at.replace(hour=8, minute=0))
    log = StartLog(boto3.client("dynamodb", region_name=REGION), TABLE)
    log.made(iid, expected, started, StartRecord(), at, day=True, called=readied_by == "costguard")

    run(SWEEP, runtime, at, lambda_context, monkeypatch)

    if readied_by == "its person":
        assert tags.IDLE_WARNED_AT not in tags_of(iid)  # spared: someone is about
        return
    assert tags.STOP_AFTER in tags_of(iid)
    [warning] = [m for m in slack.messages if m.channel == "U0ALICE" and "Idle GPU machine" in json.dumps(m.blocks)]
    said = as_read(warning.blocks)
    assert "It has not been used since costguard started it for its owner's day" in said
    assert "work on it began by 10:00 UTC on each of the 7 weekdays it was worked on; it might not start again" in said
    assert "costguard starts it again" in said  # readied for the next day
    [warned] = [e for e in entries("warn") if "trail" in e]  # its trail, as the warning's Why? tells it
    [step] = [s["M"] for s in warned["trail"]["L"] if s["M"]["rule"]["S"] == "scarce capacity"]
    assert "has not been used since costguard started it for its owner's day" in step["why"]["S"]
    assert "work on it began by 10:00 UTC on each of the 7 weekdays it was worked on" in step["why"]["S"]


@pytest.mark.parametrize("promised_until_the_run", [True, False])
def test_a_start_made_before_its_night_run_is_tried_again_until_the_run_not_only_its_hour(
    promised_until_the_run: bool,
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scarce machine nobody works on by day, stopped after its night run and promised a start (say at 17:00)
    for its next run eight hours later (rules/capacity.py `for_its_night`): EC2 refuses it then and through the
    shortage that follows; three hours on, still before the run, it is tried again and made, recorded as
    costguard's start, and its refusal told said it would be tried until the run. A start promised without its
    run is let go an hour past its own time, as before."""
    start_at = now.replace(minute=0, second=0, microsecond=0)
    iid = launch(start_at, "p4d.24xlarge", hours=24)
    ec2().stop_instances(InstanceIds=[iid])
    stopped = formatting.format_time(start_at - timedelta(hours=13))
    promised = {tags.STOPPED_AT: stopped, tags.START_AT: formatting.format_time(start_at)}
    ec2().create_tags(Resources=[iid], Tags=[{"Key": k, "Value": v} for k, v in promised.items()])
    run_at = formatting.format_time(start_at + timedelta(hours=7, minutes=45))
    until = run_at if promised_until_the_run else ""
    log = StartLog(boto3.client("dynamodb", region_name=REGION), TABLE)
    assert log.update(iid, start_at, lambda kept: kept.promise(formatting.format_time(start_at), day=True, until=until))
    asked = refused_first(3, monkeypatch)

    for later in (timedelta(0), timedelta(hours=1), timedelta(hours=2)):  # the shortage: refused three times
        run(SWEEP, runtime, start_at + later, lambda_context, monkeypatch)
    [told] = refusals_told(slack)
    last_try = start_at + timedelta(hours=9) if promised_until_the_run else start_at + timedelta(hours=1, minutes=15)
    assert f"tries again every sweep until {last_try:%a %d %b %H:%M} UTC" in as_read(told.blocks)
    if not promised_until_the_run:
        assert asked == [iid, iid]  # at 17:00 and 18:00; at 19:00 its hour has passed: let go
        assert tags.START_AT not in tags_of(iid)
        return
    assert asked == [iid, iid, iid]

    # The start log throttled past the start's own hour: its run unknown, the start is neither let go nor made.
    def throttled(self: StartLog, instance_id: str, *, consistent: bool = False) -> StartRecord:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": ""}}, "GetItem")

    with monkeypatch.context() as throttling:
        throttling.setattr(StartLog, "fetch", throttled)
        run(SWEEP, runtime, start_at + timedelta(hours=2, minutes=30), lambda_context, monkeypatch)
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)
    assert asked == [iid, iid, iid]

    third = run(SWEEP, runtime, start_at + timedelta(hours=3), lambda_context, monkeypatch)
    assert third["regions"][REGION]["started"] == [iid]
    assert state_of(iid) in ("pending", "running")
    [started] = entries(EntryKind.DAY_START.value)  # costguard's own start, recorded with the run it was for
    assert started["reason"]["S"] == f"its night's run is expected at {start_at + timedelta(hours=8):%H:%M} UTC"
    [made] = log.fetch(iid).starts
    assert made["o"] == DAY
