"""Scarce capacity in the stopper's decisions and starts: pure rules, the evidence and `now` passed in."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import tags
from costguard.core.money import Basis, Marginal
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import ActivityCheck, ActivityReport, CheckState, Kernel, Session
from costguard.idle.rules.capacity import (
    BEFORE_OWNER,
    EARLIER,
    NOT_TODAY,
    SCARCE,
    Workdays,
    day_off,
    for_its_run,
    held_for_run,
    ready_for_the_day,
    someone_came,
    spared,
    tells_scarce,
    too_soon,
    unread,
    workdays,
    working_now,
)
from costguard.idle.rules.decision import Action, Decision, StartFor
from costguard.idle.rules.money import priced
from costguard.idle.rules.recurring import QUARTER, Quarter
from costguard.idle.rules.restarts import made_for, window_close, window_to_retry, working_hours_start
from costguard.idle.rules.schedule import parse_schedule

POLICY = IdlePolicy()
UTC_HOURS = parse_schedule("weekdays 08:00-19:00 UTC")
TUESDAY_2PM = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)
OPENS = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
LEAD = timedelta(minutes=POLICY.schedule_lead_minutes)
EVIDENCE = Scarcity("p4d.24xlarge", "us-east-1a", 6, TUESDAY_2PM - timedelta(hours=3), TUESDAY_2PM - timedelta(days=2))


def p4d(
    state: str = "running", launched: datetime = OPENS - timedelta(days=1), tagged: dict[str, str] | None = None
) -> Instance:
    return Instance(
        "i-0123456789abcdef0", "us-east-1", "p4d.24xlarge", state, launched, tagged or {}, zone="us-east-1a"
    )


def warn() -> Decision:
    return Decision("i-0123456789abcdef0", Action.WARN, "idle for 2 h", stop_after=TUESDAY_2PM + timedelta(minutes=30))


def test_owners_work_weekdays_eight_to_seven_in_the_teams_zone_unless_the_machine_keeps_hours_of_its_own() -> None:
    assert working_now(p4d(), TUESDAY_2PM, "UTC")
    assert not working_now(p4d(), TUESDAY_2PM.replace(hour=19, minute=30), "UTC")
    assert not working_now(p4d(), TUESDAY_2PM, "Asia/Tokyo")  # 23:00 in Tokyo
    assert not working_now(p4d(), datetime(2026, 11, 28, 14, 0, tzinfo=UTC), "UTC")  # a Saturday
    own = p4d(tagged={tags.SCHEDULE: "daily 01:00-05:00 UTC"})
    assert not working_now(own, TUESDAY_2PM, "UTC")  # its own hours are what count
    assert working_now(own, TUESDAY_2PM.replace(hour=2), "UTC")
    assert working_now(p4d(tagged={tags.SCHEDULE: "whenever"}), TUESDAY_2PM, "Nowhere/Else")  # unreadable: the team's


def test_a_scarce_machine_is_neither_warned_nor_stopped_while_its_owner_works_and_is_told_why() -> None:
    decided = spared(warn(), EVIDENCE, working=True, now=TUESDAY_2PM)
    assert decided.action is Action.NONE
    assert decided.reason.startswith(SCARCE)
    assert decided.scarce == "6 p4d.24xlarge starts failed for capacity in us-east-1a this week"
    assert tells_scarce(decided)
    stop = spared(Decision("i-1", Action.STOP, "idle through grace"), EVIDENCE, working=True, now=TUESDAY_2PM)
    assert stop.action is Action.CLEAR_WARNING  # warned before the evidence: the warning goes
    assert tells_scarce(stop)


def test_outside_working_hours_or_without_evidence_a_scarce_rule_changes_nothing() -> None:
    assert spared(warn(), EVIDENCE, working=False, now=TUESDAY_2PM) == warn()
    assert spared(warn(), None, working=True, now=TUESDAY_2PM) == warn()
    unseen = Decision("i-1", Action.WARN, "no GPU metrics", will_stop=False)  # stops nothing by itself
    assert spared(unseen, EVIDENCE, working=True, now=TUESDAY_2PM) == unseen
    assert not tells_scarce(warn())


def test_a_scarce_machines_working_hours_start_is_made_sooner() -> None:
    machine = p4d("stopped", tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    early = OPENS - LEAD - timedelta(minutes=30)
    assert working_hours_start(machine, early, POLICY) is None
    assert working_hours_start(machine, early, POLICY, sooner=EARLIER) == OPENS


def test_inside_open_hours_a_machine_nobody_started_for_them_is_a_retry_candidate() -> None:
    machine = p4d("stopped", tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    assert window_to_retry(machine, OPENS + timedelta(hours=2), POLICY) == OPENS  # made only if it was refused
    assert window_to_retry(machine, OPENS + timedelta(hours=9), POLICY) is None  # closed
    started = p4d("stopped", OPENS + timedelta(minutes=30), tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    assert window_to_retry(started, OPENS + timedelta(hours=2), POLICY) is None  # started (and stopped) since
    early = p4d("stopped", OPENS - LEAD - EARLIER, tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    assert window_to_retry(early, OPENS + timedelta(hours=2), POLICY) == OPENS  # not in a normal lead
    assert window_to_retry(early, OPENS + timedelta(hours=2), POLICY, sooner=EARLIER) is None  # a scarce one's


def test_a_scarce_machine_already_warned_has_its_warning_cleared_while_its_owner_works() -> None:
    waiting = Decision("i-1", Action.WAIT, "idle", stop_after=TUESDAY_2PM + timedelta(minutes=10))
    assert spared(waiting, EVIDENCE, working=True, now=TUESDAY_2PM).action is Action.CLEAR_WARNING
    again = Decision("i-1", Action.WARN, "still idle", stop_after=TUESDAY_2PM + timedelta(minutes=30), told=True)
    assert spared(again, EVIDENCE, working=True, now=TUESDAY_2PM).action is Action.CLEAR_WARNING


def test_a_stop_while_its_owner_works_waits_when_scarcity_could_not_be_read() -> None:
    stop = Decision("i-1", Action.STOP, "idle through grace")
    assert unread(stop).action is Action.NONE
    assert unread(warn()) == warn()  # a warning may go: the stop is decided again next sweep


def test_a_scarce_machines_stop_between_learned_runs_must_leave_room_for_its_sooner_start() -> None:
    shortest = timedelta(minutes=90)
    soon = replace(warn(), start_at=TUESDAY_2PM + timedelta(hours=2), next_work="daily at 16:15")
    assert too_soon(soon, EVIDENCE, shortest, TUESDAY_2PM).action is Action.NONE  # 30 + 90 > 120 - 45
    later = replace(soon, start_at=TUESDAY_2PM + timedelta(hours=3))
    assert too_soon(later, EVIDENCE, shortest, TUESDAY_2PM) == later
    assert too_soon(soon, None, shortest, TUESDAY_2PM) == soon  # capacity to spare: as before


def test_a_window_closes_at_its_end_and_an_unread_schedule_eight_hours_on() -> None:
    assert window_close(p4d(tagged={tags.SCHEDULE: "weekdays 09:00-17:00 UTC"}), OPENS) == OPENS + timedelta(hours=8)
    assert window_close(p4d(tagged={tags.SCHEDULE: "daily 22:00-06:00 UTC"}), OPENS.replace(hour=22)) == OPENS.replace(
        hour=22
    ) + timedelta(hours=8)
    assert window_close(p4d(), OPENS) == OPENS + timedelta(hours=8)
    assert parse_schedule("mon-fri 09:00-12:00 UTC; tue 09:00-18:00 UTC").closes(OPENS) == OPENS.replace(hour=18)
    assert parse_schedule("daily 09:00-17:00 UTC").opened(OPENS + timedelta(hours=8)) is None


def test_a_learned_start_made_sooner_is_the_learned_start_only_on_a_scarce_machine() -> None:
    start_at = OPENS
    stopped = (OPENS - timedelta(hours=10)).isoformat()
    early = p4d("running", start_at - EARLIER + timedelta(minutes=1), tagged={tags.STOPPED_AT: stopped})
    assert made_for(early, start_at, POLICY, sooner=EARLIER)
    assert not made_for(early, start_at, POLICY)  # on a machine with capacity to spare: its owner's start
    too_early = p4d("running", start_at - EARLIER - timedelta(minutes=5), tagged={tags.STOPPED_AT: stopped})
    assert not made_for(too_early, start_at, POLICY, sooner=EARLIER)


def test_an_overnight_window_closes_on_the_wall_clock_across_a_change_of_clocks() -> None:
    berlin = parse_schedule("daily 22:00-06:00 Europe/Berlin")
    spring = berlin.next_start(datetime(2026, 3, 28, 12, 0, tzinfo=UTC))
    assert berlin.closes(spring) == datetime(2026, 3, 29, 4, 0, tzinfo=UTC)  # 06:00 CEST
    autumn = berlin.next_start(datetime(2026, 10, 24, 12, 0, tzinfo=UTC))
    assert berlin.closes(autumn) == datetime(2026, 10, 25, 5, 0, tzinfo=UTC)  # 06:00 CET
    whole_day = parse_schedule("daily 00:00-24:00 UTC")
    assert whole_day.closes(OPENS.replace(hour=0)) == OPENS.replace(hour=0) + timedelta(days=1)


def test_a_scarce_machine_stopped_after_hours_is_started_before_its_owners_next_working_day() -> None:
    evening = TUESDAY_2PM.replace(hour=20)
    stop = Decision("i-1", Action.STOP, "idle through grace", stop_after=evening)
    readied = ready_for_the_day(stop, EVIDENCE, p4d(), POLICY, evening)
    assert readied.start_at == datetime(2026, 11, 25, 8, 0, tzinfo=UTC) - LEAD  # the team's day opens at 08:00
    assert readied.next_work.startswith("might not start again when its owner's day begins (6 p4d.24xlarge")
    friday = datetime(2026, 11, 27, 20, 0, tzinfo=UTC)
    assert (
        ready_for_the_day(stop, EVIDENCE, p4d(), POLICY, friday).start_at
        == datetime(2026, 11, 30, 8, 0, tzinfo=UTC) - LEAD
    )  # Monday
    own = p4d(tagged={tags.SCHEDULE: "weekdays 10:00-18:00 America/New_York"})
    assert (
        ready_for_the_day(stop, EVIDENCE, own, POLICY, evening).start_at
        == datetime(2026, 11, 25, 15, 0, tzinfo=UTC) - LEAD
    )


def test_a_scarce_machine_whose_person_begins_work_late_in_the_day_is_readied_an_hour_before_their_earliest() -> None:
    """Its person began work on it by 17:00 at the earliest, on each of 5 weekdays: readied at 16:00 (less its
    lead), not at 08:00; said so. Fewer than 5 days, a first start of work before the day opens, or one at or
    after its close: readied for its owner's day, as before."""
    evening = TUESDAY_2PM.replace(hour=20)
    stop = Decision("i-1", Action.STOP, "idle through grace", stop_after=evening)
    late = Workdays(5, 18 * 60, False, "UTC", 17 * 60)  # on 5 weekdays: AGREE_DAYS
    readied = ready_for_the_day(stop, EVIDENCE, p4d(), POLICY, evening, late)
    assert readied.start_at == datetime(2026, 11, 25, 16, 0, tzinfo=UTC) - LEAD
    assert readied.start_for is StartFor.OWNERS_DAY
    said = "might not start again when its person's work on it begins (by 17:00 UTC on each of the 5 weekdays"
    assert readied.next_work.startswith(said)
    owners_day = datetime(2026, 11, 25, 8, 0, tzinfo=UTC) - LEAD
    for days in (replace(late, began=4), replace(late, earliest=8 * 60 + 30), replace(late, earliest=20 * 60), None):
        assert ready_for_the_day(stop, EVIDENCE, p4d(), POLICY, evening, days).start_at == owners_day, days
    # On its owner's clock: a Paris person who began by 15:00 Paris time is readied by 13:00 UTC in November.
    paris = p4d(tagged={tags.SCHEDULE: "weekdays 08:00-19:00 Europe/Paris"})
    in_paris = Workdays(5, 16 * 60, False, "Europe/Paris", 15 * 60)
    assert (
        ready_for_the_day(stop, EVIDENCE, paris, POLICY, evening, in_paris).start_at
        == datetime(2026, 11, 25, 13, 0, tzinfo=UTC) - LEAD
    )
    # A learned run before that time still comes first.
    run = replace(stop, start_at=datetime(2026, 11, 25, 12, 0, tzinfo=UTC), start_for=StartFor.RUN)
    assert ready_for_the_day(run, EVIDENCE, p4d(), POLICY, evening, late) == run


