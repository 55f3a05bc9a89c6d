"""The `costguard:schedule` tag: working hours a machine keeps, and when it should be up before them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from costguard.idle.rules.schedule import ScheduleError, parse_schedule

# 2026-11-16 is a Monday. Berlin is UTC+1 in November, UTC+2 from 2027-03-28 (the last Sunday of March).
MONDAY = datetime(2026, 11, 16, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return MONDAY + timedelta(days=day, hours=hour, minutes=minute)


@pytest.mark.parametrize(
    ("text", "moment", "inside"),
    [
        ("weekdays 08:30-19:00 Europe/Berlin", at(0, 7, 30), True),  # 08:30 Berlin = 07:30 UTC
        ("weekdays 08:30-19:00 Europe/Berlin", at(0, 7, 29), False),
        ("weekdays 08:30-19:00 Europe/Berlin", at(0, 17, 59), True),
        ("weekdays 08:30-19:00 Europe/Berlin", at(0, 18, 0), False),  # the end is not inside
        ("weekdays 08:30-19:00 Europe/Berlin", at(5, 10, 0), False),  # Saturday
        ("daily 01:00-05:00 UTC", at(5, 3, 0), True),
        ("mon-fri 22:00-06:00 America/New_York", at(1, 4, 0), True),  # Mon 23:00 New York, overnight
        ("mon-fri 22:00-06:00 America/New_York", at(5, 10, 0), True),  # Sat 05:00 New York: Friday's night
        ("mon-fri 22:00-06:00 America/New_York", at(6, 10, 0), False),  # Sun 05:00: Saturday has no night
        ("mon,wed 09:00-10:00 UTC; fri 14:00-15:00 UTC", at(4, 14, 30), True),
        ("mon,wed 09:00-10:00 UTC; fri 14:00-15:00 UTC", at(1, 9, 30), False),  # Tuesday
        ("weekends 00:00-24:00 UTC", at(6, 23, 59), True),
    ],
)
def test_inside_its_working_hours(text: str, moment: datetime, inside: bool) -> None:
    assert parse_schedule(text).inside(moment) is inside


def test_the_next_window_opens_in_the_machines_zone_across_a_change_of_clocks() -> None:
    schedule = parse_schedule("weekdays 08:30-19:00 Europe/Berlin")
    assert schedule.next_start(at(0, 18, 0)) == at(1, 7, 30)  # Tuesday 08:30 Berlin
    assert schedule.next_start(at(4, 18, 0)) == at(7, 7, 30)  # Friday evening: Monday
    spring = datetime(2027, 3, 26, 18, 0, tzinfo=UTC)  # Friday; Berlin moves to UTC+2 on Sunday
    assert schedule.next_start(spring) == datetime(2027, 3, 29, 6, 30, tzinfo=UTC)  # Monday 08:30 CEST


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("weekdays 8-19 Europe/Berlin", "HH:MM-HH:MM"),
        ("weekdays 08:30-19:00 Mars/Olympus", "time zone"),
        ("someday 08:30-19:00 UTC", "days"),
        ("weekdays 08:30-08:30 UTC", "empty window"),
        ("weekdays 25:00-26:00 UTC", "HH:MM-HH:MM"),
        ("weekdays 08:30-19:00", "time zone"),
        ("x" * 300, "too long"),
        ("weekdays 08:30-19:00 " + "é" * 200, "time zone"),  # a zone name longer than a file's: OSError before
    ],
)
def test_a_schedule_that_cannot_be_read_says_why(text: str, reason: str) -> None:
    with pytest.raises(ScheduleError, match=reason):
        parse_schedule(text)
