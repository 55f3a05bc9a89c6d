"""Recurring work learned from a machine's last two weeks: daily, weekdays only, drifting, broken, across a
change of clocks; and what it does to a warning or a stop."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from botocore.exceptions import ClientError

from costguard.aws.cloudwatch.series import gpu_count
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.acts.kept import Promises
from costguard.idle.reads.fortnights import Learner
from costguard.idle.rules.automation import on_its_clocks
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.pipeline import learned_rules, promised
from costguard.idle.rules.recurring import (
    Learned,
    LearnedStart,
    Pattern,
    Quarter,
    learn,
    quarters_of,
    with_pattern,
    work_starts,
)
from costguard.state.startlog import StartRecord

QUARTER = timedelta(minutes=15)
NOW = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)  # a Saturday
POLICY = IdlePolicy()


def fortnight(
    starts: Iterable[datetime], *, hours: float = 1.0, until: datetime = NOW, down: Iterable[datetime] = ()
) -> list[Quarter]:
    """Two weeks of quarter-hours, idle but for `hours` of work from each start; none (stopped) in `down` days."""
    busy: set[datetime] = set()
    for start in starts:
        first = datetime.fromtimestamp(int(start.timestamp()) // 900 * 900, UTC)
        busy.update(first + QUARTER * k for k in range(int(hours * 4)))
    off = {d.date() for d in down}
    at = until - timedelta(days=14)
    out = []
    while at < until:
        out.append(Quarter(at, at in busy) if at.date() not in off else Quarter(at, None))
        at += QUARTER
    return [q for q in out if q.busy is not None]


def daily(hour: int, minute: int = 0, days: int = 14, zone: str = "UTC", until: datetime = NOW) -> list[datetime]:
    tz = ZoneInfo(zone)
    last = until.astimezone(tz).date()
    out = []
    for back in range(days, -1, -1):
        day = last - timedelta(days=back)
        at = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz).astimezone(UTC)
        if at < until:
            out.append(at)
    return out


def test_a_nightly_job_is_learned_with_its_time_and_next_run() -> None:
    found = learn(fortnight(daily(2, 0)), NOW)
    assert found.pattern is not None
    assert found.reason == "starts work at about 02:00 UTC (7 of the last 7 days)"
    assert found.pattern.next_start(NOW) == datetime(2026, 11, 22, 2, 0, tzinfo=UTC)


def test_work_on_fewer_than_3_of_the_last_7_days_is_not_a_pattern() -> None:
    two = [datetime(2026, 11, 18, 2, 0, tzinfo=UTC), datetime(2026, 11, 19, 2, 0, tzinfo=UTC)]
    found = learn(fortnight(two), NOW)
    assert found.pattern is None
    assert found.reason == "no work starts at the same time on 3 of the last 7 days"


def test_a_weekday_pipeline_is_not_started_at_the_weekend_it_was_seen_idle() -> None:
    weekdays = [s for s in daily(19, 30) if s.weekday() < 5]
    found = learn(fortnight(weekdays), NOW)
    assert found.pattern is not None
    assert found.pattern.weekdays == frozenset(range(5))
    assert found.reason == "starts work at about 19:30 UTC on weekdays (5 of the last 7 days)"
    friday_night = datetime(2026, 11, 20, 21, 0, tzinfo=UTC)
    assert found.pattern.next_start(friday_night) == datetime(2026, 11, 23, 19, 30, tzinfo=UTC)  # Monday


def test_a_holiday_monday_and_a_late_monday_run_keep_mondays_in_the_pattern() -> None:
    runs = [s for s in daily(14, 30) if s.weekday() < 5 and s.weekday() != 0]
    runs.append(datetime(2026, 11, 16, 15, 15, tzinfo=UTC))  # last Monday, 45 minutes late; the one before: none
    found = learn(fortnight(runs), NOW)
    assert found.pattern is not None
    assert 0 in found.pattern.weekdays  # the next Monday's run must not find its machine stopped


def test_a_weekend_nobody_saw_is_not_taken_for_a_weekend_without_work() -> None:
    weekdays = [s for s in daily(19, 30) if s.weekday() < 5]
    weekends = [s for s in daily(0, 0) if s.weekday() >= 5]
    found = learn(fortnight(weekdays, down=weekends), NOW)  # stopped every weekend: never seen idle then
    assert found.pattern is not None
    assert found.pattern.weekdays == frozenset(range(7))  # started then too: a stop would cost more than a start


def test_a_slowly_drifting_start_is_followed_from_its_earliest_recent_time() -> None:
    drifting = [datetime(2026, 11, 7 + d, 1, 0, tzinfo=UTC) + timedelta(minutes=8 * d) for d in range(15)]
    found = learn(fortnight(drifting), NOW)
    assert found.pattern is not None
    # The latest start was 02:52 (its quarter: 02:45); the starts within 30 minutes of it: from 02:15, on
    # the last 5 days. The next run (about 03:00) is met with time to spare; the older 02:00s are let go.
    assert (found.pattern.minute, found.pattern.days) == (2 * 60 + 15, 5)
    assert found.pattern.next_start(NOW) == datetime(2026, 11, 22, 2, 15, tzinfo=UTC)


def test_a_start_that_moves_by_40_minutes_a_day_is_not_a_pattern() -> None:
    wandering = [datetime(2026, 11, 7 + d, 1, 0, tzinfo=UTC) + timedelta(minutes=40 * d) for d in range(14)]
    assert learn(fortnight(wandering), NOW).pattern is None


def test_learned_starts_that_found_no_work_break_the_pattern_after_two() -> None:
    runs = daily(2, 0)[:-4]  # the job stopped running four days ago
    made = [
        LearnedStart(datetime(2026, 11, 19, 2, 0, tzinfo=UTC)),
        LearnedStart(datetime(2026, 11, 20, 2, 0, tzinfo=UTC)),
    ]
    quarters = fortnight(runs)
    once = learn(quarters, NOW, made=made[:1])
    assert once.pattern is not None
    assert once.outcomes == ((made[0].expected, False),)  # judged now: wasted
    twice = learn(quarters, NOW, made=made)
    assert twice.pattern is None
    assert twice.reason.endswith("but costguard's starts for it found no work twice: not used")
    assert twice.broken == "UTC 02:00"
    assert learn(quarters, NOW, broken=["UTC 02:00"]).pattern is None  # remembered once broken


def test_a_learned_start_that_found_its_work_is_judged_used() -> None:
    made = [LearnedStart(datetime(2026, 11, 20, 2, 0, tzinfo=UTC))]
    assert learn(fortnight(daily(2, 0)), NOW, made=made).outcomes == ((made[0].expected, True),)


def test_a_team_pipeline_keeps_its_local_hour_across_a_change_of_clocks() -> None:
    # Berlin leaves summer time on 25 October 2026: 19:30 there is 17:30 UTC before and 18:30 UTC after.
    until = datetime(2026, 10, 29, 6, 0, tzinfo=UTC)
    found = learn(
        fortnight(daily(19, 30, zone="Europe/Berlin", until=until), until=until), until, zones=("UTC", "Europe/Berlin")
    )
    assert found.pattern is not None
    assert found.pattern.zone == "Europe/Berlin"
    assert found.pattern.days == 7
    assert found.pattern.next_start(until) == datetime(2026, 10, 29, 18, 30, tzinfo=UTC)


def test_a_cron_on_a_utc_box_keeps_its_utc_hour_across_the_teams_change_of_clocks() -> None:
    until = datetime(2026, 10, 29, 6, 0, tzinfo=UTC)
    found = learn(fortnight(daily(2, 0, until=until), until=until), until, zones=("UTC", "Europe/Berlin"))
    assert found.pattern is not None
    assert (found.pattern.zone, found.pattern.days) == ("UTC", 7)


def test_a_few_minutes_of_one_busy_core_are_not_work_but_half_an_hour_is() -> None:
    base = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
    core = [(base + QUARTER * k, v) for k, v in enumerate([4, 4, 60, 4, 4, 80, 90, 4])]
    quarters = quarters_of([], core, [], POLICY, vcpus=8)
    assert [q.at for q in quarters if q.busy] == [base + QUARTER * 5, base + QUARTER * 6]
    gpu = [[(base + QUARTER * k, v) for k, v in enumerate([0, 0, 0, 40, 0, 0, 0, 0])]]
    assert next(q.at for q in quarters_of(gpu, core, [], POLICY, vcpus=8) if q.busy) == base + QUARTER * 3


def test_a_machine_started_for_its_work_is_counted_from_its_start() -> None:
    base = datetime(2026, 11, 20, 2, 0, tzinfo=UTC)
    quarters = [Quarter(base - QUARTER, False), Quarter(base, True)]
    assert work_starts(quarters, [base - timedelta(minutes=20)]) == [base - timedelta(minutes=20)]
    assert work_starts(quarters, [base - timedelta(hours=3)]) == [base]


# ------------------------------------------------------------------ what it does to a warning or a stop


def warning(stop_after: datetime) -> Decision:
    return Decision("i-1", Action.WARN, "idle for 45 min", stop_after=stop_after)


@pytest.fixture
def nightly() -> object:
    found = learn(fortnight(daily(2, 0)), NOW)
    assert found.pattern is not None
    return found


def test_a_machine_whose_next_run_is_near_is_not_warned(nightly: object) -> None:
    at = datetime(2026, 11, 22, 0, 30, tzinfo=UTC)
    decision = with_pattern(warning(at + timedelta(minutes=30)), nightly, POLICY, at)  # type: ignore[arg-type]
    assert decision.action is Action.NONE
    assert decision.reason == (
        "starts work at about 02:00 UTC (7 of the last 7 days); its next run, at about 02:00 UTC, "
        "is too soon after a stop at 01:00 to pay"
    )


def test_a_machine_stopped_between_runs_is_started_again_before_the_next(nightly: object) -> None:
    stop = Decision("i-1", Action.STOP, "idle for 75 min", stop_after=NOW)
    decision = with_pattern(stop, nightly, POLICY, NOW)  # type: ignore[arg-type]
    assert decision.action is Action.STOP
    assert decision.start_at == datetime(2026, 11, 22, 1, 45, tzinfo=UTC)  # ScheduleLeadMinutes before
    assert decision.next_work == "starts work at about 02:00 UTC (7 of the last 7 days)"


def test_a_run_that_is_due_and_late_holds_the_stop(nightly: object) -> None:
    at = datetime(2026, 11, 22, 2, 40, tzinfo=UTC)
    stop = Decision("i-1", Action.STOP, "idle", stop_after=at)
    decision = with_pattern(stop, nightly, POLICY, at)  # type: ignore[arg-type]
    assert decision.action is Action.NONE
    assert decision.reason.endswith("a run due at 02:00 UTC has not come yet")


def test_a_warning_that_stops_nothing_is_left_as_it_is(nightly: object) -> None:
    blind = Decision("i-1", Action.WARN, "idle", will_stop=False)
    assert with_pattern(blind, nightly, POLICY, NOW) == blind  # type: ignore[arg-type]


def weekdays(starts: list[datetime]) -> list[datetime]:
    return [s for s in starts if s.weekday() < 5]


def test_a_machine_with_a_morning_start_every_weekday_and_an_afternoon_one_on_some_learns_both() -> None:
    # A notebook: its person starts at 09:30 every weekday; after a long meeting, on 3 of them, again at 16:00.
    # The afternoon start is the latest seen, but the morning one recurs on more days: both are learned.
    afternoons = [datetime(2026, 11, d, 16, 0, tzinfo=UTC) for d in (17, 18, 20)]
    found = learn(fortnight(weekdays(daily(9, 30)) + afternoons, hours=2.0), NOW)
    assert found.pattern is not None
    assert found.reason.startswith("starts work at about 09:30 UTC on weekdays (5 of the last 7 days)")
    assert [p.minute for p in found.patterns] == [9 * 60 + 30, 16 * 60]
    # Stopped at 14:45 on a Tuesday: the next run is the afternoon's, too soon after the stop to pay.
    tuesday = datetime(2026, 11, 24, 14, 45, tzinfo=UTC)
    held = with_pattern(Decision("i-1", Action.STOP, "idle", stop_after=tuesday), found, POLICY, tuesday)
    assert held.action is Action.NONE
    assert "16:00 UTC" in held.reason
    # Stopped on Friday evening: started again before Monday's 09:30, not before Saturday's afternoon.
    friday = datetime(2026, 11, 20, 19, 0, tzinfo=UTC)
    stop = with_pattern(Decision("i-1", Action.STOP, "idle", stop_after=friday), found, POLICY, friday)
    assert stop.action is Action.STOP
    assert stop.start_at == datetime(2026, 11, 23, 9, 15, tzinfo=UTC)


def test_a_start_is_one_patterns_work_never_two() -> None:
    # Starts at 10:00, 09:30, 10:15 and twice 10:40: the 10:15 start is one time of day's work, never the
    # work of a pattern at 10:15 and of another at 09:30 as well.
    for days in (((16, 10, 0), (17, 9, 30), (18, 10, 15), (19, 10, 40), (20, 10, 40)),
                 ((16, 9, 30), (17, 10, 0), (18, 10, 15), (19, 10, 40), (20, 10, 40))):  # fmt: skip
        found = learn(fortnight([datetime(2026, 11, d, h, m, tzinfo=UTC) for d, h, m in days]), NOW)
        shared = [p.key for p in found.patterns]
        assert len(shared) == 1, shared


# ------------------------------------------------------------------ the reads


class Unreadable:
    """CloudWatch that cannot answer one machine's series (InternalError): the rest reads as idle."""

    def __init__(self, broken: str) -> None:
        self.broken = broken
        self.periods: list[int | None] = []

    def fetch(self, refs: Any, start: datetime, end: datetime, *, period: int | None = None) -> Any:
        self.periods.append(period)
        failed = {ref: "InternalError" for ref in refs if ref.instance_id == self.broken}
        return {ref: [(end - QUARTER, 1.0)] for ref in refs}, failed