def test_a_scarce_machine_nobody_works_on_by_day_is_started_for_its_night_run_before_its_owners_day_ends() -> None:
    """Stopped at 04:00 after its 01:00 run, nobody's work on it in its owner's hours (08:00-19:00) on any of
    the last 9 weekdays: not readied for the day nobody works on it, but started at 17:00, two hours before
    that day ends, for its next run at 01:00: a refused start is told while its owner is at work, with eight
    hours to try again. Said so."""
    night = TUESDAY_2PM.replace(hour=4)
    run = Decision(
        "i-1",
        Action.STOP,
        "idle through grace",
        stop_after=night,
        start_at=datetime(2026, 11, 25, 0, 45, tzinfo=UTC),
        start_for=StartFor.RUN,
        next_work="starts work at about 01:00 UTC (7 of the last 7 days)",
    )
    by_night = Workdays(9, 60, False, "UTC", 60, seen=9, by_day=0)
    started = ready_for_the_day(run, EVIDENCE, p4d(), POLICY, night, by_night)
    assert started.start_at == datetime(2026, 11, 24, 17, 0, tzinfo=UTC)
    assert started.start_for is StartFor.NIGHTS_RUN
    assert started.run_at == run.start_at  # tried again until then
    assert started.next_work.startswith(
        "is put to work only by its runs (starts work at about 01:00 UTC (7 of the last 7 days)), none of it in "
        "its owner's hours on the last 9 weekdays, and might not start again at night (6 p4d.24xlarge"
    )
    assert for_its_run(started, EVIDENCE, p4d(), POLICY, night) == started  # made while its owner works
    owners_day = datetime(2026, 11, 24, 8, 0, tzinfo=UTC) - LEAD
    # Work by day on one weekday, or fewer than 5 weekdays of data: readied for the day, as before.
    for days in (replace(by_night, by_day=1), replace(by_night, seen=4), None):
        assert ready_for_the_day(run, EVIDENCE, p4d(), POLICY, night, days).start_at == owners_day, days
    # A run inside its owner's day keeps its own start; one before it opens is left to `for_its_run`.
    noon = replace(run, start_at=TUESDAY_2PM.replace(hour=11, minute=45))
    assert ready_for_the_day(noon, EVIDENCE, p4d(), POLICY, night, by_night) == noon
    dawn = replace(run, start_at=TUESDAY_2PM.replace(hour=6, minute=45))
    assert ready_for_the_day(dawn, EVIDENCE, p4d(), POLICY, night, by_night) == dawn
    # A forgotten machine (no run of its own) is readied for its owner's day, as before.
    forgotten = replace(run, start_at=None, next_work="")
    assert ready_for_the_day(forgotten, EVIDENCE, p4d(), POLICY, night, by_night).start_at == owners_day
    # On a Saturday, its Sunday night's run comes before its owner's Monday: left as it is (`for_its_run`).
    saturday = datetime(2026, 11, 28, 18, 30, tzinfo=UTC)
    sunday_night = replace(run, start_at=datetime(2026, 11, 29, 0, 45, tzinfo=UTC))
    assert ready_for_the_day(sunday_night, EVIDENCE, p4d(), POLICY, saturday, by_night) == sunday_night
    # A weekly run on Sunday: not started every weekday for it; readied for its owner's day, as any machine is.
    weekly = replace(run, start_at=datetime(2026, 11, 29, 1, 45, tzinfo=UTC))
    assert ready_for_the_day(weekly, EVIDENCE, p4d(), POLICY, night, by_night).start_at == owners_day
    # Its own hours end at 09:00: the start is made when they open, not two hours before they close.
    short = p4d(tagged={tags.SCHEDULE: "weekdays 08:00-09:00 UTC"})
    assert ready_for_the_day(run, EVIDENCE, short, POLICY, night, by_night).start_at == owners_day + LEAD


