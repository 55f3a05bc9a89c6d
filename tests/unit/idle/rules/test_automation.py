"""A machine that cannot answer the activity check, judged from its metrics alone: work of its own at night makes it
an automation machine (held into its night, started before its evening), until two quiet nights pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core.records import Instance, Price
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import ActivityReport, Session
from costguard.idle.rules.automation import (
    BLIND,
    CANNOT_SEE,
    LET_IT_SEE,
    MORNING,
    WORKING_DAY,
    night_work,
    on_its_clocks,
    persons_day_work,
    runs_by_itself,
    spared_in_the_morning,
    unseen_nights,
    unwatched_nights,
    with_night_work,
)
from costguard.idle.rules.decision import Action, Decision, StartFor
from costguard.idle.rules.jobs import Job, JobKind, MachineJobs
from costguard.idle.rules.recurring import QUARTER, Quarter, quarters_of
from costguard.idle.words.messages import idle_warning
from costguard.slack.blocks import mention

POLICY = IdlePolicy()  # window 120 min, grace 30 min, shortest stop 90 min, lead 15 min
MONDAY = datetime(2026, 11, 23, tzinfo=UTC)


def fortnight(
    now: datetime, busy: Sequence[tuple[datetime, timedelta]], *, off: Sequence[tuple[datetime, timedelta]] = ()
) -> list[Quarter]:
    """Two weeks of a machine left running and idle, but for its `busy` stretches (and `off`: stopped)."""
    out = []
    at = (now - timedelta(days=14)).replace(second=0, microsecond=0)
    at -= timedelta(minutes=at.minute % 15)  # CloudWatch's quarter-hours
    while at < now:
        working = any(start <= at < start + length for start, length in busy)
        stopped = any(start <= at < start + length for start, length in off)
        out.append(Quarter(at, None if stopped else working, gpu=working and not stopped))
        at += QUARTER
    return out


def pipeline_night(day: datetime, hour: int = 22, hours: int = 2) -> tuple[datetime, timedelta]:
    return day.replace(hour=hour), timedelta(hours=hours)


def warn(now: datetime) -> Decision:
    return Decision("i-1", Action.WARN, "idle for 2 h", stop_after=now + timedelta(minutes=30))


def test_work_of_its_own_seen_on_one_night_makes_it_an_automation_machine() -> None:
    now = MONDAY + timedelta(days=1, hours=14)  # Tuesday 14:00
    found = night_work(fortnight(now, [pipeline_night(MONDAY)]), [], now, "UTC")
    assert found is not None
    assert found.nights == (MONDAY.date(),)
    assert found.describe() == "runs GPU work of its own at night (last night, starting by 22:00 UTC)"


def test_seen_twice_it_says_so_and_is_held_from_the_latest_start() -> None:
    now = MONDAY + timedelta(days=2, hours=14)  # Wednesday 14:00
    found = night_work(
        fortnight(now, [pipeline_night(MONDAY), pipeline_night(MONDAY + timedelta(days=1), 23)]), [], now, "UTC"
    )
    assert found is not None
    assert len(found.nights) == 2
    assert (found.earliest, found.latest) == (timedelta(hours=4), timedelta(hours=5))
    assert "2 of the last nights, starting by 23:00 UTC" in found.describe()


def test_a_one_off_night_training_run_does_not_hold_the_machine_for_ever() -> None:
    run = pipeline_night(MONDAY, 21, 6)
    assert night_work(
        fortnight(MONDAY + timedelta(days=2, hours=14), [run]), [], MONDAY + timedelta(days=2, hours=14), "UTC"
    )
    thursday = MONDAY + timedelta(days=3, hours=14)  # the nights of Tuesday and Wednesday were quiet
    assert night_work(fortnight(thursday, [run]), [], thursday, "UTC") is None


def test_a_pipeline_of_the_working_week_is_still_one_on_monday_after_its_quiet_weekend() -> None:
    """Seen on the evenings of a working week (Monday to Friday), quiet on Saturday's and Sunday's: on Monday
    afternoon it is still an automation machine, held into its Monday evening (before, the two weekend nights ended
    it, and it was stopped into Monday's run: the bench's harder week with a fortnight of history)."""
    friday = MONDAY - timedelta(days=3)
    week = [pipeline_night(friday - timedelta(days=k)) for k in range(5)]
    monday = MONDAY + timedelta(hours=15)
    found = night_work(fortnight(monday, week), [], monday, "UTC")
    assert found is not None
    assert found.nights[-1] == friday.date()
    tuesday, wednesday = monday + timedelta(days=1), monday + timedelta(days=2)
    assert night_work(fortnight(tuesday, week), [], tuesday, "UTC") is not None  # one weekday night quiet
    assert night_work(fortnight(wednesday, week), [], wednesday, "UTC") is None  # two: it has stopped


def test_a_job_at_two_from_monday_to_friday_is_still_held_on_sunday_for_its_monday_run() -> None:
    """`0 2 * * 1-5`: its runs belong to the evenings of Sunday to Thursday. Its Friday and Saturday evenings are its
    rest, not quiet nights: on Sunday it is still an automation machine (held into Sunday's evening for Monday's
    run)."""
    runs = [pipeline_night(MONDAY - timedelta(days=k), 2, 1) for k in (3, 4, 5, 6, 7)]  # Mon 16th to Fri 20th
    for sunday in (MONDAY - timedelta(hours=10), MONDAY - timedelta(hours=1)):  # Sunday 14:00 and 23:00
        assert night_work(fortnight(sunday, runs), [], sunday, "UTC") is not None


def test_work_seen_on_one_friday_night_holds_through_the_weekend_to_two_weekday_nights() -> None:
    """One night seen, a Friday's (a first week's): its work may be a working week's, so the weekend's nights are
    not quiet ones. On Monday it is still held for a Monday night's job; after Monday's and Tuesday's nights
    without work, it is not (a one-off run: four nights, not for ever)."""
    friday = MONDAY - timedelta(days=3)
    run = [pipeline_night(friday, 22, 2)]
    monday = MONDAY + timedelta(hours=20)
    assert night_work(fortnight(monday, run), [], monday, "UTC") is not None
    wednesday = MONDAY + timedelta(days=2, hours=14)
    assert night_work(fortnight(wednesday, run), [], wednesday, "UTC") is None


def test_without_gpu_metrics_its_cpu_shows_its_persons_start_but_never_ends_an_unwatched_hold() -> None:
    """A machine that sends no GPU metric has only its CPU to show work. Work its person started it for still shows
    their hours; but its CPU alone never ends the hold of weekday nights not watched yet: the system's timers look
    the same (one weekday night watched ends it)."""
    now = MONDAY + timedelta(hours=15)
    run = [(MONDAY.replace(hour=9), timedelta(hours=3))]  # 10:00 in Paris
    cpu_only = [replace(q, gpu=None) for q in since_sunday(now, run)]
    assert unwatched_nights(cpu_only, now, "Europe/Paris") is not None
    assert persons_day_work(cpu_only, [MONDAY.replace(hour=8, minute=50)], "Europe/Paris") == (timedelta(hours=10),)
    tuesday = MONDAY + timedelta(days=1, hours=9)
    assert unwatched_nights([replace(q, gpu=None) for q in since_sunday(tuesday)], tuesday, "Europe/Paris") is None


def test_a_machine_seen_at_work_on_a_weekend_night_counts_its_weekend_nights_as_quiet() -> None:
    saturday = MONDAY - timedelta(days=2)
    tuesday = MONDAY + timedelta(days=1, hours=15)  # Sunday's night and Monday's quiet
    assert night_work(fortnight(tuesday, [pipeline_night(saturday)]), [], tuesday, "UTC") is None


def test_work_a_person_started_the_machine_for_is_not_its_own() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    started = MONDAY.replace(hour=21, minute=30)
    stopped_before = [(MONDAY.replace(hour=9), timedelta(hours=12, minutes=30))]
    quarters = fortnight(now, [pipeline_night(MONDAY)], off=stopped_before)  # off until 21:30, then up
    assert night_work(quarters, [started], now, "UTC") is None
    left_running = fortnight(now, [pipeline_night(MONDAY)])
    assert night_work(left_running, [MONDAY.replace(hour=21, minute=45)], now, "UTC") is None  # a person's start


def test_the_days_work_is_its_persons_not_its_own() -> None:
    now = MONDAY + timedelta(days=1, hours=20)
    assert night_work(fortnight(now, [pipeline_night(MONDAY, 10, 4)]), [], now, "UTC") is None


def test_the_night_is_on_the_teams_clock() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    # 22:00 UTC is 07:00 in Tokyo: a morning's work there, not the machine's own night work.
    assert night_work(fortnight(now, [pipeline_night(MONDAY)]), [], now, "Asia/Tokyo") is None


def test_a_warning_in_the_day_stops_it_and_starts_it_again_before_its_evening() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    found = night_work(fortnight(now, [pipeline_night(MONDAY)]), [], now, "UTC")
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.WARN
    assert decided.start_at == now.replace(hour=17, minute=45)
    assert decided.start_for is StartFor.RUN
    assert decided.next_work.startswith("runs GPU work of its own at night")


def test_a_stop_that_would_fall_in_its_evening_is_not_warned_of_and_says_what_costguard_cannot_see() -> None:
    now = MONDAY + timedelta(days=1, hours=17, minutes=37)  # the stop would come at 18:07
    found = night_work(fortnight(now, [pipeline_night(MONDAY)]), [], now, "UTC")
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.NONE
    assert "held until its night's work has run (until 00:00 UTC at the latest)" in decided.reason
    assert CANNOT_SEE in decided.reason


def test_a_job_that_begins_by_waiting_is_not_stopped_before_its_work_came() -> None:
    evening = MONDAY + timedelta(days=1, hours=21)  # Tuesday 21:00: quiet since 18:00, its work comes at 22:00
    quarters = fortnight(evening, [pipeline_night(MONDAY)])
    stop = Decision("i-1", Action.STOP, "idle for 2 h", stop_after=evening)
    assert with_night_work(stop, night_work(quarters, [], evening, "UTC"), POLICY, evening, may_start=True).action is (
        Action.NONE
    )


def test_once_tonights_work_has_run_it_is_stopped_after_it() -> None:
    late = MONDAY + timedelta(days=2, hours=1)  # Wednesday 01:00: Tuesday's work ran 22:00-23:00, idle since
    quarters = fortnight(late, [pipeline_night(MONDAY), pipeline_night(MONDAY + timedelta(days=1), 22, 1)])
    found = night_work(quarters, [], late, "UTC")
    stop = Decision("i-1", Action.STOP, "idle for 2 h", stop_after=late)
    decided = with_night_work(stop, found, POLICY, late, may_start=True)
    assert decided.action is Action.STOP
    assert decided.start_at == (MONDAY + timedelta(days=2)).replace(hour=17, minute=45)


def test_where_costguard_may_not_start_machines_it_is_not_stopped_before_its_evening() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    found = night_work(fortnight(now, [pipeline_night(MONDAY)]), [], now, "UTC")
    decided = with_night_work(warn(now), found, POLICY, now, may_start=False)
    assert decided.action is Action.NONE
    assert "LearnedStarts is off" in decided.reason


def test_a_machine_without_night_work_is_judged_as_any_other() -> None:
    now = MONDAY + timedelta(days=1, hours=20)
    assert with_night_work(warn(now), None, POLICY, now, may_start=True) == warn(now)


def test_the_warning_of_a_machine_judged_on_metrics_alone_says_what_costguard_cannot_see_and_how_to_let_it() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    g5 = Instance("i-1", "us-east-1", "g5.12xlarge", "running", now - timedelta(days=3), {})
    part = idle_warning(g5, replace(warn(now), blind=True), Price(5.672, "pricing-api"), mention("U0ALICE"), now)
    assert f"Judged from its metrics alone: {BLIND}; to let it see, {LET_IT_SEE}." in part.detail
    seen = idle_warning(g5, warn(now), Price(5.672, "pricing-api"), mention("U0ALICE"), now)
    assert "metrics alone" not in seen.detail


def test_a_stop_after_tonights_work_has_run_carries_its_start_before_the_next_evening() -> None:
    late = MONDAY + timedelta(days=1, hours=23, minutes=30)  # Tuesday 23:30, within the night's hold
    quarters = fortnight(
        late, [pipeline_night(MONDAY), (MONDAY.replace(hour=22) + timedelta(days=1), timedelta(minutes=30))]
    )
    found = night_work(quarters, [], late, "UTC")
    assert found is not None
    assert found.tonight(late) == MONDAY.replace(hour=18) + timedelta(days=1)
    stop = Decision("i-1", Action.STOP, "idle for 2 h", stop_after=late)
    decided = with_night_work(stop, found, POLICY, late, may_start=True)
    assert decided.action is Action.STOP
    assert decided.start_at == (MONDAY + timedelta(days=2)).replace(hour=17, minute=45)


def test_costguards_own_start_before_its_evening_does_not_hide_the_night_work_it_was_for() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    started = MONDAY.replace(hour=17, minute=45)
    quarters = fortnight(
        now, [pipeline_night(MONDAY, 18, 1)], off=[(MONDAY.replace(hour=10), timedelta(hours=7, minutes=45))]
    )
    assert night_work(quarters, [], now, "UTC") is None  # up only 45 minutes before: started for it
    found = night_work(quarters, [], now, "UTC", ours=[started])
    assert found is not None
    assert found.nights == (MONDAY.date(),)


def test_the_earliest_and_latest_starts_are_those_of_any_night() -> None:
    now = MONDAY + timedelta(days=2, hours=14)
    two_jobs = [
        pipeline_night(MONDAY, 19, 1),
        pipeline_night(MONDAY, 23, 1),
        pipeline_night(MONDAY + timedelta(days=1), 21, 1),
    ]
    found = night_work(fortnight(now, two_jobs), [], now, "UTC")
    assert found is not None
    assert (found.earliest, found.latest) == (timedelta(hours=1), timedelta(hours=5))


# A box that answers the check and runs by itself: its nights on its own clock (its owners' zone), and every night
# held while costguard has not watched it for a week.

HOUSEKEEPING = (
    Job(JobKind.CRON, "*/10 * * * *", "healthcheck.sh"),
    Job(JobKind.CRON, "0 * * * *", "logrotate"),
    Job(JobKind.CRON, "@reboot", "mount-data.sh"),
)


def by_itself(zone: str | None, *jobs: Job, sessions: tuple[Session, ...] = ()) -> ActivityReport:
    return ActivityReport(sessions=sessions, jobs=MachineJobs(jobs=jobs or HOUSEKEEPING, zone=zone, found=3))


def test_a_box_whose_crontab_is_housekeeping_only_and_nobody_logged_in_runs_by_itself_on_its_own_clock() -> None:
    now = MONDAY + timedelta(hours=10)
    window = timedelta(minutes=POLICY.window_minutes)
    assert runs_by_itself(by_itself("Asia/Kolkata"), now, window) == "Asia/Kolkata"
    assert runs_by_itself(by_itself(None), now, window) == "UTC"  # a check that does not say: the machine's UTC
    assert runs_by_itself(by_itself("Asia/Kolkata", sessions=(Session("pts/0", 60),)), now, window) is None
    nightly = Job(JobKind.CRON, "0 1 * * *", "nightly.py")
    assert runs_by_itself(by_itself("UTC", *HOUSEKEEPING, nightly), now, window) is None  # its crontab says when
    assert runs_by_itself(ActivityReport(jobs=MachineJobs()), now, window) is None  # no crontab: nothing says so
    assert runs_by_itself(ActivityReport(), now, window) is None  # an older check, without its jobs


def test_a_box_whose_check_names_a_zone_that_cannot_be_read_runs_on_the_teams_clock_not_utc() -> None:
    now = MONDAY + timedelta(hours=10)
    window = timedelta(minutes=POLICY.window_minutes)
    assert runs_by_itself(by_itself("IST"), now, window, "Asia/Kolkata") == "Asia/Kolkata"
    assert runs_by_itself(by_itself("../../etc/passwd"), now, window, "Europe/Berlin") == "Europe/Berlin"
    assert runs_by_itself(by_itself(None), now, window, "Europe/Berlin") == "UTC"  # it says nothing: its UTC


def test_a_day_job_running_into_its_evening_does_not_end_a_new_boxs_hold_through_its_night() -> None:
    # New York, watched two days. A day job 16:15-18:15 there (21:15-23:15 UTC); at 21:00 there (02:00 UTC) it
    # has idled 2 h 45 min. Nothing of its night has been seen: its night's work may still come.
    now = MONDAY + timedelta(days=1, hours=2)
    day_job = (MONDAY.replace(hour=21, minute=15), timedelta(hours=2))
    quarters = [q for q in fortnight(now, [day_job]) if q.at >= now - timedelta(days=2)]
    held = with_night_work(warn(now), unseen_nights(quarters, now, "America/New_York"), POLICY, now, may_start=True)
    assert held.action is Action.NONE
    assert "held until its night's work has run" in held.reason


def test_a_box_that_runs_by_itself_watched_for_a_day_is_stopped_in_the_day_and_started_before_its_owners_evening() -> (
    None
):
    now = MONDAY + timedelta(hours=9)  # 14:30 in Kolkata, a day after the deploy
    quarters = [q for q in fortnight(now, []) if q.at >= now - timedelta(days=1)]
    found = unseen_nights(quarters, now, "Asia/Kolkata")
    assert found is not None
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.WARN
    assert decided.start_at == MONDAY.replace(hour=12, minute=15)  # 18:00 in Kolkata, less the lead
    said = "runs by itself (housekeeping crontab, nobody logged in) and may work any evening on its clock"
    assert decided.next_work == f"{said} (Asia/Kolkata)"


def test_a_new_box_that_runs_by_itself_is_held_through_its_owners_evening_in_new_york_until_work_has_run() -> None:
    evening = MONDAY + timedelta(days=1, hours=1)  # Monday 20:00 in New York, Tuesday 01:00 UTC
    quarters = [q for q in fortnight(evening, []) if q.at >= evening - timedelta(days=2)]
    held = with_night_work(
        warn(evening), unseen_nights(quarters, evening, "America/New_York"), POLICY, evening, may_start=True
    )
    assert held.action is Action.NONE
    assert "held until its night's work has run (until 11:00 UTC at the latest)" in held.reason  # 06:00 there
    assert CANNOT_SEE not in held.reason  # it answers the check: nothing to let costguard see
    ran = [
        q
        for q in fortnight(evening, [(MONDAY.replace(hour=23, minute=30), timedelta(minutes=30))])
        if q.at >= evening - timedelta(days=2)
    ]
    stopped = with_night_work(
        warn(evening), unseen_nights(ran, evening, "America/New_York"), POLICY, evening, may_start=True
    )
    assert stopped.action is Action.WARN  # tonight's work came and went: stopped, and started before tomorrow's
    assert stopped.start_at == (MONDAY + timedelta(days=1)).replace(hour=22, minute=45)


def test_a_box_that_runs_by_itself_watched_for_a_week_is_held_only_for_the_nights_it_worked() -> None:
    now = MONDAY + timedelta(days=8, hours=9)
    assert unseen_nights(fortnight(now, []), now, "Asia/Kolkata") is None


def test_a_nightly_job_at_six_utc_is_night_work_on_its_new_york_owners_clock_not_on_utc() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    seen = fortnight(now, [pipeline_night(MONDAY + timedelta(days=1), 6, 1)])  # 01:00 in New York
    assert night_work(seen, [], now, "UTC") is None  # 06:00 UTC: the morning, on the team's clock
    found = night_work(seen, [], now, "America/New_York", blind=False)
    assert found is not None
    assert found.describe() == "runs GPU work of its own at night (last night, starting by 01:00 America/New_York)"
    assert not found.cannot_see()


def test_an_evening_pipeline_in_kolkata_is_night_work_on_its_clock_and_its_start_comes_before_that_evening() -> None:
    now = MONDAY + timedelta(days=1, hours=6)  # Tuesday 11:30 in Kolkata
    seen = fortnight(now, [(MONDAY.replace(hour=13, minute=15), timedelta(hours=2))])  # 18:45 there
    assert night_work(seen, [], now, "UTC") is None  # 13:15 UTC: the team's afternoon
    found = night_work(seen, [], now, "Asia/Kolkata", blind=False)
    assert found is not None
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.start_at == (MONDAY + timedelta(days=1)).replace(hour=12, minute=15)


def test_a_nightly_box_just_after_its_job_ran_is_not_taken_for_one_whose_crontab_is_housekeeping() -> None:
    after_its_job = MONDAY + timedelta(hours=2, minutes=30)  # its 01:00 job ran within the idle window just judged
    nightly = Job(JobKind.CRON, "0 1 * * *", "nightly.py")
    window = timedelta(minutes=POLICY.window_minutes)
    assert runs_by_itself(by_itself("UTC", *HOUSEKEEPING, nightly), after_its_job, window) is None
    assert runs_by_itself(by_itself("UTC", Job(JobKind.CRON, "not a schedule", "x")), after_its_job, window) is None


def test_the_warning_of_a_new_box_that_runs_by_itself_says_it_is_started_before_its_owners_evening() -> None:
    now = MONDAY + timedelta(hours=9)
    found = unseen_nights([q for q in fortnight(now, []) if q.at >= now - timedelta(days=1)], now, "Asia/Kolkata")
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    g5 = Instance("i-1", "us-east-1", "g5.12xlarge", "running", now - timedelta(days=3), {})
    part = idle_warning(g5, decided, Price(5.672, "pricing-api"), mention("U0ALICE"), now)
    said = f"{part.status} {part.detail}"
    assert "It runs by itself (housekeeping crontab, nobody logged in) and may work any evening on its clock" in said
    assert "costguard starts it again" in said
    assert "metrics alone" not in said  # it answers the check


# A machine that cannot answer: its nights on its owner's clock (Slack's `tz`) and the team's; unwatched weekday nights.
SUNDAY = MONDAY - timedelta(days=1)
PARIS_AND_UTC = ("Europe/Paris", "UTC")


def since_sunday(now: datetime, busy: Sequence[tuple[datetime, timedelta]] = ()) -> list[Quarter]:
    """A deploy on a fresh account: CloudWatch has the machine from Sunday 00:00 UTC only."""
    return [q for q in fortnight(now, busy) if q.at >= SUNDAY]


def test_a_blind_pipeline_at_one_in_new_york_is_read_on_its_owners_clock_where_utc_sees_a_morning() -> None:
    now = MONDAY + timedelta(days=1, hours=14)
    seen = fortnight(now, [pipeline_night(MONDAY + timedelta(days=1), 6, 1)])  # 01:00 in New York
    assert night_work(seen, [], now, "UTC") is None
    found = on_its_clocks(seen, [], now, ("America/New_York", "UTC"))
    assert found is not None
    assert found.zone == "America/New_York"
    assert found.describe() == "runs GPU work of its own at night (last night, starting by 01:00 America/New_York)"


def test_a_blind_box_on_utc_whose_owner_is_in_kolkata_keeps_the_clock_that_saw_its_nights() -> None:
    now = MONDAY + timedelta(days=2, hours=14)
    nights = [pipeline_night(MONDAY, 2, 1), pipeline_night(MONDAY + timedelta(days=1), 2, 1)]  # 07:30 in Kolkata
    found = on_its_clocks(fortnight(now, nights), [], now, ("Asia/Kolkata", "UTC"))
    assert found is not None
    assert (found.zone, len(found.nights)) == ("UTC", 2)


def test_a_blind_machine_watched_only_on_a_sunday_is_held_through_its_owners_night_not_into_their_day() -> None:
    now = MONDAY + timedelta(hours=0, minutes=30)  # 01:30 in Paris: the stop would fall in its night
    found = on_its_clocks(since_sunday(now), [], now, PARIS_AND_UTC)
    assert found is not None
    assert found.unseen
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.NONE
    assert "has not watched yet" in decided.reason
    assert "held until its night's work has run (until 05:00 UTC at the latest)" in decided.reason  # 06:00 in Paris
    assert CANNOT_SEE in decided.reason


def test_work_seen_on_a_sunday_night_does_not_shorten_its_first_weekday_nights_hold() -> None:
    """A New York box watched from a Sunday, with twenty minutes of work at 19:15 on Sunday evening there (the
    system's timers, or a job of the weekend): that one night says its work starts by 19:15, and held it only
    until 21:15 (two hours past), where a weekday job of its own begins by waiting at 22:00 (the bench's unseen
    seeds: stopped at 21:15 on Monday, its job found it stopped). No weekday night watched yet: its Monday night
    is held whole, as any unwatched machine's."""
    sunday_evening = MONDAY.replace(minute=15)  # 00:15 UTC: 19:15 on Sunday in New York
    now = MONDAY + timedelta(days=1, hours=1, minutes=45)  # 20:45 on Monday in New York
    seen = since_sunday(now, [(sunday_evening, timedelta(minutes=30))])
    found = on_its_clocks(seen, [], now, ("America/New_York", "UTC"))
    assert found is not None
    assert found.nights
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.NONE  # its stop at 21:15 there would fall in its unwatched night
    assert "has not watched yet" in decided.reason


def test_in_its_day_it_is_stopped_and_started_again_before_its_owners_evening() -> None:
    now = MONDAY + timedelta(hours=9)
    found = unwatched_nights(since_sunday(now), now, "Europe/Paris")
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.WARN
    assert decided.start_at == MONDAY.replace(hour=16, minute=45)  # 18:00 in Paris, less the lead
    assert decided.start_for is StartFor.RUN


def test_a_weekday_night_watched_idle_ends_the_hold() -> None:
    tuesday = MONDAY + timedelta(days=1, hours=9)
    assert unwatched_nights(since_sunday(tuesday), tuesday, "Europe/Paris") is None
    sunday_night_only = since_sunday(MONDAY + timedelta(hours=9))
    assert unwatched_nights(sunday_night_only, MONDAY + timedelta(hours=9), "Europe/Paris") is not None


def test_work_begun_in_its_persons_day_makes_it_a_persons_machine_not_an_unwatched_one() -> None:
    now = MONDAY + timedelta(hours=15)
    run = [(MONDAY.replace(hour=9), timedelta(hours=3))]  # 10:00 in Paris
    assert unwatched_nights(since_sunday(now, run), now, "Europe/Paris") is None
    assert on_its_clocks(since_sunday(now, run), [], now, PARIS_AND_UTC) is None


def read_since_sunday(
    now: datetime, core_busy: Sequence[datetime] = (), gpu_busy: Sequence[datetime] = ()
) -> list[Quarter]:
    """A fresh deploy's quarter-hours read as the sweep reads them (`quarters_of`): CloudWatch from Sunday 00:00
    UTC, a 4-GPU machine at rest but for its busiest core at `core_busy` and its GPUs at `gpu_busy`."""
    times = [SUNDAY + QUARTER * k for k in range(int((now - SUNDAY) / QUARTER))]
    gpus = [[(t, 80.0 if t in gpu_busy else 0.0) for t in times] for _ in range(4)]
    core = [(t, 100.0 if t in core_busy or t in gpu_busy else 4.0) for t in times]
    cpu = [(t, 3.0 if t in core_busy or t in gpu_busy else 0.1) for t in times]
    memory = [[(t, 3.0) for t in times] for _ in range(4)]
    return quarters_of(gpus, core, cpu, POLICY, 8, memory=memory)


def test_the_systems_timers_in_its_owners_morning_are_not_a_persons_day_and_its_unwatched_night_still_holds() -> None:
    """A pipeline box that cannot answer, watched from a Sunday: its GPUs did nothing, but apt's and snapd's timers
    ran a core on and off for half an hour at 07:00 and 08:00 in Paris, which the CPU alone calls work of the day.
    Before, that made it a person's machine: not held through its first weekday night, stopped at 01:30 on Monday,
    and never started for the 22:00 job it had (an interruption on the bench's unseen seeds)."""
    now = MONDAY + timedelta(minutes=30)
    timers = [SUNDAY.replace(hour=6), SUNDAY.replace(hour=6, minute=15), SUNDAY.replace(hour=7, minute=15)]
    timers += [SUNDAY.replace(hour=7, minute=30)]
    seen = read_since_sunday(now, core_busy=timers)
    assert [q.at for q in seen if q.busy] == timers  # the CPU calls it work
    found = unwatched_nights(seen, now, "Europe/Paris")
    assert found is not None
    assert with_night_work(warn(now), found, POLICY, now, may_start=True).action is Action.NONE
    run = read_since_sunday(now, gpu_busy=timers)  # the same hours with its GPUs at work: its person's day
    assert unwatched_nights(run, now, "Europe/Paris") is None


def test_an_unwatched_machine_in_kolkata_is_not_held_into_its_persons_day_on_the_teams_night() -> None:
    now = MONDAY  # 05:30 in Kolkata: its stop would come at 06:00 there, the team's (UTC) night still on
    found = on_its_clocks(since_sunday(now), [], now, ("Asia/Kolkata", "UTC"))
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.WARN
    assert decided.start_at == MONDAY.replace(hour=12, minute=15)  # before 18:00 in Kolkata


BERLIN_TEAM_NEW_YORK_OWNER = ("America/New_York", "Europe/Berlin")


def test_a_blind_box_with_a_job_on_its_owners_night_and_another_on_the_teams_evening_is_held_for_both() -> None:
    days = [MONDAY + timedelta(days=d) for d in range(3)]
    new_york = [(d.replace(hour=6), timedelta(hours=1)) for d in days]  # 01:00 in New York, 3 nights
    berlin = [(d.replace(hour=19), timedelta(hours=1)) for d in days[:2]]  # 20:00 in Berlin, 2 nights
    now = MONDAY + timedelta(days=2, hours=17, minutes=30)  # Wednesday: a stop would fall at 19:00 in Berlin
    found = on_its_clocks(fortnight(now, new_york + berlin), [], now, BERLIN_TEAM_NEW_YORK_OWNER)
    assert found is not None
    assert found.zone == "America/New_York"  # more nights there
    assert [n.zone for n in found.others] == ["Europe/Berlin"]
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.NONE  # held for its Berlin evening's job
    assert "Europe/Berlin" in decided.reason


def test_in_the_day_a_box_with_jobs_on_two_clocks_is_started_before_the_first_of_them() -> None:
    days = [MONDAY + timedelta(days=d) for d in range(3)]
    new_york = [(d.replace(hour=6), timedelta(hours=1)) for d in days]
    berlin = [(d.replace(hour=19), timedelta(hours=1)) for d in days[:2]]
    now = MONDAY + timedelta(days=2, hours=9)  # Wednesday 10:00 in Berlin
    found = on_its_clocks(fortnight(now, new_york + berlin), [], now, BERLIN_TEAM_NEW_YORK_OWNER)
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.action is Action.WARN
    assert decided.start_at == now.replace(hour=16, minute=45)  # before 18:00 in Berlin, not 18:00 in New York


def test_a_blind_box_whose_owners_day_work_is_the_teams_evening_is_held_for_the_teams_night() -> None:
    # Deployed on a Sunday at 18:30 in Berlin; the only work seen began at 19:00 there, 13:00 in its owner's New
    # York, half an hour after the data begins (not a night's work of a machine left running: none seen yet).
    now = MONDAY + timedelta(hours=9)  # Monday 10:00 in Berlin
    work = [(SUNDAY.replace(hour=18), timedelta(hours=3))]
    seen = [q for q in fortnight(now, work) if q.at >= SUNDAY.replace(hour=17, minute=30)]
    assert on_its_clocks(seen, [], now, ("Europe/Berlin",)) is not None  # the team's clock alone holds it
    assert unwatched_nights(seen, now, "America/New_York") is None  # their day's work, on their clock
    found = on_its_clocks(seen, [], now, BERLIN_TEAM_NEW_YORK_OWNER)
    assert found is not None
    assert found.zone == "Europe/Berlin"
    decided = with_night_work(warn(now), found, POLICY, now, may_start=True)
    assert decided.start_at == MONDAY.replace(hour=16, minute=45)  # started before its Berlin evening


KOLKATA_OWNER_UTC_TEAM = ("Asia/Kolkata", "UTC")


def kolkata_persons_machine(now: datetime) -> tuple[list[Quarter], list[datetime], list[datetime]]:
    """Deployed on a Sunday; stopped by costguard overnight, started by its person at 05:20 UTC on Monday (10:50
    in Kolkata) for a run, stopped after it and started by costguard at 17:45 UTC for the team's night; on
    Tuesday its person's run began at 04:25 UTC (09:55 in Kolkata) on the machine left running. Quarters, the
    starts people made, costguard's starts."""
    person = MONDAY.replace(hour=5, minute=20)  # within the quarter-hour of 05:15, the first one busy
    ours = MONDAY.replace(hour=17, minute=45)
    runs = [
        (MONDAY.replace(hour=5, minute=15), timedelta(hours=7)),
        (MONDAY.replace(hour=4, minute=30) + timedelta(days=1), timedelta(hours=3)),
    ]
    off = [
        (MONDAY.replace(minute=30), timedelta(hours=4, minutes=45)),
        (MONDAY.replace(hour=15), ours - MONDAY.replace(hour=15)),
    ]
    return [q for q in fortnight(now, runs, off=off) if q.at >= SUNDAY], [person], [ours]


def test_a_persons_morning_run_in_kolkata_on_a_machine_costguard_started_is_not_night_work_on_utc() -> None:
    now = MONDAY + timedelta(days=1, hours=10)  # Tuesday 15:30 in Kolkata: the run is over, the machine idle
    quarters, people, ours = kolkata_persons_machine(now)
    assert night_work(quarters, people, now, "UTC", ours=ours) is not None  # read on the team's clock alone
    assert on_its_clocks(quarters, people, now, KOLKATA_OWNER_UTC_TEAM, ours=ours) is None
    decided = with_night_work(warn(now), None, POLICY, now, may_start=True)
    assert (decided.action, decided.start_at) == (Action.WARN, None)  # stopped, and started by its person


def test_a_persons_machine_in_kolkata_is_not_held_through_the_teams_unwatched_night() -> None:
    now = MONDAY + timedelta(hours=13)  # Monday 18:30 in Kolkata, after the person's run: no weekday night seen
    quarters, people, _ = kolkata_persons_machine(now)
    assert on_its_clocks(quarters, [], now, KOLKATA_OWNER_UTC_TEAM) is not None  # nobody's start: held on UTC
    assert on_its_clocks(quarters, people, now, KOLKATA_OWNER_UTC_TEAM) is None


def test_a_person_start_without_work_after_it_does_not_make_a_utc_nightly_box_a_persons_machine() -> None:
    now = MONDAY + timedelta(days=2, hours=14)
    nights = [pipeline_night(MONDAY, 2, 1), pipeline_night(MONDAY + timedelta(days=1), 2, 1)]  # 07:30 in Kolkata
    started_idle = [MONDAY.replace(hour=8)]  # 13:30 in Kolkata: no work after it
    found = on_its_clocks(fortnight(now, nights), started_idle, now, KOLKATA_OWNER_UTC_TEAM)
    assert found is not None
    assert (found.zone, len(found.nights)) == ("UTC", 2)


def test_a_person_whose_run_began_at_their_evening_keeps_the_night_work_of_their_clock() -> None:
    # A person in New York starts the box at 19:00 (their evening) for a run: not their day's work; the box's own
    # job at 01:00 there, three nights, still holds it.
    days = [MONDAY + timedelta(days=d) for d in range(3)]
    jobs = [(d.replace(hour=6), timedelta(hours=1)) for d in days]
    now = MONDAY + timedelta(days=2, hours=14)
    person = MONDAY.replace(hour=23)
    quarters = fortnight(
        now, [*jobs, (person, timedelta(hours=2))], off=[(MONDAY.replace(hour=20), timedelta(hours=3))]
    )
    found = on_its_clocks(quarters, [person], now, ("America/New_York", "UTC"))
    assert found is not None
    assert found.zone == "America/New_York"


def test_a_machine_its_owner_keeps_for_its_runs_keeps_its_night_work_on_utc_after_their_own_start() -> None:
    # Its owner started it in their day after a run failed, then asked costguard to keep it for its runs: their
    # word that it has runs of its own outranks what their start suggests.
    now = MONDAY + timedelta(days=1, hours=10)
    quarters, people, ours = kolkata_persons_machine(now)
    found = on_its_clocks(quarters, people, now, KOLKATA_OWNER_UTC_TEAM, ours=ours, for_runs=True)
    assert found is not None
    assert found.zone == "UTC"


def test_a_persons_start_at_their_desk_does_not_make_a_servers_night_job_at_another_hour_theirs() -> None:
    # A machine that cannot answer runs a server's job at 02:00 UTC (07:30 in Kolkata) on three nights; its Kolkata
    # owner started it once at their desk, Tuesday 05:00 UTC (10:30 there), and worked three hours on it. Their
    # work is at 10:30 on their clock; the job at 07:30 is not theirs, and still holds the machine on UTC's night
    # (it was read as theirs, and the machine stopped into its job the next night).
    now = MONDAY + timedelta(days=2, hours=14)
    nights = [pipeline_night(MONDAY + timedelta(days=d), 2, 1) for d in range(3)]
    person = MONDAY + timedelta(days=1, hours=5)
    quarters = fortnight(
        now, [*nights, (person, timedelta(hours=3))], off=[(person - timedelta(hours=1), timedelta(hours=1))]
    )
    assert persons_day_work(quarters, [person], "Asia/Kolkata") == (timedelta(hours=10, minutes=30),)
    found = on_its_clocks(quarters, [person], now, KOLKATA_OWNER_UTC_TEAM)
    assert found is not None
    assert found.zone == "UTC"
    assert len(found.nights) == 3


def test_a_stop_in_its_owners_weekday_morning_on_their_clock_waits_for_the_afternoon() -> None:
    """Wednesday 04:30 UTC is 10:00 in Kolkata: a person's run of the day may have just begun, unseen. The stop waits
    (its warning stands) until 13:00 there (07:30 UTC); at 13:30 there, on a Saturday morning, or before 08:00, the
    stop is made. A warning whose stop would fall in the morning waits too (none is given that promises a stop
    that is not coming); a zone that cannot be read is the team's."""
    stop = Decision("i-1", Action.STOP, "idle for 2 h")
    wednesday = datetime(2026, 11, 25, 4, 30, tzinfo=UTC)
    held = spared_in_the_morning(stop, "Asia/Kolkata", wednesday)
    assert held.action is Action.WAIT
    assert held.will_stop
    assert held.reason == f"not stopped in {MORNING} (Asia/Kolkata); {CANNOT_SEE}"
    assert spared_in_the_morning(stop, "Asia/Kolkata", wednesday.replace(hour=8)) == stop  # 13:30 there
    assert spared_in_the_morning(stop, "Asia/Kolkata", wednesday.replace(hour=2, minute=0)) == stop  # 07:30 there
    assert spared_in_the_morning(stop, "Asia/Kolkata", wednesday + timedelta(days=3)) == stop  # Saturday
    warn = replace(stop, action=Action.WARN, stop_after=wednesday.replace(hour=7, minute=0))  # stop at 12:30 there
    assert spared_in_the_morning(warn, "Asia/Kolkata", wednesday.replace(hour=6, minute=30)).action is Action.WAIT
    later = replace(warn, stop_after=wednesday.replace(hour=7, minute=45))  # its stop at 13:15 there: warned
    assert spared_in_the_morning(later, "Asia/Kolkata", wednesday.replace(hour=7, minute=15)) == later
    team = spared_in_the_morning(stop, "IST", wednesday, "Asia/Kolkata")  # not a zone: the team's
    assert team.action is Action.WAIT
    assert "(Asia/Kolkata)" in team.reason
    assert spared_in_the_morning(stop, "IST", wednesday.replace(hour=9)).action is Action.WAIT  # UTC: 09:30


def test_its_owners_word_that_nothing_runs_unseen_ends_the_hold_of_nights_not_watched_but_not_of_night_work_seen() -> (
    None
):
    now = MONDAY + timedelta(hours=0, minutes=30)  # 01:30 in Paris: an unwatched night would hold it
    assert on_its_clocks(since_sunday(now), [], now, PARIS_AND_UTC) is not None
    assert on_its_clocks(since_sunday(now), [], now, PARIS_AND_UTC, nothing_unseen=True) is None
    # Night work its data shows on its owner's clock holds it whatever they said: the evidence outranks the word.
    later = MONDAY + timedelta(days=1, hours=14)
    seen = fortnight(later, [pipeline_night(MONDAY + timedelta(days=1), 6, 1)])  # 01:00 in New York
    found = on_its_clocks(seen, [], later, ("America/New_York", "UTC"), nothing_unseen=True)
    assert found is not None
    assert found.nights
    # ... but no other clock's: with nobody's server job on it, work at 10:00 in Kolkata (04:30 UTC) is its person's.
    kolkata = fortnight(later, [(MONDAY + timedelta(days=1, hours=4, minutes=30), timedelta(hours=3))])
    assert on_its_clocks(kolkata, [], later, ("Asia/Kolkata", "UTC")) is not None  # UTC's night
    assert on_its_clocks(kolkata, [], later, ("Asia/Kolkata", "UTC"), nothing_unseen=True) is None


def test_a_held_unwatched_night_or_a_stop_before_it_is_marked_for_its_owners_word() -> None:
    night = MONDAY + timedelta(minutes=30)
    found = on_its_clocks(since_sunday(night), [], night, PARIS_AND_UTC)
    assert with_night_work(warn(night), found, POLICY, night, may_start=True).unwatched
    day = MONDAY + timedelta(hours=9)
    decided = with_night_work(
        warn(day), unwatched_nights(since_sunday(day), day, "Europe/Paris"), POLICY, day, may_start=True
    )
    assert decided.unwatched
    assert decided.action is Action.WARN
    seen = fortnight(day, [pipeline_night(MONDAY - timedelta(days=1), 22, 1)])
    assert not with_night_work(warn(day), night_work(seen, [], day, "UTC"), POLICY, day, may_start=True).unwatched


def test_a_machine_judged_by_its_cpu_alone_is_not_stopped_in_its_owners_working_day() -> None:
    """Without GPU metrics, judged by its CPU on its owner's word: a person's job that waits on a queue shows nothing
    at any hour of their day, so the stop waits until 18:00 on their clock; at night and at the weekend it is made."""
    stop = Decision("i-1", Action.STOP, "idle for 2 h", cpu_only=True)
    afternoon = datetime(2026, 11, 25, 14, 0, tzinfo=UTC)  # Wednesday 15:00 in Paris
    held = spared_in_the_morning(stop, "Europe/Paris", afternoon)
    assert held.action is Action.WAIT
    assert held.reason == f"not stopped in {WORKING_DAY} (Europe/Paris); {CANNOT_SEE}"
    assert spared_in_the_morning(replace(stop, cpu_only=False), "Europe/Paris", afternoon) == replace(
        stop, cpu_only=False
    )  # with GPU metrics: only the morning
    assert spared_in_the_morning(stop, "Europe/Paris", afternoon.replace(hour=17)) == stop  # 18:00 in Paris
    assert spared_in_the_morning(stop, "Europe/Paris", afternoon + timedelta(days=3)) == stop  # Saturday