class Nothing:
    def changes_of(self, ids: Any) -> dict[str, list[Any]]:
        return {i: [] for i in ids}

    def read_many(self, ids: Any) -> dict[str, StartRecord]:
        return {i: StartRecord() for i in ids}


def test_a_stop_whose_fortnight_could_not_be_read_waits_and_a_warning_goes_out() -> None:
    metrics = Unreadable("i-2")
    learner = Learner(
        metrics=metrics,  # type: ignore[arg-type]
        history=Nothing(),  # type: ignore[arg-type]
        starts=Nothing(),  # type: ignore[arg-type]
        policy=POLICY,
    )
    machines = [Instance(f"i-{n}", "us-east-1", "g5.xlarge", "running", NOW - timedelta(days=20)) for n in (1, 2, 3)]
    decided = [
        (machines[0], Decision("i-1", Action.STOP, "idle", stop_after=NOW)),
        (machines[1], Decision("i-2", Action.STOP, "idle", stop_after=NOW)),
        (machines[2], Decision("i-3", Action.WARN, "idle", stop_after=NOW + timedelta(minutes=30))),
    ]
    metrics.broken = "i-2"
    past = learner.past(decided, {}, NOW)
    out = [(i, learned_rules(i, d, past.get(i.instance_id), POLICY, NOW)) for i, d in decided]
    assert [d.action for _, d in out] == [Action.STOP, Action.NONE, Action.WARN]
    assert out[1][1].reason.startswith("its last two weeks could not be read")
    assert metrics.periods == [900]  # quarter-hours, three machines' series in one call