def test_no_day_start_without_evidence_before_a_learned_run_or_where_its_owner_said_dont_start_it() -> None:
    stop = Decision("i-1", Action.STOP, "idle through grace")
    evening = TUESDAY_2PM.replace(hour=20)
    assert ready_for_the_day(stop, None, p4d(), POLICY, evening) == stop
    learned = replace(stop, start_at=evening + timedelta(hours=3), next_work="runs daily at 23:00")
    assert ready_for_the_day(learned, EVIDENCE, p4d(), POLICY, evening) == learned  # its run comes first
    afternoon = replace(stop, start_at=evening + timedelta(hours=18), next_work="runs daily at 14:00")
    forward = ready_for_the_day(afternoon, EVIDENCE, p4d(), POLICY, evening)
    assert forward.start_at == datetime(2026, 11, 25, 8, 0, tzinfo=UTC) - LEAD  # brought forward to the day
    declined = p4d(tagged={tags.LEARNED_START: tags.OFF})
    assert ready_for_the_day(stop, EVIDENCE, declined, POLICY, evening) == stop


def test_a_machine_kept_for_its_runs_gets_no_day_start_where_the_deployment_turned_learned_starts_off() -> None:
    """Keep it for its runs asks for starts before its runs, not for its owner's day: with learned starts off
    for the deployment, a scarce machine kept for its runs is stopped without the day's start (with them on,
    it gets the day's start like any scarce machine)."""
    stop = Decision("i-1", Action.STOP, "idle through grace")
    evening = TUESDAY_2PM.replace(hour=20)
    kept = p4d(tagged={tags.KEEP_FOR_RUNS: "on"})
    off = replace(POLICY, learned_starts=False)
    assert ready_for_the_day(stop, EVIDENCE, kept, off, evening) == stop
    assert (
        ready_for_the_day(stop, EVIDENCE, kept, POLICY, evening).start_at
        == datetime(2026, 11, 25, 8, 0, tzinfo=UTC) - LEAD
    )


