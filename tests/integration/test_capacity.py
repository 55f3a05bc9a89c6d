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
from costguard.state.startlog import DAY, StartLog
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

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone


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
