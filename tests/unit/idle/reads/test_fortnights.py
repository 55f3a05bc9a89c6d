"""The past of a machine that cannot answer its check: its nights read on its owner's clock where Slack says it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from costguard.core.records import Instance
from costguard.core.series import Signal
from costguard.core.settings import IdlePolicy
from costguard.idle.reads.fortnights import Learner
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.recurring import QUARTER
from costguard.state.startlog import StartRecord

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)  # a Tuesday
JOB = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)  # 01:00 in New York: its nightly job, an hour of one busy core


class OneNightlyJob:
    """CloudWatch: two days of a machine's busiest core, idle but for its job."""

    def fetch(self, refs: Any, start: datetime, end: datetime, *, period: int | None = None) -> Any:
        at, points = NOW - timedelta(days=2), []
        while at < end:
            points.append((at, 100.0 if JOB <= at < JOB + timedelta(hours=1) else 2.0))
            at += QUARTER
        return {ref: points if ref.signal is Signal.BUSIEST_CORE else [(t, 1.0) for t, _ in points] for ref in refs}, {}


class Nothing:
    def changes_of(self, ids: Any) -> dict[str, list[Any]]:
        return {i: [] for i in ids}

    def read_many(self, ids: Any) -> dict[str, StartRecord]:
        return {i: StartRecord() for i in ids}


def test_a_blind_machines_nights_are_read_on_the_clock_its_owner_set_in_slack() -> None:
    learner = Learner(metrics=OneNightlyJob(), history=Nothing(), starts=Nothing(), policy=IdlePolicy())  # type: ignore[arg-type]
    machine = Instance("i-1", "us-east-1", "g5.xlarge", "running", NOW - timedelta(days=20))
    decided = [(machine, Decision("i-1", Action.WARN, "idle", stop_after=NOW + timedelta(minutes=30)))]
    on_utc = learner.past(decided, {}, NOW, blind={"i-1"})["i-1"].night
    assert on_utc is None  # 06:00 UTC: a morning on the team's clock, its person's day work
    found = learner.past(decided, {}, NOW, blind={"i-1"}, zones={"i-1": "America/New_York"})["i-1"].night
    assert found is not None
    assert (found.zone, found.nights) == ("America/New_York", (datetime(2026, 11, 23).date(),))


MONDAY = datetime(2026, 11, 23, tzinfo=UTC)
PERSON = MONDAY.replace(hour=5, minute=20)  # 10:50 in Kolkata: its person starts it for a run


class PersonsMornings:
    """CloudWatch: a machine stopped until its person's start on Monday, at work until 12:15, stopped again from
    15:00 until costguard's start at 17:45, and at work on Tuesday from 04:30 (10:00 in Kolkata)."""

    def fetch(self, refs: Any, start: datetime, end: datetime, *, period: int | None = None) -> Any:
        at, points = MONDAY - timedelta(days=1), []
        while at < end:
            off = at < MONDAY.replace(hour=5, minute=15) or MONDAY.replace(hour=15) <= at < MONDAY.replace(
                hour=17, minute=45
            )
            busy = MONDAY.replace(hour=5, minute=15) <= at < MONDAY.replace(hour=12, minute=15) or MONDAY + timedelta(
                hours=28, minutes=30
            ) <= at < MONDAY + timedelta(hours=31, minutes=30)
            if not off or at < MONDAY:
                points.append((at, 100.0 if busy else 2.0))
            at += QUARTER
        return {ref: points if ref.signal is Signal.BUSIEST_CORE else [(t, 1.0) for t, _ in points] for ref in refs}, {}


class PersonStarted(Nothing):
    def changes_of(self, ids: Any) -> dict[str, list[Any]]:
        return {i: [(PERSON, "running")] for i in ids}


def test_a_blind_machine_its_owner_keeps_for_its_runs_is_not_taken_for_their_persons_machine() -> None:
    now = MONDAY + timedelta(days=1, hours=10)
    learner = Learner(metrics=PersonsMornings(), history=PersonStarted(), starts=Nothing(), policy=IdlePolicy())  # type: ignore[arg-type]
    zones = {"i-1": "Asia/Kolkata"}
    persons = Instance("i-1", "us-east-1", "g5.xlarge", "running", MONDAY.replace(hour=17, minute=45))
    decided = [(persons, Decision("i-1", Action.WARN, "idle", stop_after=now + timedelta(minutes=30)))]
    assert learner.past(decided, {}, now, blind={"i-1"}, zones=zones)["i-1"].night is None  # its person's mornings
    kept = Instance(
        "i-1",
        "us-east-1",
        "g5.xlarge",
        "running",
        MONDAY.replace(hour=17, minute=45),
        tags={"costguard:keep-for-runs": "on"},
    )
    decided = [(kept, Decision("i-1", Action.WARN, "idle", stop_after=now + timedelta(minutes=30)))]
    found = learner.past(decided, {}, now, blind={"i-1"}, zones=zones)["i-1"].night
    assert found is not None
    assert found.zone == "UTC"


WAIT = datetime(2026, 11, 23, 5, 30, tzinfo=UTC)  # a job at 05:30 UTC that waits on a queue, its GPU memory held
WORK = WAIT + timedelta(hours=1, minutes=45)  # ... and works from 07:15 UTC: the team's (UTC) day


class WaitingJob:
    """CloudWatch: a day of a machine left running, whose job waits 05:30-07:15 UTC, then works for an hour."""

    def fetch(self, refs: Any, start: datetime, end: datetime, *, period: int | None = None) -> Any:
        out = {}
        for ref in refs:
            at, points = WAIT - timedelta(hours=12), []
            while at < end:
                waiting, working = WAIT <= at < WORK, WORK <= at < WORK + timedelta(hours=1)
                if ref.signal is Signal.GPU_MEMORY:
                    value = 30000.0 if waiting or working else 3.0
                elif ref.signal is Signal.GPU:
                    value = 80.0 if working else 0.0
                else:
                    value = 2.0
                points.append((at, value))
                at += QUARTER
            out[ref] = points
        return out, {}


def test_a_blind_machines_job_that_begins_by_waiting_with_its_gpu_memory_held_is_night_work_from_its_wait() -> None:
    now = WAIT.replace(hour=14)
    learner = Learner(metrics=WaitingJob(), history=Nothing(), starts=Nothing(), policy=IdlePolicy())  # type: ignore[arg-type]
    machine = Instance("i-1", "us-east-1", "g5.xlarge", "running", now - timedelta(days=20))
    decided = [(machine, Decision("i-1", Action.WARN, "idle", stop_after=now + timedelta(minutes=30)))]
    gpu = {"i-1": [(("InstanceId", "i-1"), ("index", "0"))]}
    assert learner.past(decided, gpu, now, blind={"i-1"})["i-1"].night is None  # 07:15 UTC: the day's work
    found = learner.past(decided, gpu, now, blind={"i-1"}, memory_series=gpu)["i-1"].night
    assert found is not None
    assert (found.zone, found.earliest) == ("UTC", timedelta(hours=11, minutes=30))  # from 05:30, its wait
    answering = learner.past(decided, gpu, now, memory_series=gpu).get("i-1")
    assert answering is None or answering.night is None  # a machine that answers: its check says what runs
