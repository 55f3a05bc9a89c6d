"""One working-hours suggestion (core/working_hours.py), from the hours a machine worked: the idle
warning offers it from the machine's starts and stops, the weekly digest from its hours of work
(tests/unit/digest/weekly/test_advice.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.core.working_hours import running_hours, suggest_from_changes, working_hours
from costguard.idle.rules.schedule import parse_schedule

MONDAY = datetime(2026, 11, 9, tzinfo=UTC)


def changes_at(spans: list[tuple[str, str]], first_day: int = 0) -> list[tuple[datetime, str]]:
    out = []
    for day, (start, stop) in enumerate(spans, first_day):
        for clock, state in ((start, "running"), (stop, "stopped")):
            hour, minute = map(int, clock.split(":"))
            out.append((MONDAY + timedelta(days=day, hours=hour, minutes=minute), state))
    return out


def test_regular_starts_and_stops_suggest_working_hours_from_the_median_start_to_after_the_median_stop() -> None:
    changes = changes_at(
        [("08:10", "19:20"), ("08:40", "18:50"), ("07:55", "19:05"), ("08:20", "19:40"), ("08:05", "19:10")]
    )
    now = MONDAY + timedelta(days=5, hours=12)
    # starts at 8, 8, 7, 8, 8 -> median 8; stops at 19, 18, 19, 19, 19 -> median 19, so until 20:00; Monday-Friday
    assert suggest_from_changes(changes, now) == "weekdays 08:00-20:00 UTC"
    saturday = changes_at([("08:05", "19:00")], first_day=5)
    assert suggest_from_changes(changes + saturday, now + timedelta(days=1)) == "daily 08:00-20:00 UTC"
    parse_schedule("weekdays 08:00-20:00 UTC")  # what it suggests is what the tag reads
    assert suggest_from_changes(changes[:8], now) is None  # four days are not a habit
    assert suggest_from_changes(changes, now + timedelta(days=30)) is None  # a month ago is not now


def test_starts_and_stops_at_different_hours_every_day_suggest_nothing() -> None:
    scattered = changes_at([(f"{(5 * d) % 12:02d}:00", f"{(5 * d) % 12 + 3:02d}:00") for d in range(6)])
    assert suggest_from_changes(scattered, MONDAY + timedelta(days=6)) is None


def test_a_machine_left_running_overnight_keeps_no_working_hours() -> None:
    # started every morning, stopped the next morning: no window of 16 hours holds 80 % of its running hours
    changes = []
    for day in range(6):
        changes += [
            (MONDAY + timedelta(days=day, hours=8), "running"),
            (MONDAY + timedelta(days=day + 1, hours=7), "stopped"),
        ]
    assert suggest_from_changes(changes, MONDAY + timedelta(days=7, hours=12)) is None


def test_a_run_still_going_is_not_counted_and_a_run_counts_up_to_the_hour_of_its_stop() -> None:
    changes = [(MONDAY + timedelta(hours=9, minutes=30), "running"), (MONDAY + timedelta(hours=11), "stopped")]
    changes.append((MONDAY + timedelta(hours=13), "running"))
    assert running_hours(changes, MONDAY + timedelta(hours=14)) == [MONDAY + timedelta(hours=h) for h in (9, 10, 11)]


def test_the_window_holds_most_of_the_work_and_names_its_figures() -> None:
    # five weekdays at 09:00-16:59, and one stray hour at 22:00 on Wednesday: 40 of 41 hours inside
    worked = [MONDAY + timedelta(days=d, hours=h) for d in range(5) for h in range(9, 17)]
    worked.append(MONDAY + timedelta(days=2, hours=22))
    found = working_hours(worked)
    assert found is not None
    assert (found.tag, found.days, found.inside, found.worked) == ("weekdays 09:00-17:00 UTC", 5, 40, 41)
    assert found.holds(MONDAY + timedelta(hours=16))
    assert not found.holds(MONDAY + timedelta(hours=17))
