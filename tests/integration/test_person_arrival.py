"""A machine is made ready before its person arrives, through the idle stopper against moto: a person who puts
a cheap GPU machine to work between about the same hours on weekdays (not at one time: no recurring pattern)
finds it started again for their next weekday after costguard stopped it, the notice says so, and the start
waits for them through its hold. Priced at nothing, a person's time buys no such start (idle/rules/arrival.py).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.core.settings import IdlePolicy
from costguard.runtime import Runtime
from costguard.state.entries import EntryKind
from costguard.state.startlog import DAY, StartLog
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.integration.conftest import REGION, TABLE, tags_of
from tests.integration.test_idle_stopper import launch, publish, state_of, warn_tags
from tests.integration.test_learned_starts import app, ledger, quarter, quarterly

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")

POLICY = IdlePolicy()  # the team's clock is UTC
QUARTER = timedelta(minutes=15)
OFFSETS = (0, 45, 90, 135)  # minutes after the day's earliest, in turn: never three days within half an hour


def weekdays_of_work(instance_id: str, first: datetime, now: datetime) -> None:
    """Two weeks up to `now`: on each weekday, four hours of work from `first`'s time of day plus that day's
    offset; idle between (quarter-hourly GPU, CPU and busiest core, as CloudWatch keeps them)."""
    busy: set[datetime] = set()
    for back in range(14):
        day = first - timedelta(days=back)
        if day.weekday() < 5:
            begin = day + timedelta(minutes=OFFSETS[back % len(OFFSETS)])
            busy |= {begin + QUARTER * k for k in range(16)}
    start = quarter(now) - timedelta(days=14)
    moments = [start + QUARTER * k for k in range(14 * 96) if start + QUARTER * k < now - timedelta(hours=3)]
    quarterly(instance_id, moments, busy)


def sweep(runtime: Runtime, at: datetime, policy: IdlePolicy, lambda_context: Any, mp: pytest.MonkeyPatch) -> Any:
    mp.setattr(runtime, "now", lambda: at)
    result = app.lambda_handler({"costguard": "sweep"}, lambda_context, runtime=runtime, policy=policy)
    return result["regions"][REGION]


@pytest.fixture
def persons_box(now: datetime) -> str:
    """A g5.xlarge whose person worked on it every weekday of two weeks, first from 10 h ago's time of day (each
    day up to two hours later), idle for the last three hours, warned half an hour ago: the sweep now stops it."""
    iid = launch(now, instance_type="g5.xlarge", hours=24 * 20, tags=warn_tags(now, warned_minutes_ago=30))
    weekdays_of_work(iid, quarter(now - timedelta(hours=10)), now)
    publish(iid, now, gpus=[[1.0] * 36])  # the last 3 h, every 5 minutes: idle
    return iid


def test_a_persons_machine_is_stopped_with_a_start_before_their_next_weekday_which_waits_for_them(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    persons_box: str,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = persons_box
    earliest = quarter(now - timedelta(hours=10)) - timedelta(minutes=POLICY.schedule_lead_minutes)

    assert sweep(runtime, now, POLICY, lambda_context, monkeypatch)["stopped"] == [iid]

    start_at = formatting.parse_time(tags_of(iid)[tags.START_AT])
    assert start_at is not None
    assert start_at > now + timedelta(minutes=POLICY.shortest_stop_minutes)
    assert start_at.weekday() < 5
    assert start_at - now < timedelta(days=4)
    assert (start_at.hour, start_at.minute) == (earliest.hour, earliest.minute)  # the lead before the earliest
    [notice] = slack.messages
    said = as_read(notice.blocks)
    came, last = earliest + timedelta(minutes=15), earliest + timedelta(minutes=15 + OFFSETS[-1])
    assert f"is put to work between {came:%H:%M} UTC and {last:%H:%M} UTC on " in said  # each a Slack date
    assert "before its person's day." in said

    assert sweep(runtime, start_at, POLICY, lambda_context, monkeypatch)["started"] == [iid]
    assert state_of(iid) == "running"
    [made] = StartLog(boto3.client("dynamodb", region_name=REGION), TABLE).fetch(iid).starts
    assert made["o"] == DAY  # never judged as a recurring run's start
    [entry] = ledger(EntryKind.DAY_START.value)  # and the digest does not count it as one
    assert entry["reason"]["S"].startswith("its working day is expected at ")
    assert ledger(EntryKind.LEARNED_START.value) == []

    # Its window later its person has not come: idle, but the start waits for them through its hold (window
    # and grace), and only then does the idle rule have its way.
    later = start_at + timedelta(minutes=POLICY.window_minutes + 15)
    publish(iid, later, gpus=[[1.0] * 27])
    assert sweep(runtime, later, POLICY, lambda_context, monkeypatch)["warned"] == []
    over = start_at + timedelta(minutes=POLICY.window_minutes + POLICY.grace_minutes + 5)
    publish(iid, over, gpus=[[1.0] * 31])
    assert sweep(runtime, over, POLICY, lambda_context, monkeypatch)["warned"] == [iid]


def test_priced_at_nothing_a_persons_time_buys_no_start(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    persons_box: str,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unpriced = replace(POLICY, person_hour_usd=0.0)
    assert sweep(runtime, now, unpriced, lambda_context, monkeypatch)["stopped"] == [persons_box]
    assert tags.START_AT not in tags_of(persons_box)
    assert "before its person's day" not in as_read(slack.messages[0].blocks)


def test_a_machine_kept_for_its_runs_gets_no_start_for_its_persons_day_with_learned_starts_off(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    persons_box: str,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keep it for its runs asks for starts before its runs (none known here), not for its person's day: with
    learned starts off for the deployment the stop carries no start."""
    ec2 = boto3.client("ec2", region_name=REGION)
    ec2.create_tags(Resources=[persons_box], Tags=[{"Key": tags.KEEP_FOR_RUNS, "Value": "on"}])
    off = replace(POLICY, learned_starts=False)
    assert sweep(runtime, now, off, lambda_context, monkeypatch)["stopped"] == [persons_box]
    assert tags.START_AT not in tags_of(persons_box)
