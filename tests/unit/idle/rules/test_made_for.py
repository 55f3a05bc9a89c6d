"""Which start was a learned start: the one its start-at promised, not a working-hours start made in the
same minutes (costguard starting a machine for its hours teaches the learner a run at that time, so the
two often fall together: one start, recorded once, as what it was)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.restarts import learned_start_refused, made_for

POLICY = IdlePolicy()
OPENS = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
START_AT = OPENS - timedelta(minutes=POLICY.schedule_lead_minutes)


def box(launched: datetime, **extra: str) -> Instance:
    stopped = formatting.format_time(OPENS - timedelta(hours=14))
    return Instance(
        instance_id="i-0123456789abcdef0",
        region="eu-west-1",
        instance_type="g5.xlarge",
        state="running",
        launch_time=launched,
        tags={tags.STOPPED_AT: stopped, tags.START_AT: formatting.format_time(START_AT), **extra},
    )


def test_a_start_at_its_start_time_is_the_learned_one() -> None:
    assert made_for(box(START_AT + timedelta(minutes=1)), START_AT, POLICY)


def test_a_start_in_the_lead_of_its_working_hours_is_the_working_hours_one() -> None:
    hours = {tags.SCHEDULE: "daily 09:00-17:00 UTC"}
    assert not made_for(box(START_AT + timedelta(minutes=1), **hours), START_AT, POLICY)


def test_working_hours_that_open_at_another_time_leave_the_learned_start_its_own() -> None:
    hours = {tags.SCHEDULE: "daily 13:00-17:00 UTC"}
    assert made_for(box(START_AT + timedelta(minutes=1), **hours), START_AT, POLICY)


def test_a_start_made_before_its_night_run_is_the_learned_one_until_that_run_and_refused_after() -> None:
    """A start promised for 08:45 before a run at 17:00 (`until`, from the start log), made at 12:00 after EC2
    refused it for hours, is that start; without the run, 12:00 is too late for it."""
    run = START_AT + timedelta(hours=8)
    late = box(START_AT + timedelta(hours=3))
    assert made_for(late, START_AT, POLICY, until=run)
    assert not made_for(late, START_AT, POLICY)
    assert not made_for(box(run + timedelta(hours=2)), START_AT, POLICY, until=run)  # past the run and its hour
    stopped = replace(box(START_AT - timedelta(days=1)), state="stopped")
    noon = START_AT + timedelta(hours=3)
    assert learned_start_refused(stopped, START_AT, noon, POLICY, until=run) == ""
    assert learned_start_refused(stopped, START_AT, noon, POLICY).startswith("its run was due at 08:45 UTC")
    assert learned_start_refused(stopped, START_AT, run + timedelta(hours=2), POLICY, until=run).startswith(
        "its run was due at 16:45 UTC"
    )