class Refusing(Nothing):
    """The learned starts' record, which DynamoDB will not write."""

    def update(self, *_: Any) -> bool:
        return False


def test_a_learned_start_that_cannot_be_recorded_is_not_promised() -> None:
    promises = Promises(
        starts=Refusing(),  # type: ignore[arg-type]
        ledger=None,  # type: ignore[arg-type]
        mode=Mode.ENFORCE,
        owner_tag_key="Owner",
    )
    machine = Instance("i-1", "us-east-1", "g5.xlarge", "running", NOW - timedelta(days=20))
    start_at = datetime(2026, 11, 22, 1, 45, tzinfo=UTC)
    stop = Decision(
        "i-1", Action.STOP, "idle", stop_after=NOW, next_work="starts work at about 02:00", start_at=start_at
    )
    held = promised(machine, stop, promises, NOW)
    assert held.action is Action.NONE  # a stop whose start could not be vouched for later waits
    assert held.reason.startswith("its learned start could not be recorded")
    warning = replace(stop, action=Action.WARN, stop_after=NOW + timedelta(minutes=30))
    plain = promised(machine, warning, promises, NOW)
    assert plain.action is Action.WARN  # the warning goes out, promising nothing
    assert (plain.next_work, plain.start_at) == ("", None)


def test_a_stop_before_a_learned_start_counts_each_gpu_once_for_the_digest() -> None:
    # An agent upgrade lists GPU 0 under two dimension sets for 14 days (with and without `arch`).
    old, new = (("InstanceId", "i-1"), ("index", "0"), ("name", "NVIDIA A10G")), (("arch", "Ampere"),)
    series = [old, old + new, *[(("InstanceId", "i-1"), ("index", str(g))) for g in (1, 2, 3)]]
    assert gpu_count(series) == 4