def test_a_scarce_machine_whose_automated_run_comes_before_its_owner_is_back_is_left_running_for_it() -> None:
    """Stopped at 20:00 with its nightly run at 05:00 before the team's 08:00: a start EC2 refused then (a
    shortage in the night) would leave the run without its machine, and nobody is there to start it again."""
    evening = TUESDAY_2PM.replace(hour=20)
    nightly = Decision(
        "i-1", Action.STOP, "idle through grace", start_at=evening + timedelta(hours=9) - LEAD, next_work="its crontab"
    )
    kept = for_its_run(nightly, EVIDENCE, p4d(), POLICY, evening)
    assert (kept.action, kept.will_stop) == (Action.CLEAR_WARNING, False)
    assert kept.start_at == nightly.start_at  # its run's start, kept for a person's Stop anyway
    assert (
        kept.reason
        == f"{BEFORE_OWNER}: its crontab (6 p4d.24xlarge starts failed for capacity in us-east-1a this week)"
    )
    assert held_for_run(kept) == "its crontab"
    assert tells_scarce(kept)
    warned = replace(nightly, action=Action.WARN, stop_after=evening + timedelta(minutes=30))
    assert for_its_run(warned, EVIDENCE, p4d(), POLICY, evening).action is Action.NONE  # never warned: nothing to clear


