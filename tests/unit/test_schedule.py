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
    ],
)
def test_a_schedule_that_cannot_be_read_says_why(text: str, reason: str) -> None:
    with pytest.raises(ScheduleError, match=reason):
        parse_schedule(text)


def test_regular_starts_and_stops_suggest_working_hours_from_the_median_start_to_after_the_median_stop() -> None:
    from costguard.idle.rules.schedule import suggest_schedule  # noqa: PLC0415

    monday = datetime(2026, 11, 9, tzinfo=UTC)
    changes = []
    for day, (start, stop) in enumerate(
        [("08:10", "19:20"), ("08:40", "18:50"), ("07:55", "19:05"), ("08:20", "19:40")]
    ):
        for at, state in ((start, "running"), (stop, "stopped")):
            hour, minute = map(int, at.split(":"))
            changes.append((monday + timedelta(days=day, hours=hour, minutes=minute), state))
    now = monday + timedelta(days=5, hours=12)
    # starts at 8, 8, 7, 8 -> median 8; stops at 19, 18, 19, 19 -> median 19, so until 20:00; all Monday-Thursday
    assert suggest_schedule(changes, now) == "weekdays 08:00-20:00 UTC"
    saturday = [
        (monday + timedelta(days=5, hours=8, minutes=5), "running"),
        (monday + timedelta(days=5, hours=19), "stopped"),
    ]
    assert suggest_schedule(changes + saturday, now + timedelta(days=1)) == "daily 08:00-20:00 UTC"
    parse_schedule("weekdays 08:00-20:00 UTC")  # what it suggests is what the tag reads
    assert suggest_schedule(changes[:4], now) is None  # two days are not a habit
    assert suggest_schedule(changes, now + timedelta(days=30)) is None  # a month ago is not now
    scattered = [(monday + timedelta(days=d, hours=(5 * d) % 12), s) for d in range(5) for s in ("running",)]
    scattered += [(monday + timedelta(days=d, hours=(5 * d) % 12 + 3), "stopped") for d in range(5)]
    assert suggest_schedule(scattered, now) is None  # different hours every day