def test_a_run_at_a_local_time_the_spring_change_skips_is_started_for_before_the_skip() -> None:
    # Berlin skips 02:00-03:00 on 29 March 2026; cron runs a 02:30 job as the clocks jump, at 03:00 CEST
    # (01:00 UTC). The machine must be up by then, not at 03:30 CEST as 02:30 read in winter time says.
    berlin = Pattern("Europe/Berlin", 2 * 60 + 30, frozenset(range(7)), 7, "Europe/Berlin 02:30")
    assert berlin.next_start(datetime(2026, 3, 28, 6, 0, tzinfo=UTC)) <= datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    # An hour the autumn change repeats: the first of the two.
    autumn = datetime(2026, 10, 24, 6, 0, tzinfo=UTC)
    assert berlin.next_start(autumn) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST


class Kept:
    """The start log in memory: what each update made of the record."""

    def __init__(self) -> None:
        self.record = StartRecord(starts=[{"e": "2026-11-20T02:00:00Z", "s": "2026-11-20T01:45:00Z"}])

    def update(self, _instance_id: str, _now: datetime, change: Any) -> bool:
        change(self.record)
        return True


class Throttled:
    """The ledger in a storm on BatchWriteItem."""

    def record_many(self, _entries: Any) -> None:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "storm"}}, "BatchWriteItem")


