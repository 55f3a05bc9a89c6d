"""A machine is started before its person's weekday when the cold starts that saves them are worth more than the
idle hours it costs (idle/rules/arrival.py): people start work within a few hours of the same time, not at it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.core.settings import IdlePolicy
from costguard.idle.rules.arrival import (
    LOOKBACK,
    MIN_DAYS,
    Arrival,
    arrival,
    undone_share,
    with_arrival,
)
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.recurring import QUARTER, Quarter
from costguard.idle.rules.restarts import cold_start_usd

POLICY = IdlePolicy(team_timezone="Europe/Paris")  # window 2 h, grace 30 min: a start waits 2 h 30 for its work
NOW = datetime(2026, 11, 27, 19, 0, tzinfo=UTC)  # a Friday evening (20:00 in Paris)
COLD_USD = cold_start_usd(POLICY)  # $50


def fortnight(starts: dict[int, str], *, hours: float = 5.0) -> list[Quarter]:
    """Two weeks of quarter-hours up to NOW, idle but for work from each given day's time (days back from today,
    Paris wall clock) for `hours`."""
    first = NOW - timedelta(days=14)
    busy: set[datetime] = set()
    for back, clock in starts.items():
        hour, minute = (int(x) for x in clock.split(":"))
        day = (NOW - timedelta(days=back)).date()
        begin = datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC) - timedelta(hours=1)  # CET
        busy |= {begin + k * QUARTER for k in range(int(hours * 4))}
    return [Quarter(first + k * QUARTER, first + k * QUARTER in busy) for k in range(14 * 96)]


# The weekdays of the two weeks before Friday 27 Nov: days back 1-4 (Thu-Mon), 7-11 (Fri-Mon).
WEEKDAYS_BACK = (1, 2, 3, 4, 7, 8, 9, 10, 11)
CLOCKS = ("00:15", "06:00", "08:45", "09:00", "09:30", "10:15", "11:00", "12:30", "14:00", "17:45", "22:00", "23:30")
SPREAD = dict(
    zip(WEEKDAYS_BACK, ("09:15", "10:30", "09:00", "11:00", "09:45", "10:00", "12:30", "09:30", "10:15"), strict=True)
)


def test_a_person_who_starts_between_nine_and_half_past_twelve_has_a_cheap_machine_ready_at_nine() -> None:
    found = arrival(fortnight(SPREAD), NOW, usd_per_hour=1.2, policy=POLICY)
    assert found is not None
    assert found.zone == "Europe/Paris"
    assert found.minute == 8 * 60 + 45  # the lead before the earliest work: every day but one found it
    assert (found.found, found.seen) == (8, 9)  # 12:30 came after the 2 h 30 wait
    assert found.describe() == "is put to work between 09:00 and 11:00 Europe/Paris on 8 of the last 9 weekdays"
    # Eight cold starts saved, less each day's idle hours until the work, less the day the wait was in vain.
    waits = [30, 105, 15, 135, 60, 75, 45, 90]
    assert found.net_usd == pytest.approx(8 * COLD_USD - 1.2 * sum(waits) / 60 - 1.2 * 2.5, abs=0.01)


def test_on_an_expensive_machine_the_same_person_waits_for_its_boot() -> None:
    assert arrival(fortnight(SPREAD), NOW, usd_per_hour=55.04, policy=POLICY) is None  # a p5's hours cost more
    tight = dict.fromkeys(WEEKDAYS_BACK, "09:00")
    found = arrival(fortnight(tight), NOW, usd_per_hour=55.04, policy=POLICY)
    assert found is not None
    assert found.minute == 8 * 60 + 45


def test_no_start_without_three_days_a_price_for_a_person_or_a_day_the_machine_was_quiet_before() -> None:
    assert arrival(fortnight({1: "09:00", 2: "09:00"}), NOW, usd_per_hour=1.0, policy=POLICY) is None
    assert arrival(fortnight(SPREAD), NOW, usd_per_hour=1.0, policy=replace(POLICY, person_hour_usd=0)) is None
    # Work that goes on from the night before (an hour's pause is no stop's worth) is no arrival.
    night = fortnight(dict.fromkeys(WEEKDAYS_BACK, "09:00"), hours=23)
    assert arrival(night, NOW, usd_per_hour=1.0, policy=POLICY) is None


def test_a_machine_started_by_its_person_up_to_half_an_hour_before_work_counts_from_its_start() -> None:
    started = [NOW.replace(hour=7, minute=50) - timedelta(days=back) for back in WEEKDAYS_BACK]  # 08:50 in Paris
    found = arrival(fortnight(dict.fromkeys(WEEKDAYS_BACK, "09:15")), NOW, usd_per_hour=5.0, policy=POLICY)
    earlier = arrival(
        fortnight(dict.fromkeys(WEEKDAYS_BACK, "09:15")), NOW, usd_per_hour=5.0, policy=POLICY, running_at=started
    )
    assert found is not None
    assert earlier is not None
    assert (found.minute, earlier.minute) == (9 * 60, 8 * 60 + 30)  # ready before the person who boots it


PUT = Arrival("Europe/Paris", 8 * 60 + 45, timedelta(hours=2, minutes=30), 9, 10, 9 * 60, 11 * 60, 400.0)


def decided(action: Action, at: datetime) -> Decision:
    return Decision("i-1", action, "idle for 2 h", stop_after=at + timedelta(minutes=30))


def test_a_stop_brings_the_machine_back_before_its_persons_next_weekday_not_on_the_weekend() -> None:
    friday = datetime(2026, 11, 27, 18, 0, tzinfo=UTC)
    changed = with_arrival(decided(Action.WARN, friday), PUT, POLICY, friday)
    assert changed.start_at == datetime(2026, 11, 30, 7, 45, tzinfo=UTC)  # Monday 08:45 in Paris
    assert changed.next_work == PUT.describe()
    stop = decided(Action.STOP, friday)
    learned = replace(stop, start_at=friday + timedelta(hours=7), next_work="starts work at about 01:00 UTC")
    assert with_arrival(learned, PUT, POLICY, friday) == learned  # its learned run brings it back first


def test_while_a_start_waits_for_its_person_the_machine_is_not_warned_and_too_soon_is_no_stop() -> None:
    monday = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)  # 10:30 in Paris, 1 h 45 into the wait
    held = with_arrival(decided(Action.WARN, monday), PUT, POLICY, monday)
    assert held.action is Action.NONE
    assert held.reason.endswith("waits for its person until 10:15 UTC")
    after = monday + timedelta(hours=1)  # the wait is over: the idle rule has its way
    assert with_arrival(decided(Action.STOP, after), PUT, POLICY, after).start_at == datetime(
        2026, 12, 1, 7, 45, tzinfo=UTC
    )
    dawn = datetime(2026, 12, 1, 6, 30, tzinfo=UTC)  # 75 minutes before Tuesday's start: a stop would not pay
    assert with_arrival(decided(Action.STOP, dawn), PUT, POLICY, dawn).action is Action.NONE


def test_nothing_changes_without_an_arrival_or_for_a_machine_not_to_be_stopped() -> None:
    now = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)
    assert with_arrival(decided(Action.WARN, now), None, POLICY, now) == decided(Action.WARN, now)
    kept = replace(decided(Action.WARN, now), will_stop=False)
    assert with_arrival(kept, PUT, POLICY, now) == kept


def test_a_person_who_undoes_costguards_stops_makes_a_start_for_nobody_cost_one_more_cold_start_as_often() -> None:
    """A start whose person did not come ends in one more stop; a person who starts their machine again after
    half of costguard's stops makes that stop cost half a cold start more."""
    day = datetime(2026, 11, 20, tzinfo=UTC)
    changes = [(day + timedelta(hours=h), state) for h, state in ((1, "stopped"), (2, "running"), (10, "stopped"))]
    changes += [(day + timedelta(hours=30), "running"), (day + timedelta(hours=40), "stopped")]
    people = [day + timedelta(hours=2), day + timedelta(hours=30)]  # 1 h after the first stop; 20 h after the second
    assert undone_share(changes, people) == pytest.approx(1 / 3)
    assert undone_share(changes, []) == 0.0  # every start was costguard's
    assert undone_share([], people) == 0.0
    calm = arrival(fortnight(SPREAD), NOW, usd_per_hour=1.2, policy=POLICY)
    restless = arrival(fortnight(SPREAD), NOW, usd_per_hour=1.2, policy=POLICY, undone=0.5)
    assert calm is not None
    assert restless is not None
    assert calm.net_usd - restless.net_usd == pytest.approx(0.5 * COLD_USD)  # the one day nobody came


