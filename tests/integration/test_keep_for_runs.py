"""Keep it for its runs, through the handlers against moto: a machine tagged `costguard:keep-for-runs` with a
nightly crontab job is stopped when it idles in the afternoon and started before its job, even where the
deployment's learned starts are off; it is not stopped within the hold before the job. On a warning of a machine
whose runs are known, "Keep it for its runs" writes the tag, changes the warning in place (its stop still comes)
and is recorded in the ledger as a keep."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.runtime import Runtime
from costguard.slack.buttons import Button
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.integration.conftest import REGION, TABLE, report, tags_of
from tests.integration.test_activity_check import POLICY
from tests.integration.test_buttons import env
from tests.integration.test_idle_stopper import app, idle, launch, publish, state_of, warn_tags
from tests.integration.test_live_messages import buttons, header, press

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

__all__ = ["env"]
NO_LEARNED_STARTS = replace(POLICY, learned_starts=False)  # LearnedStarts=false: no start for anyone's runs
KEPT = {tags.KEEP_FOR_RUNS: tags.ON}


def sweep(
    runtime: Runtime, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch, policy: Any = NO_LEARNED_STARTS
) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: at)
    result: dict[str, Any] = app.lambda_handler({"costguard": "sweep"}, context, runtime=runtime, policy=policy)
    return result["regions"][REGION]  # type: ignore[no-any-return]


def nightly(at: datetime, command: str = "nightly.sh") -> str:
    """The activity check's answer of a machine whose crontab runs `command` every day at `at`'s time."""
    return report(jobs={"tz": "UTC", "found": 1, "list": [{"k": "cron", "s": f"{at:%M %H} * * *", "c": command}]})


def warned(now: datetime, extra: dict[str, str]) -> str:
    """A machine warned 40 minutes ago (its grace over), idle since: the sweep now stops it."""
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=40) | extra)
    publish(iid, now, gpus=[idle(), idle(), idle(), idle()])
    return iid


def warned_nightly_box(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[str, datetime, Any]:
    """An idle box whose crontab runs `nightly.sh` ten hours from now, warned by the sweep: it, its job's time and
    the warning."""
    iid = launch(now)
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    job = (now + timedelta(hours=10)).replace(minute=0)
    answers[iid] = nightly(job)
    assert sweep(runtime, now, context, monkeypatch, policy=POLICY)["warned"] == [iid]
    [warning] = slack.messages
    return iid, job, warning


def test_a_machine_kept_for_its_runs_is_stopped_when_idle_and_started_before_its_nightly_job_with_starts_off(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = (now + timedelta(hours=10)).replace(minute=0)  # the afternoon's idle box, its job in the night
    kept, plain = warned(now, KEPT), warned(now, {})
    answers[kept] = answers[plain] = nightly(job)

    result = sweep(runtime, now, lambda_context, monkeypatch)

    assert result["stopped"] == [kept]  # the untagged twin waits for its job: costguard would not start it
    assert state_of(plain) == "running"
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert tags_of(kept)[tags.START_AT] == formatting.format_time(start_at)
    said = as_read([m.blocks for m in slack.messages])
    assert "It runs `nightly.sh` at" in said
    assert "UTC (its crontab): costguard starts it again" in said
    assert Button.DONT_START.value not in json.dumps([m.blocks for m in slack.messages])  # its owner's word stands

    assert sweep(runtime, start_at - timedelta(minutes=15), lambda_context, monkeypatch)["started"] == []
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == [kept]
    assert state_of(kept) == "running"


def test_a_machine_kept_for_its_runs_whose_owner_turned_starts_off_is_still_started_before_its_job(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = (now + timedelta(hours=10)).replace(minute=0)
    iid = warned(now, KEPT | {tags.LEARNED_START: tags.OFF})
    answers[iid] = nightly(job)

    assert sweep(runtime, now, lambda_context, monkeypatch, policy=POLICY)["stopped"] == [iid]
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert sweep(runtime, start_at, lambda_context, monkeypatch, policy=POLICY)["started"] == [iid]


def test_a_machine_kept_for_its_runs_is_not_stopped_within_the_hold_before_its_job(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = warned(now, KEPT)
    answers[iid] = nightly(now + timedelta(minutes=50), "train.sh")  # under ShortestStopMinutes (90) away

    assert sweep(runtime, now, lambda_context, monkeypatch)["stopped"] == []
    assert state_of(iid) == "running"
    assert tags.START_AT not in tags_of(iid)


@pytest.mark.usefixtures("clicks_verified")  # the receiver verifies the click
def test_keep_it_for_its_runs_on_a_warning_writes_the_tag_changes_the_warning_in_place_and_is_a_ledger_keep(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, _, warning = warned_nightly_box(runtime, slack, answers, now, lambda_context, monkeypatch)
    assert Button.KEEP_FOR_RUNS.value in buttons(warning)
    assert Button.KEEP_MONDAY.value not in buttons(warning)  # in its place: the buttons stay as few

    at = now + timedelta(minutes=5)
    result = press(slack, warning, Button.KEEP_FOR_RUNS.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.KEEP_FOR_RUNS.value, "status": "done"}]
    assert tags_of(iid)[tags.KEEP_FOR_RUNS] == "on"
    assert tags.STOP_AFTER in tags_of(iid), "not a keep from the stop: it is still stopped when idle"
    assert [m.ts for m in slack.messages] == [warning.ts], "changed in place: nothing new posted"
    assert header(warning) == "Idle GPU machine · $136/day"
    status = as_read(warning.blocks[1])
    assert "costguard stops it" in status
    assert "Kept for its runs by <@U0ALICE>: started before each." in status
    left = buttons(warning)
    assert Button.KEEP_FOR_RUNS.value not in left
    assert Button.DONT_START.value not in left
    assert Button.STOP_NOW.value in left
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    [keep] = [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "keep"]
    assert keep["instance_id"]["S"] == iid
    assert keep["reason"]["S"].startswith("costguard.keep_for_runs by ")