def test_a_wasted_start_judged_in_a_storm_leaves_the_sweep_running_and_is_judged_again() -> None:
    kept = Kept()
    promises = Promises(
        starts=kept,  # type: ignore[arg-type]
        ledger=Throttled(),  # type: ignore[arg-type]
        mode=Mode.ENFORCE,
        owner_tag_key="Owner",
    )
    machine = Instance("i-1", "us-east-1", "g5.12xlarge", "running", NOW - timedelta(days=20))
    found = Learned(None, "no work came", outcomes=((datetime(2026, 11, 20, 2, 0, tzinfo=UTC), False),))

    promises.judged(machine, found, NOW)  # raised ClientError through the sweep before (a region not swept)

    # Its outcome is not kept without its ledger entry: the next sweep judges the start again.
    assert kept.record.starts == [{"e": "2026-11-20T02:00:00Z", "s": "2026-11-20T01:45:00Z"}]


def test_a_persons_morning_start_is_learned_from_when_they_start_the_machine_in_their_zone() -> None:
    """A person who starts their machine at about 09:00 Paris time on 3 of the last 5 working days (08:50, 09:05,
    09:20: within 30 minutes) and begins work half an hour later: the pattern is their start, in their zone,
    and the machine is started for the next one (a Monday, before the earliest)."""
    paris = ZoneInfo("Europe/Paris")
    ups = [
        datetime(2026, 11, 16, 8, 50, tzinfo=paris),
        datetime(2026, 11, 18, 9, 5, tzinfo=paris),
        datetime(2026, 11, 20, 9, 20, tzinfo=paris),
    ]
    work = [u + timedelta(minutes=30) for u in ups]
    found = learn(fortnight(work, hours=3), NOW, zones=("UTC", "Europe/Paris"), running_at=ups)
    assert found.pattern is not None
    assert found.pattern.next_start(NOW).astimezone(paris) == datetime(2026, 11, 23, 8, 50, tzinfo=paris)
    # Without the starts, the work's own start (half an hour on) is all that is known.
    alone = learn(fortnight(work, hours=3), NOW, zones=("UTC", "Europe/Paris"))
    assert alone.pattern is not None
    assert alone.pattern.next_start(NOW) > found.pattern.next_start(NOW)