@settings(max_examples=80, deadline=None)
@given(
    starts=st.dictionaries(st.sampled_from(WEEKDAYS_BACK), st.sampled_from(CLOCKS), max_size=len(WEEKDAYS_BACK)),
    hours=st.sampled_from((0.5, 2.0, 5.0, 12.0)),
    price=st.floats(min_value=0.1, max_value=120.0),
    undone=st.floats(min_value=0.0, max_value=1.0),
)
def test_any_week_gives_a_start_only_where_it_paid_on_three_days_at_a_time_before_the_work_it_counts(
    starts: dict[int, str], hours: float, price: float, undone: float
) -> None:
    found = arrival(fortnight(starts, hours=hours), NOW, usd_per_hour=price, policy=POLICY, undone=undone)
    if found is None:
        return
    assert found.net_usd > 0
    assert MIN_DAYS <= found.found <= found.seen <= LOOKBACK
    assert 0 <= found.minute < 24 * 60
    assert found.minute + POLICY.schedule_lead_minutes <= found.first <= found.last  # up before the person came
    assert found.net_usd <= found.found * COLD_USD  # never more than the cold starts it saved
    start = found.next_start(NOW)
    assert start > NOW
    assert start.astimezone(ZoneInfo(POLICY.team_timezone)).weekday() < 5
    assert found.holding(start) == start + found.hold
    assert found.holding(start + found.hold) is None


