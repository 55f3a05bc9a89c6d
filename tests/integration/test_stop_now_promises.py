"""Stop now keeps the machine's promises, through the handlers against moto: a person's Stop now on the warning
of a box whose crontab runs a nightly job gets its start before that job (`costguard:start-at`, kept in the
start log), said in the stop notice with "Skip the planned start"; and the sweep starts it before the job."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.core.scarcity import FailedStart
from costguard.idle.rules.capacity import EARLIER
from costguard.idle.rules.schedule import parse_schedule
from costguard.runtime import Runtime
from costguard.slack.buttons import Button
from costguard.state.capacity import CapacityLog
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, dates_in
from tests.integration.conftest import REGION, TABLE, report, tags_of
from tests.integration.test_activity_check import POLICY
from tests.integration.test_buttons import env
from tests.integration.test_idle_stopper import idle, launch, publish, state_of, warn_tags
from tests.integration.test_keep_for_runs import nightly, sweep, warned_nightly_box
from tests.integration.test_live_messages import buttons, header, press

# Every time in a reader's own zone; the clicks pressed, verified by the receiver.
pytestmark = pytest.mark.usefixtures("times_in_readers_zones", "clicks_verified")

__all__ = ["env"]


def test_stop_now_on_a_box_with_a_crontab_job_starts_it_before_the_job_and_says_so(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, job, warning = warned_nightly_box(runtime, slack, answers, now, lambda_context, monkeypatch)
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)

    at = now + timedelta(minutes=5)
    result = press(slack, warning, Button.STOP_NOW.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.STOP_NOW.value, "status": "done"}]
    assert state_of(iid) == "stopped"
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)
    assert header(warning).startswith("Stopped: GPU machine")  # the warning, changed in place
    assert "costguard starts it again *" in as_read(warning.blocks)
    assert int(start_at.timestamp()) in dates_in(warning.blocks)  # in each reader's own time
    assert Button.DONT_START.value in buttons(warning)
    assert Button.START.value in buttons(warning)

    assert sweep(runtime, start_at - timedelta(minutes=15), lambda_context, monkeypatch, policy=POLICY)["started"] == []
    assert sweep(runtime, start_at, lambda_context, monkeypatch, policy=POLICY)["started"] == [iid]
    assert state_of(iid) == "running"


def test_stop_and_dont_start_it_stops_the_box_in_one_click_and_its_job_does_not_start_it(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, job, warning = warned_nightly_box(runtime, slack, answers, now, lambda_context, monkeypatch)
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert Button.STOP_NO_START.value in buttons(warning)  # beside Stop now, on a warning that promises a start

    at = now + timedelta(minutes=5)
    result = press(slack, warning, Button.STOP_NO_START.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.STOP_NO_START.value, "status": "done"}]
    assert state_of(iid) == "stopped"
    assert tags.START_AT not in tags_of(iid)
    assert tags_of(iid)[tags.LEARNED_START] == tags.OFF
    assert header(warning).startswith("Stopped: GPU machine")
    said = as_read(warning.blocks)
    assert "costguard starts it again" not in said
    assert f"costguard will not start it for its runs (`{tags.LEARNED_START}={tags.OFF}`)" in said
    assert buttons(warning) == [Button.START.value]  # nothing planned to skip: Start it again only

    assert sweep(runtime, start_at, lambda_context, monkeypatch, policy=POLICY)["started"] == []
    assert state_of(iid) == "stopped"


def test_a_warning_that_promises_no_start_offers_no_stop_and_dont_start_it(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now)
    answers[iid] = report()  # its check answers, nothing alive: no job, no night work it may run unseen
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    assert sweep(runtime, now, lambda_context, monkeypatch, policy=POLICY)["warned"] == [iid]
    [warning] = slack.messages
    assert Button.STOP_NOW.value in buttons(warning)
    assert Button.STOP_NO_START.value not in buttons(warning)


def test_skip_the_planned_start_on_a_warning_takes_stop_and_dont_start_it_away_with_it(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, _, warning = warned_nightly_box(runtime, slack, answers, now, lambda_context, monkeypatch)

    at = now + timedelta(minutes=5)
    result = press(slack, warning, Button.DONT_START.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.DONT_START.value, "status": "done"}]
    left = buttons(warning)
    assert Button.STOP_NO_START.value not in left  # nothing planned is left to decline
    assert Button.STOP_NOW.value in left


def scarce_box_held_for_its_job(
    runtime: Runtime, slack: SlackStandIn, answers: dict[str, str | None], now: datetime, context: Any, mp: Any
) -> tuple[str, datetime, Any]:
    """A box of a type EC2 lately refused to start, its crontab job due before its owner is back: left running for
    the job (capacity.py), its owner told once a day with Stop anyway. It, its job's time and that notice."""
    job = (now + timedelta(hours=5)).replace(minute=0, second=0, microsecond=0)
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=40))
    publish(iid, now, gpus=[idle(), idle(), idle(), idle()])
    answers[iid] = nightly(job)
    failures = [FailedStart("g5.12xlarge", "", now - timedelta(hours=h), "CloudTrail", region=REGION) for h in (2, 5)]
    CapacityLog(boto3.client("dynamodb", region_name=REGION), TABLE).add(REGION, failures, read_until=now)
    mp.setattr("costguard.idle.rules.pipeline.working_now", lambda *_: False)  # the evening
    back = job + timedelta(hours=3)  # its owner's next working hours open after the job
    hours = parse_schedule(f"daily {back:%H:%M}-{back + timedelta(hours=1):%H:%M} UTC")
    mp.setattr("costguard.idle.rules.capacity.owners_hours", lambda *_: hours)
    assert sweep(runtime, now, context, mp, policy=POLICY)["stopped"] == []
    [notice] = [m for m in slack.messages if "hard to get back" in json.dumps(m.blocks)]
    return iid, job, notice