def test_a_scarce_stop_the_bill_leaves_running_for_money_is_not_told_as_kept_for_capacity() -> None:
    """Readied for its owner's day (the scarcity evidence on its stop), then the bill finds the stop saves nothing
    (the Savings Plan has room at night): left running for money. Its owner must not hear each day that it is
    kept because a stopped one might not start again."""
    evening = TUESDAY_2PM.replace(hour=20)
    readied = ready_for_the_day(Decision("i-1", Action.STOP, "idle through grace"), EVIDENCE, p4d(), POLICY, evening)
    assert readied.scarce
    covered = Marginal(0.0, 32.77, Basis.SAVINGS_PLAN, "the Savings Plan has room at night")
    left = priced(readied, covered)
    assert (left.action, left.scarce) == (Action.CLEAR_WARNING, "")
    assert not tells_scarce(left)


def test_a_run_after_its_owner_is_back_or_no_evidence_or_the_days_own_start_change_nothing() -> None:
    evening = TUESDAY_2PM.replace(hour=20)
    later = Decision("i-1", Action.STOP, "idle", start_at=datetime(2026, 11, 25, 14, 0, tzinfo=UTC), next_work="x")
    assert for_its_run(later, EVIDENCE, p4d(), POLICY, evening) == later  # the owner is back before it
    nightly = replace(later, start_at=evening + timedelta(hours=8))
    assert for_its_run(nightly, None, p4d(), POLICY, evening) == nightly
    unpromised = replace(nightly, start_at=None)
    assert for_its_run(unpromised, EVIDENCE, p4d(), POLICY, evening) == unpromised
    day = ready_for_the_day(replace(nightly, start_at=None), EVIDENCE, p4d(), POLICY, evening)
    assert for_its_run(day, EVIDENCE, p4d(), POLICY, evening) == day  # started for its owner's day: stopped
    assert held_for_run(nightly) == ""
    person = replace(nightly, start_for=StartFor.PERSONS_DAY)
    assert for_its_run(person, EVIDENCE, p4d(), POLICY, evening) == person  # started for its person's day: stopped
    # what a start is for is the decision's, not its words': a run said like the day's start is a run
    worded = replace(nightly, next_work=day.next_work)
    assert for_its_run(worded, EVIDENCE, p4d(), POLICY, evening).action is Action.CLEAR_WARNING