def test_a_quarter_whose_gpu_memory_was_held_at_zero_percent_is_busy_where_memory_is_read() -> None:
    base = datetime(2026, 11, 23, tzinfo=UTC)
    gpu = [[(base + QUARTER * k, 0.0) for k in range(4)]]
    memory = [[(base + QUARTER * k, 30000.0 if k >= 2 else 3.0) for k in range(4)]]  # a job waiting from the third
    assert not any(q.busy for q in quarters_of(gpu, [], [], POLICY, vcpus=8))
    held = quarters_of(gpu, [], [], POLICY, vcpus=8, memory=memory)
    assert [q.busy for q in held] == [False, False, True, True]


def test_gpu_memory_held_by_a_kernel_left_open_does_not_hide_the_start_of_a_nightly_job() -> None:
    # A machine that cannot answer runs a job 02:00-03:00 UTC each night (GPU at 90 %); its person's notebook kernel
    # holds 20 GB of GPU memory at 0 % from a day's 09:00 on. Memory held is work only while a job may be waiting
    # (MEMORY_WAIT): read as work all night, it hid the job's start, and the machine was stopped into it.
    monday = datetime(2026, 11, 16, tzinfo=UTC)
    now = monday + timedelta(days=3, hours=14)
    gpu, memory, cpu = [], [], []
    t = now - timedelta(days=14)
    while t < now:
        gpu.append((t, 90.0 if t.hour == 2 and t >= monday else 0.0))
        memory.append((t, 20_000.0 if t >= monday - timedelta(hours=15) else 5.0))
        cpu.append((t, 0.1))
        t += QUARTER
    held = quarters_of([gpu], [], cpu, POLICY, 96, memory=[memory])
    found = on_its_clocks(held, [], now, ("UTC",))
    assert found is not None
    assert len(found.nights) >= 2
    # a job that begins by waiting: its memory held from its wait is work from then, as before
    wait = monday + timedelta(days=2, hours=5, minutes=30)
    waiting = [(wait + QUARTER * k, 0.0) for k in range(12)]
    holding = [(wait + QUARTER * k, 20_000.0) for k in range(12)]
    quarters = quarters_of([waiting], [], [(q, 0.1) for q, _ in waiting], POLICY, 96, memory=[holding])
    assert next(q.at for q in quarters if q.busy) == wait