def test_work_that_comes_at_midnight_is_readied_the_evening_before_its_weekday_not_before_a_saturday() -> None:
    """A person (on the team's clock) who puts the machine to work at 00:00-01:30 on weekdays: the start is at
    23:45 the evening before the work's day, so Sunday evening for Monday, and none on Friday evening."""
    utc = replace(POLICY, team_timezone="UTC")
    busy: set[datetime] = set()
    for back, at in enumerate((0, 45, 90, 30, 60, 0, 45, 90, 30, 60, 0, 15, 75, 30)):
        day = datetime(2026, 11, 27, tzinfo=UTC) - timedelta(days=back)  # the work's day, from Friday back
        if day.weekday() < 5:
            busy |= {day + timedelta(minutes=at) + k * QUARTER for k in range(12)}
    first = NOW - timedelta(days=14)
    quarters = [Quarter(first + k * QUARTER, first + k * QUARTER in busy) for k in range(14 * 96)]
    found = arrival(quarters, NOW, usd_per_hour=1.0, policy=utc)
    assert found is not None
    assert found.minute == -15  # 23:45 the evening before
    assert found.describe().startswith("is put to work between 00:00 and 01:30 UTC")
    friday_evening = datetime(2026, 11, 27, 20, 0, tzinfo=UTC)
    assert found.next_start(friday_evening) == datetime(2026, 11, 29, 23, 45, tzinfo=UTC)  # Sunday, for Monday
    assert found.holding(datetime(2026, 11, 30, 1, 0, tzinfo=UTC)) == datetime(2026, 11, 30, 2, 15, tzinfo=UTC)
    assert found.holding(datetime(2026, 11, 28, 1, 0, tzinfo=UTC)) is None  # Saturday: no work, no wait


def test_a_new_york_evenings_work_at_one_utc_is_readied_on_saturday_too_and_not_stopped_into() -> None:
    """A machine put to work at about 01:00 UTC on Tuesday to Saturday (its New York person's or pipeline's
    weekday evening, the team on UTC): Saturday's 01:00 is a weekday's work on another clock. It gets its start on
    Friday at 23:45 and waits for it on Saturday, where it was stopped at 00:45 until Monday, into its run."""
    utc = replace(POLICY, team_timezone="UTC")
    now = datetime(2026, 11, 28, 0, 45, tzinfo=UTC)  # Saturday
    busy: set[datetime] = set()
    for back in range(1, 15):
        day = datetime(2026, 11, 28, tzinfo=UTC) - timedelta(days=back)
        if day.weekday() in (1, 2, 3, 4, 5):  # Tuesday to Saturday on UTC: Monday to Friday in New York
            busy |= {day + timedelta(minutes=30 + 15 * (back % 3)) + k * QUARTER for k in range(4)}
    first = now - timedelta(days=14)
    quarters = [Quarter(first + k * QUARTER, first + k * QUARTER in busy) for k in range(14 * 96)]
    found = arrival(quarters, now, usd_per_hour=1.0, policy=utc)
    assert found is not None
    assert found.weekend == frozenset({5})  # Saturday's work came; Sunday had none
    assert found.holding(now) is not None  # waits for its work: no stop now
    assert found.next_start(datetime(2026, 11, 27, 20, 0, tzinfo=UTC)) == found.on(datetime(2026, 11, 28).date())
    assert found.holding(datetime(2026, 11, 29, 0, 45, tzinfo=UTC)) is None  # Sunday: no work, no wait