def _quarters(begin: datetime, end: datetime, busy: set[datetime] = frozenset()) -> list[Quarter]:  # type: ignore[assignment]
    out, at = [], begin
    while at < end:
        out.append(Quarter(at, at in busy))
        at += QUARTER
    return out


def test_its_persons_weekdays_are_counted_from_its_quarter_hours_since_its_data_began() -> None:
    """Tuesday 24 Nov, 14:00 UTC: the weekdays looked at are those of the 13 days before today, nine. Work
    began at 09:00 on Friday 20 and at 11:30 on Monday 23: two, the latest at 11:30 (work on Tuesday 10, 14 days
    back, is not looked at). Started by costguard at 07:00 today and idle since: readied and idle."""
    now = TUESDAY_2PM
    friday, monday = datetime(2026, 11, 20, 9, 0, tzinfo=UTC), datetime(2026, 11, 23, 11, 30, tzinfo=UTC)
    busy = {friday + k * QUARTER for k in range(8)} | {monday + k * QUARTER for k in range(4)}
    ours = [datetime(2026, 11, 24, 7, 0, tzinfo=UTC)]
    whole = _quarters(now - timedelta(days=14), now, busy)
    days = workdays(
        whole, now, UTC_HOURS, running_at=[], ours=ours, booted=ours, launched=ours[0] + timedelta(minutes=1)
    )
    assert (days.began, days.latest, days.readied_idle) == (2, 11 * 60 + 30, True)
    assert (days.seen, days.by_day) == (9, 2)  # both days' work inside 08:00-19:00
    recent = [q for q in whole if q.at >= datetime(2026, 11, 19, tzinfo=UTC)]  # its data began on Thursday 19
    assert workdays(recent, now, UTC_HOURS, running_at=[], ours=ours, booted=ours, launched=ours[0]).seen == 3
    nights = {datetime(2026, 11, d, 1, 0, tzinfo=UTC) + k * QUARTER for d in (17, 18, 19, 20, 23) for k in range(8)}
    nightly = workdays(
        _quarters(now - timedelta(days=14), now, nights),
        now,
        UTC_HOURS,
        running_at=[],
        ours=[],
        booted=[],
        launched=now,
    )
    # Work at 01:00 each night is its runs', not its person's day: none begins a day, none is by day.
    assert (nightly.began, nightly.latest, nightly.by_day, nightly.seen) == (0, None, 0, 9)
    # A person at 10:00 on those days besides: their day begins at 10:00, not at 01:00.
    tens = nights | {datetime(2026, 11, d, 10, 0, tzinfo=UTC) + k * QUARTER for d in (17, 18, 19) for k in range(4)}
    both = workdays(
        _quarters(now - timedelta(days=14), now, tens), now, UTC_HOURS, running_at=[], ours=[], booted=[], launched=now
    )
    assert (both.began, both.latest, both.earliest, both.by_day) == (3, 10 * 60, 10 * 60, 3)
    # Days it was stopped through its owner's hours (no data in them) are not looked at: nobody could be seen.
    up_at_night = [q for q in _quarters(now - timedelta(days=14), now, nights) if not UTC_HOURS.inside(q.at)]
    unseen = workdays(up_at_night, now, UTC_HOURS, running_at=[], ours=[], booted=[], launched=now)
    assert (unseen.seen, unseen.by_day) == (0, 0)
    early = busy | {datetime(2026, 11, 10, 10, 0, tzinfo=UTC) + k * QUARTER for k in range(4)}  # in its hours
    two_weeks = _quarters(now - timedelta(days=15), now, early)
    assert workdays(two_weeks, now, UTC_HOURS, running_at=[], ours=ours, booted=ours, launched=ours[0]).began == 2
    # Started by its person at 10:00, or by costguard yesterday: not readied today.
    person = workdays(whole, now, UTC_HOURS, running_at=[], ours=ours, booted=ours, launched=now.replace(hour=10))
    assert not person.readied_idle
    yesterday = [ours[0] - timedelta(days=1)]
    old = workdays(whole, now, UTC_HOURS, running_at=[], ours=yesterday, booted=yesterday, launched=yesterday[0])
    assert not old.readied_idle
    # Used since its start: not idle.
    used = _quarters(now - timedelta(days=14), now, busy | {now.replace(hour=9)})
    assert not workdays(used, now, UTC_HOURS, running_at=[], ours=ours, booted=ours, launched=ours[0]).readied_idle
    # Work in the first half hour after costguard's start (07:00:20, in the 07:00 quarter) is the machine's own
    # boot (an @reboot warm-up): it neither uses it nor begins a day; work after it does.
    launched = now.replace(hour=7, minute=0, second=20)
    after_boot = _quarters(now - timedelta(days=14), now, busy | {now.replace(hour=7, minute=30)})
    assert not workdays(
        after_boot, now, UTC_HOURS, running_at=[], ours=ours, booted=ours, launched=launched
    ).readied_idle
    mornings = [ours[0] - timedelta(days=k) for k in (0, 1, 4)]  # costguard's starts: today, Monday, Friday
    warm_ups = busy | set(mornings)
    booted = workdays(
        _quarters(now - timedelta(days=14), now, warm_ups),
        now,
        UTC_HOURS,
        running_at=[],
        ours=mornings,
        booted=mornings,
        launched=launched,
    )
    assert (booted.began, booted.latest, booted.earliest, booted.readied_idle) == (2, 11 * 60 + 30, 9 * 60, True)
    # Started for its owner's day on Monday and Friday by a start costguard only found made (a sweep killed after
    # its call, or its person's start near the time): their boot-time work is the machine's own all the same, but
    # today's start counts as readying only where costguard's own call made it.
    found_made = workdays(
        _quarters(now - timedelta(days=14), now, warm_ups),
        now,
        UTC_HOURS,
        running_at=[],
        ours=[],
        booted=mornings,
        launched=launched,
    )
    assert (found_made.latest, found_made.readied_idle) == (11 * 60 + 30, False)