def test_stop_anyway_on_a_box_held_for_its_crontab_job_starts_it_before_the_job_and_says_so(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, job, notice = scarce_box_held_for_its_job(runtime, slack, answers, now, lambda_context, monkeypatch)
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert Button.STOP_NO_START.value in buttons(notice)  # beside Stop anyway: the promise declined in one click

    at = now + timedelta(minutes=5)
    result = press(slack, notice, Button.STOP_NOW.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.STOP_NOW.value, "status": "done"}]
    assert state_of(iid) == "stopped"
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)
    said = as_read(notice.blocks)
    assert "costguard starts it again *" in said
    assert int(start_at.timestamp()) in dates_in(notice.blocks)
    assert Button.DONT_START.value in buttons(notice)  # Don't start it, beside Start it again
    early = start_at - EARLIER  # a scarce machine's start is made sooner, with retries in hand
    assert sweep(runtime, early - timedelta(minutes=15), lambda_context, monkeypatch, policy=POLICY)["started"] == []
    assert sweep(runtime, early, lambda_context, monkeypatch, policy=POLICY)["started"] == [iid]
    assert state_of(iid) == "running"


def test_stop_and_dont_start_it_on_a_box_held_for_its_job_stops_it_and_its_job_does_not_start_it(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, job, notice = scarce_box_held_for_its_job(runtime, slack, answers, now, lambda_context, monkeypatch)

    at = now + timedelta(minutes=5)
    result = press(slack, notice, Button.STOP_NO_START.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.STOP_NO_START.value, "status": "done"}]
    assert state_of(iid) == "stopped"
    assert tags.START_AT not in tags_of(iid)
    assert tags_of(iid)[tags.LEARNED_START] == tags.OFF
    assert "costguard will not start it for its runs" in as_read(notice.blocks)
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert sweep(runtime, start_at, lambda_context, monkeypatch, policy=POLICY)["started"] == []
    assert state_of(iid) == "stopped"
