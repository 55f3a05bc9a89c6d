"""When a systemd timer runs next (idle/rules/calendars.py, through jobs.next_run): systemd's own next
elapse, the calendar's forms, its zone, clock changes; then a property hypothesis checks over random
calendars, times and zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.idle.rules.calendars import parse_calendar
from costguard.idle.rules.jobs import Job, JobKind, next_run
from tests.unit.idle.rules.schedule_times import AFTER, BERLIN, NEW_YORK, ZONES, at


def timer(schedule: str, after: datetime, zone: str | None = "UTC", elapse: datetime | None = None) -> datetime | None:
    return next_run(Job(JobKind.TIMER, schedule, elapse=elapse), after, zone)


def test_a_timer_runs_when_systemd_said_it_would_while_that_is_ahead() -> None:
    elapse = at(UTC, 2026, 11, 21, 2, 17, 43)  # a RandomizedDelaySec systemd knows, costguard does not
    assert timer("*-*-* 02:00:00", at(UTC, 2026, 11, 21, 1, 0), elapse=elapse) == elapse
    assert timer("garbage", at(UTC, 2026, 11, 21, 1, 0), elapse=elapse) == elapse


def test_a_timer_past_systemds_elapse_runs_next_as_its_calendar_says() -> None:
    elapse = at(UTC, 2026, 11, 21, 2, 0)
    assert timer("*-*-* 02:00:00", at(UTC, 2026, 11, 21, 3, 0), elapse=elapse) == at(UTC, 2026, 11, 22, 2, 0)


@pytest.mark.parametrize(
    ("calendar", "after", "expected"),
    [
        ("daily", (2026, 11, 21, 10, 0), (2026, 11, 22, 0, 0)),
        ("weekly", (2026, 11, 21, 10, 0), (2026, 11, 23, 0, 0)),  # Mondays
        ("hourly", (2026, 11, 21, 10, 7), (2026, 11, 21, 11, 0)),
        ("minutely", (2026, 11, 21, 10, 7, 30), (2026, 11, 21, 10, 8)),
        ("monthly", (2026, 11, 21, 10, 0), (2026, 12, 1, 0, 0)),
        ("quarterly", (2026, 11, 21, 10, 0), (2027, 1, 1, 0, 0)),
        ("*-*-* 02:00:00", (2026, 11, 21, 10, 0), (2026, 11, 22, 2, 0)),
        ("*-*-* 06,18:00:00", (2026, 11, 21, 10, 0), (2026, 11, 21, 18, 0)),
        ("Mon..Fri 22:00", (2026, 11, 21, 10, 0), (2026, 11, 23, 22, 0)),
        ("Mon..Fri *-*-* 22:00:00", (2026, 11, 23, 22, 0), (2026, 11, 24, 22, 0)),
        ("Mon,Wed *-*-* 02:30:00", (2026, 11, 23, 3, 0), (2026, 11, 25, 2, 30)),
        ("Sat,Sun 10:00", (2026, 11, 21, 10, 0), (2026, 11, 22, 10, 0)),
        ("*-*-* *:00/15:00", (2026, 11, 21, 10, 7), (2026, 11, 21, 10, 15)),
        ("*-*-* *:0/15", (2026, 11, 21, 10, 45), (2026, 11, 21, 11, 0)),
        ("*-*-* 00/6:30:00", (2026, 11, 21, 10, 0), (2026, 11, 21, 12, 30)),
        ("*-*-01..07 03:00:00", (2026, 11, 21, 10, 0), (2026, 12, 1, 3, 0)),
        ("Mon *-*-01..07 03:00:00", (2026, 11, 21, 10, 0), (2026, 12, 7, 3, 0)),  # weekday AND date
        ("*-12-25 00:00:00", (2026, 11, 21, 10, 0), (2026, 12, 25, 0, 0)),
        ("2027-01-01 00:00:00", (2026, 11, 21, 10, 0), (2027, 1, 1, 0, 0)),
        ("12-25 08:00", (2026, 11, 21, 10, 0), (2026, 12, 25, 8, 0)),
    ],
)
def test_a_timers_calendar_runs_next_at_the_first_second_it_matches(
    calendar: str, after: tuple[int, ...], expected: tuple[int, ...]
) -> None:
    assert timer(calendar, at(UTC, *after)) == at(UTC, *expected)


def test_a_timers_calendar_runs_on_its_own_zone_before_the_machines() -> None:
    after = at(UTC, 2026, 11, 21, 0, 0)
    assert timer("*-*-* 02:00:00", after, zone="America/New_York") == at(NEW_YORK, 2026, 11, 21, 2, 0)
    assert timer("*-*-* 02:00:00 Europe/Berlin", after, zone="America/New_York") == at(BERLIN, 2026, 11, 21, 2, 0)
    assert timer("daily UTC", after, zone="America/New_York") == at(UTC, 2026, 11, 22, 0, 0)


def test_a_timer_with_several_calendars_runs_at_the_nearest() -> None:
    assert timer("*-*-* 18:00:00; *-*-* 06:00:00", at(UTC, 2026, 11, 21, 3, 0)) == at(UTC, 2026, 11, 21, 6, 0)


@pytest.mark.parametrize(
    "calendar",
    [
        "*-*~01 00:00:00",  # the last day of a month
        "*-*-* 00:00:00.5",
        "22-01-01 00:00:00",  # a two-digit year
        "OnUnitActiveUSec=1d",  # a monotonic timer: systemd's next elapse or nothing
        "OnBootUSec=15min",
        "tomorrow",
        "UTC",
        "Fri..Mon 10:00",
        "*-*-* 25:00:00",
        "*-*-* 02:00:00 extra words",
        "",
        "*-*-* 02:00:00; OnUnitActiveUSec=1d",  # one calendar unknown: the timer's next run is unknown
    ],
)
def test_a_calendar_costguard_cannot_read_leaves_the_timers_next_run_unknown(calendar: str) -> None:
    assert timer(calendar, at(UTC, 2026, 11, 21)) is None


def test_a_timers_calendar_skips_a_time_the_clocks_skip_and_runs_once_at_one_that_comes_twice() -> None:
    assert timer("*-*-* 02:30:00", at(NEW_YORK, 2026, 3, 8, 0, 0), zone="America/New_York") == at(
        NEW_YORK, 2026, 3, 9, 2, 30
    )
    first = at(NEW_YORK, 2026, 11, 1, 1, 30)
    assert timer("*-*-* 01:30:00", at(NEW_YORK, 2026, 11, 1, 0, 0), zone="America/New_York") == first
    assert timer("*-*-* 01:30:00", first, zone="America/New_York") == at(NEW_YORK, 2026, 11, 2, 1, 30)


CALENDARS = st.tuples(
    st.sampled_from(["", "Mon ", "Mon..Fri ", "Sat,Sun ", "Tue,Thu "]),
    st.sampled_from(["*-*-*", "*-*-01", "*-01,07-*", "*-*-01..07", "*-02-28"]),
    st.sampled_from(["00", "02", "06,18", "*", "00/6", "22"]),
    st.sampled_from(["00", "30", "00/15", "*"]),
    st.sampled_from(["00", "30"]),
).map(lambda p: f"{p[0]}{p[1]} {p[2]}:{p[3]}:{p[4]}")


@settings(max_examples=60, deadline=None)
@given(CALENDARS, AFTER, st.sampled_from(ZONES))
def test_a_timers_next_run_is_after_the_time_given_and_on_a_wall_time_its_calendar_names(
    calendar: str, after: datetime, name: str
) -> None:
    spec = parse_calendar(calendar)
    assert spec is not None
    when = timer(calendar, after, zone=name)
    assert when is not None
    assert when > after
    local = when.astimezone(ZoneInfo(name))
    assert spec.runs_on(local.date())
    assert (local.hour, local.minute, local.second) in {
        (h, m, s) for h in spec.hours for m in spec.minutes for s in spec.seconds
    }
    # Nothing the calendar names came between (every wall time here is on the half minute, and so is every
    # zone's offset): the first pass of each wall time on the real clock.
    t = after.replace(second=30 if after.second >= 30 else 0, microsecond=0) + timedelta(seconds=30)
    while t < min(when, after + timedelta(days=1)):
        wall = t.astimezone(ZoneInfo(name))
        named = (wall.hour, wall.minute, wall.second) in {
            (h, m, s) for h in spec.hours for m in spec.minutes for s in spec.seconds
        }
        assert not (named and wall.fold == 0 and spec.runs_on(wall.date())), t
        t += timedelta(seconds=30)