def test_someone_the_check_saw_on_the_machine_came_whatever_its_metrics_show() -> None:
    assert not someone_came(None)
    assert not someone_came(ActivityCheck(CheckState.NO_AGENT))
    assert not someone_came(ActivityCheck(CheckState.ANSWERED, ActivityReport()))
    session = Session(tty="pts/0", idle_s=7200)  # logged in two hours ago, gone to a meeting
    assert someone_came(ActivityCheck(CheckState.ANSWERED, ActivityReport(sessions=(session,))))
    assert someone_came(ActivityCheck(CheckState.ANSWERED, ActivityReport(kernels=(Kernel("idle", 7200),))))
    assert someone_came(ActivityCheck(CheckState.ANSWERED, ActivityReport(kernel_processes=1)))


def test_a_readied_machine_nobody_used_is_not_spared_an_hour_past_its_persons_latest_start_of_work() -> None:
    days = Workdays(5, 10 * 60 + 30, True)  # their work on it began by 10:30 on each of 5 days
    assert day_off(days, TUESDAY_2PM.replace(hour=11, minute=15)) == ""  # they may still come
    said = day_off(days, TUESDAY_2PM.replace(hour=11, minute=30))
    assert said.startswith(NOT_TODAY)
    assert "began by 10:30 UTC on each of the 5 weekdays it was worked on" in said
    assert day_off(replace(days, readied_idle=False), TUESDAY_2PM) == ""  # its person started it, or used it
    assert day_off(replace(days, began=2), TUESDAY_2PM) == ""  # two days say too little
    assert day_off(replace(days, latest=None), TUESDAY_2PM) == ""
    assert day_off(None, TUESDAY_2PM) == ""
    assert day_off(days, datetime(2026, 11, 28, 14, 0, tzinfo=UTC)) == ""  # a Saturday
