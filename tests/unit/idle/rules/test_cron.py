"""When a cron line runs next (idle/rules/cron.py, through jobs.next_run): its fields and @-words, the zone
it runs on, clock changes as cron(8) handles them; then a property hypothesis checks against cron minute by
minute over random lines, times and zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costguard.idle.rules.cron import parse_cron
from costguard.idle.rules.jobs import Job, JobKind, next_run
from tests.unit.idle.rules.schedule_times import AFTER, BERLIN, NEW_YORK, ZONES, at


def cron(schedule: str, after: datetime, zone: str | None = "UTC", cron_tz: str = "") -> datetime | None:
    return next_run(Job(JobKind.CRON, schedule, zone=cron_tz), after, zone)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ("*/15 * * * *", (2026, 11, 21, 10, 7), (2026, 11, 21, 10, 15)),
        ("*/15 * * * *", (2026, 11, 21, 10, 45), (2026, 11, 21, 11, 0)),
        ("1-5/2 * * * *", (2026, 11, 21, 10, 3), (2026, 11, 21, 10, 5)),
        ("1-5/2 * * * *", (2026, 11, 21, 10, 5), (2026, 11, 21, 11, 1)),  # strictly after: 10:05 has begun
        ("5,35 2-4 * * *", (2026, 11, 21, 3, 40), (2026, 11, 21, 4, 5)),
        ("0 22 * * 1-5", (2026, 11, 21, 9, 0), (2026, 11, 23, 22, 0)),  # Saturday: Monday night
        ("0 22 * * mon-fri", (2026, 11, 21, 9, 0), (2026, 11, 23, 22, 0)),
        ("0 22 * * Mon,WED", (2026, 11, 23, 23, 0), (2026, 11, 25, 22, 0)),
        ("30 4 1 jan *", (2026, 11, 21, 0, 0), (2027, 1, 1, 4, 30)),
        ("0 0 * * 0", (2026, 11, 21, 12, 0), (2026, 11, 22, 0, 0)),  # 0 is Sunday
        ("0 0 * * 7", (2026, 11, 21, 12, 0), (2026, 11, 22, 0, 0)),  # and so is 7
        ("0 0 * * 5-7", (2026, 11, 21, 12, 0), (2026, 11, 22, 0, 0)),  # Friday to Sunday
        ("0 0 * * sun", (2026, 11, 21, 12, 0), (2026, 11, 22, 0, 0)),
        ("0 9 13 * 5", (2026, 11, 1, 0, 0), (2026, 11, 6, 9, 0)),  # the 13th or any Friday (Vixie cron)
        ("0 9 13 * 5", (2026, 11, 6, 10, 0), (2026, 11, 13, 9, 0)),
        ("0 9 */10 * 5", (2026, 11, 1, 0, 0), (2026, 12, 11, 9, 0)),  # `*/10` is a star: Friday AND 1, 11, 21, 31
        ("0 9 1-7 * *", (2026, 11, 21, 0, 0), (2026, 12, 1, 9, 0)),
        ("0 0 29 2 *", (2026, 3, 1, 0, 0), (2028, 2, 29, 0, 0)),
        ("0 0 31 * *", (2026, 11, 1, 0, 0), (2026, 12, 31, 0, 0)),  # November has no 31st
        ("@yearly", (2026, 11, 21, 0, 0), (2027, 1, 1, 0, 0)),
        ("@annually", (2026, 11, 21, 0, 0), (2027, 1, 1, 0, 0)),
        ("@monthly", (2026, 11, 21, 0, 0), (2026, 12, 1, 0, 0)),
        ("@weekly", (2026, 11, 21, 0, 0), (2026, 11, 22, 0, 0)),
        ("@daily", (2026, 11, 21, 0, 0), (2026, 11, 22, 0, 0)),
        ("@midnight", (2026, 11, 21, 23, 59), (2026, 11, 22, 0, 0)),
        ("@hourly", (2026, 11, 21, 10, 7), (2026, 11, 21, 11, 0)),
        ("@DAILY", (2026, 11, 21, 0, 0), (2026, 11, 22, 0, 0)),
    ],
)
def test_a_cron_line_runs_next_at_the_first_minute_its_fields_match(
    schedule: str, after: tuple[int, ...], expected: tuple[int, ...]
) -> None:
    assert cron(schedule, at(UTC, *after)) == at(UTC, *expected)


def test_a_reboot_line_has_no_next_run() -> None:
    assert cron("@reboot", at(UTC, 2026, 11, 21)) is None


@pytest.mark.parametrize(
    "schedule",
    [
        "5/15 * * * *",  # a step after a single value: Vixie cron refuses it
        "60 * * * *",
        "* 24 * * *",
        "0 0 0 * *",
        "0 0 * 13 *",
        "0 0 * * 8",
        "*/0 * * * *",
        "0 0 31-1 * *",  # a range backwards
        "* * * *",
        "* * * * * *",  # six fields: not a user crontab's line as the check reports it
        "a b c d e",
        "0 0 * foo *",
        "1,,2 * * * *",
        "0 ² * * *",
        "@fortnightly",
        "",
    ],
)
def test_a_cron_schedule_cron_would_refuse_has_no_next_run(schedule: str) -> None:
    assert parse_cron(schedule) is None
    assert cron(schedule, at(UTC, 2026, 11, 21)) is None


def test_a_day_that_never_comes_has_no_next_run() -> None:
    assert cron("0 0 30 2 *", at(UTC, 2026, 1, 1)) is None


def test_a_cron_line_runs_on_the_machines_wall_clock() -> None:
    after = at(UTC, 2026, 11, 21, 0, 0)
    assert cron("0 2 * * *", after, zone="Europe/Berlin") == at(BERLIN, 2026, 11, 21, 2, 0)
    assert cron("0 2 * * *", after, zone="America/New_York") == at(NEW_YORK, 2026, 11, 21, 2, 0)


def test_a_cron_line_runs_on_its_own_cron_tz_before_the_machines() -> None:
    after = at(UTC, 2026, 11, 21, 0, 0)
    # 00:00 UTC is 05:30 in Kolkata: its 02:00 has passed, Berlin's has not.
    assert cron("0 2 * * *", after, zone="Europe/Berlin", cron_tz="Asia/Kolkata") == at(
        "Asia/Kolkata", 2026, 11, 22, 2, 0
    )


def test_a_machine_that_did_not_report_its_zone_runs_cron_on_utc() -> None:
    assert cron("0 2 * * *", at(UTC, 2026, 11, 21), zone=None) == at(UTC, 2026, 11, 21, 2, 0)


@pytest.mark.parametrize(("zone", "cron_tz"), [("", ""), ("Mars/Olympus", ""), ("UTC", "Mars/Olympus"), ("UTC", "..")])
def test_a_zone_that_is_not_known_leaves_the_cron_lines_next_run_unknown(zone: str, cron_tz: str) -> None:
    assert cron("0 2 * * *", at(UTC, 2026, 11, 21), zone=zone, cron_tz=cron_tz) is None


# New York's clocks in 2026: forward from 02:00 to 03:00 on March 8, back from 02:00 to 01:00 on November 1.
def test_a_fixed_time_job_whose_time_the_clocks_skip_runs_at_the_change() -> None:
    after = at(NEW_YORK, 2026, 3, 8, 0, 0)
    assert cron("30 2 * * *", after, zone="America/New_York") == at(NEW_YORK, 2026, 3, 8, 3, 0)
    assert cron("30 2 * * *", at(NEW_YORK, 2026, 3, 8, 3, 0), zone="America/New_York") == at(
        NEW_YORK, 2026, 3, 9, 2, 30
    )


def test_a_job_with_a_star_in_its_hour_skips_the_minutes_the_clocks_skip() -> None:
    after = at(NEW_YORK, 2026, 3, 8, 1, 45)
    assert cron("30 * * * *", after, zone="America/New_York") == at(NEW_YORK, 2026, 3, 8, 3, 30)
    assert cron("*/20 * * * *", after, zone="America/New_York") == at(NEW_YORK, 2026, 3, 8, 3, 0)


def test_a_fixed_time_job_whose_time_comes_twice_runs_once_at_the_first() -> None:
    first = at(NEW_YORK, 2026, 11, 1, 1, 30)  # EDT
    assert cron("30 1 * * *", at(NEW_YORK, 2026, 11, 1, 0, 0), zone="America/New_York") == first
    assert cron("30 1 * * *", first, zone="America/New_York") == at(NEW_YORK, 2026, 11, 2, 1, 30)


def test_a_job_with_a_star_in_its_hour_runs_at_both_passes_of_the_repeated_hour() -> None:
    runs, t = [], at(NEW_YORK, 2026, 11, 1, 0, 50)
    for _ in range(5):
        t = cron("*/30 * * * *", t, zone="America/New_York")  # type: ignore[assignment]
        runs.append(t.astimezone(UTC).strftime("%H:%M"))
    assert runs == ["05:00", "05:30", "06:00", "06:30", "07:00"]  # 01:00 and 01:30 EDT, then EST, then 02:00


def test_a_clock_change_of_half_an_hour_moves_a_skipped_job_to_the_change() -> None:
    # Lord Howe Island's clocks go from 02:00 to 02:30 on the first Sunday of October.
    lord_howe = ZoneInfo("Australia/Lord_Howe")
    after = at(lord_howe, 2026, 10, 4, 1, 30)
    assert cron("15 2 * * *", after, zone="Australia/Lord_Howe") == at(lord_howe, 2026, 10, 4, 2, 30)
    assert cron("15 * * * *", after, zone="Australia/Lord_Howe") == at(lord_howe, 2026, 10, 4, 3, 15)


MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]


def cron_field(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    named = value.map(lambda v: names[(v - low) % len(names)] if names else str(v)) if names else value.map(str)
    spans = st.tuples(value, value).map(sorted)
    items = st.one_of(
        st.just("*"),
        st.integers(1, high - low + 1).map(lambda k: f"*/{k}"),
        named,
        spans.map(lambda r: f"{r[0]}-{r[1]}"),
        st.tuples(spans, st.integers(1, 6)).map(lambda t: f"{t[0][0]}-{t[0][1]}/{t[1]}"),
    )
    return st.lists(items, min_size=1, max_size=3).map(",".join)


CRON_LINES = st.tuples(
    cron_field(0, 59),
    cron_field(0, 23),
    cron_field(1, 31),
    cron_field(1, 12, MONTH_NAMES),
    cron_field(0, 7, [*DAY_NAMES, "sun"]),
).map(" ".join)


def matches(field: str, value: int, low: int, names: list[str] | None = None) -> bool:
    """An independent reading of one cron field, for the properties."""

    def number(text: str) -> int:
        return names.index(text) + low if names and text in names else int(text)

    for item in field.split(","):
        body, _, step_text = item.partition("/")
        step = int(step_text or 1)
        first, last = (low, 99) if body == "*" else (number(body.split("-")[0]), number(body.split("-")[-1]))
        if first <= value <= last and (value - first) % step == 0:
            return True
    return False


def runs_at(line: str, wall: datetime) -> bool:
    minute, hour, dom, month, dow = line.split()
    weekday = wall.isoweekday() % 7
    by_date = matches(dom, wall.day, 1)
    by_weekday = matches(dow, weekday, 0, DAY_NAMES) or (weekday == 0 and matches(dow, 7, 0, DAY_NAMES))
    either = not dom.startswith("*") and not dow.startswith("*")
    day = (by_date or by_weekday) if either else (by_date and by_weekday)
    return (
        day
        and matches(minute, wall.minute, 0)
        and matches(hour, wall.hour, 0)
        and matches(month, wall.month, 1, MONTH_NAMES)
    )


def reference(line: str, after: datetime, zone: ZoneInfo, horizon: timedelta) -> datetime | None:
    """cron(8) minute by minute on the real clock: a wall time that comes runs (a fixed-time job's only at its
    first pass); at a change that skips wall times, a fixed-time job whose time was skipped runs."""
    fields = line.split()
    fixed = not fields[0].startswith("*") and not fields[1].startswith("*")
    t = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while t <= after + horizon:
        local = t.astimezone(zone)
        if runs_at(line, local.replace(tzinfo=None)) and not (fixed and local.fold == 1):
            return t
        before = (t - timedelta(minutes=1)).astimezone(zone)
        jump = local.utcoffset() - before.utcoffset()  # type: ignore[operator]
        if fixed and jump > timedelta(0):
            skipped = before.replace(tzinfo=None) + timedelta(minutes=1)
            while skipped < local.replace(tzinfo=None):
                if runs_at(line, skipped):
                    return t
                skipped += timedelta(minutes=1)
        t += timedelta(minutes=1)
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CRON_LINES, AFTER, st.sampled_from(ZONES))
def test_a_cron_lines_next_run_is_the_first_minute_cron_would_run_it(line: str, after: datetime, name: str) -> None:
    zone = ZoneInfo(name)
    when = cron(line, after, zone=name)
    if when is not None:  # after the time given, on a wall time the line names (or at a change of clocks)
        assert when > after
        local = when.astimezone(zone)
        at_change = (when - timedelta(seconds=1)).astimezone(zone).utcoffset() != local.utcoffset()
        assert runs_at(line, local.replace(tzinfo=None)) or at_change
    expected = reference(line, after, zone, timedelta(days=2))
    if expected is not None:
        assert when == expected
    else:
        assert when is None or when > after + timedelta(days=2)
