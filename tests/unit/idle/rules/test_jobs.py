"""The machine's scheduled jobs, read from the activity check's answer, and when each runs next: cron's fields
and @-words, systemd's calendars and next elapse, at's time, time zones and clock changes; then properties
hypothesis checks over random schedules, times and zones."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costguard.idle.rules.activity import parse_report
from costguard.idle.rules.jobs import (
    Job,
    JobKind,
    MachineJobs,
    Upcoming,
    next_job,
    next_run,
    parse_calendar,
    parse_cron,
    parse_jobs,
)

NEW_YORK = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def at(zone: tzinfo | str, *fields: int, fold: int = 0) -> datetime:
    """A wall time in a zone, as the instant in UTC (aware times of two zones never compare equal in a
    repeated hour)."""
    zone = ZoneInfo(zone) if isinstance(zone, str) else zone
    return datetime(*fields, tzinfo=zone, fold=fold).astimezone(UTC)  # type: ignore[arg-type,misc]


def cron(schedule: str, after: datetime, zone: str | None = "UTC", cron_tz: str = "") -> datetime | None:
    return next_run(Job(JobKind.CRON, schedule, zone=cron_tz), after, zone)


def timer(schedule: str, after: datetime, zone: str | None = "UTC", elapse: datetime | None = None) -> datetime | None:
    return next_run(Job(JobKind.TIMER, schedule, elapse=elapse), after, zone)


# ------------------------------------------------------------------------------------ reading the answer
def answer(**fields: Any) -> str:
    return json.dumps({"v": 1, "at": 0, "sessions": [], "kernels": [], "cpu": [], "gpu": [], "hook": None, **fields})


def test_an_answer_of_an_older_check_has_no_jobs_rather_than_none() -> None:
    assert parse_report(answer()).jobs is None


def test_the_jobs_are_read_from_the_answer_with_what_the_check_left_out() -> None:
    jobs = {
        "tz": "Europe/Berlin",
        "found": 4,
        "sys": 17,
        "list": [
            {"k": "timer", "s": "*-*-* 02:00:00", "n": 1795500000, "c": "nightly-train.service", "u": ""},
            {"k": "cron", "s": "30 1 * * mon-fri", "z": "America/New_York", "c": "python3", "u": "ana"},
            {"k": "at", "n": 1795400000, "c": "bash", "u": "root"},
        ],
    }
    read = parse_report(answer(jobs=jobs)).jobs
    assert read == MachineJobs(
        jobs=(
            Job(
                JobKind.TIMER,
                "*-*-* 02:00:00",
                "nightly-train.service",
                "",
                "",
                datetime.fromtimestamp(1795500000, UTC),
            ),
            Job(JobKind.CRON, "30 1 * * mon-fri", "python3", "ana", "America/New_York"),
            Job(JobKind.AT, "", "bash", "root", "", datetime.fromtimestamp(1795400000, UTC)),
        ),
        zone="Europe/Berlin",
        found=4,
        system=17,
    )
    assert read.cut == 1  # one job that counts had no room in the answer


@pytest.mark.parametrize(
    "entry",
    [
        "0 2 * * * python3",  # not an object
        {"k": "anacron", "s": "1 5 cron.daily"},  # a kind the check does not report
        {"k": ["cron"], "s": "* * * * *"},
        {"k": "cron", "c": "python3"},  # a cron line without its schedule
        {"k": "cron", "s": ["0", "2"]},
        {"k": "at", "c": "bash"},  # an at job without its time
        {"k": "at", "n": "1795400000"},
        {"k": "at", "n": True},
        {"k": "at", "n": -5},
        {"k": "at", "n": 1e300},
        None,
    ],
)
def test_an_entry_that_cannot_be_read_is_skipped_and_counted(entry: Any) -> None:
    good = {"k": "cron", "s": "0 2 * * *", "c": "python3", "u": "ana"}
    read = parse_jobs({"list": [good, entry, good]})
    assert read is not None
    assert [j.schedule for j in read.jobs] == ["0 2 * * *", "0 2 * * *"]
    assert read.skipped == 1


@pytest.mark.parametrize("value", ["cron", 7, [], [{"k": "cron", "s": "* * * * *"}]])
def test_a_jobs_field_that_is_not_an_object_is_one_skipped_entry(value: Any) -> None:
    assert parse_jobs(value) == MachineJobs(skipped=1)


def test_a_list_that_is_not_a_list_is_skipped_and_the_counts_are_still_read() -> None:
    read = parse_jobs({"list": "cron", "found": 3, "sys": "many", "tz": 7})
    assert read == MachineJobs(zone=None, found=3, system=0, skipped=1)


def test_wrong_types_in_a_job_read_as_nothing_but_never_its_kind() -> None:
    read = parse_jobs({"list": [{"k": "timer", "s": 5, "c": {"x": 1}, "u": None, "z": 3, "n": "soon"}]})
    assert read is not None
    assert read.jobs == (Job(JobKind.TIMER),)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
        lambda inner: (
            st.lists(inner, max_size=6)
            | st.dictionaries(
                st.sampled_from(["k", "s", "c", "u", "z", "n", "list", "tz", "found", "sys"]) | st.text(max_size=5),
                inner,
                max_size=6,
            )
        ),
        max_leaves=30,
    )
)
def test_reading_the_jobs_never_raises_on_any_json(value: Any) -> None:
    read = parse_jobs(value)
    assert read is None or read.found >= len(read.jobs)
    report = parse_report(answer(jobs=value))  # the rest of the answer is still read
    assert report.jobs == read


# ---------------------------------------------------------------------------------------------- cron
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


# ---------------------------------------------------------------------------------------- systemd timers
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


# ---------------------------------------------------------------------------------------------------- at
def test_an_at_job_runs_at_its_time_and_not_after_it() -> None:
    job = Job(JobKind.AT, command="bash", elapse=at(UTC, 2026, 11, 21, 14, 0))
    assert next_run(job, at(UTC, 2026, 11, 21, 9, 0)) == at(UTC, 2026, 11, 21, 14, 0)
    assert next_run(job, at(UTC, 2026, 11, 21, 14, 0)) is None


# -------------------------------------------------------------------------------------- the next job
def test_the_next_job_is_the_nearest_run_of_any_kind() -> None:
    jobs = MachineJobs(
        jobs=(
            Job(JobKind.CRON, "@reboot", "start-jupyter"),
            Job(JobKind.CRON, "0 2 * * *", "python3", "ana"),
            Job(JobKind.TIMER, "OnUnitActiveUSec=1d", "sync.service"),  # unknown: kept, never chosen
            Job(JobKind.TIMER, "*-*-* 01:30:00", "etl.service", elapse=at(UTC, 2026, 11, 22, 1, 30)),
            Job(JobKind.AT, command="bash", elapse=at(UTC, 2026, 11, 21, 23, 0)),
        ),
        zone="Europe/Berlin",
    )
    after = at(UTC, 2026, 11, 21, 12, 0)
    assert next_job(jobs, after) == Upcoming(at(UTC, 2026, 11, 21, 23, 0), jobs.jobs[4])
    # After the at job: the cron line at 02:00 Berlin (01:00 UTC), before the timer's 01:30 UTC.
    assert next_job(jobs, at(UTC, 2026, 11, 21, 23, 0)) == Upcoming(at(BERLIN, 2026, 11, 22, 2, 0), jobs.jobs[1])


def test_of_two_jobs_at_the_same_time_the_next_is_the_one_listed_first() -> None:
    jobs = MachineJobs(jobs=(Job(JobKind.CRON, "0 2 * * *", "a"), Job(JobKind.CRON, "@daily", "b")), zone="UTC")
    upcoming = next_job(jobs, at(UTC, 2026, 11, 21, 1, 0))
    assert upcoming is not None
    assert upcoming.job.command == "a"


def test_a_machine_with_no_job_whose_next_run_is_known_has_no_next_job() -> None:
    jobs = MachineJobs(jobs=(Job(JobKind.CRON, "@reboot", "x"), Job(JobKind.TIMER, "OnBootUSec=1h", "y.service")))
    assert next_job(jobs, at(UTC, 2026, 11, 21)) is None
    assert next_job(MachineJobs(), at(UTC, 2026, 11, 21)) is None


def test_a_time_without_a_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        next_run(Job(JobKind.CRON, "* * * * *"), datetime(2026, 11, 21))


# ---------------------------------------------------------------------------------------------- properties
ZONES = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"]
CHANGES = [  # instants near which clocks change in those zones
    datetime(2026, 3, 8, 7, 0, tzinfo=UTC),
    datetime(2026, 11, 1, 6, 0, tzinfo=UTC),
    datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
    datetime(2026, 10, 25, 1, 0, tzinfo=UTC),
    datetime(2026, 10, 3, 15, 30, tzinfo=UTC),
    datetime(2027, 4, 3, 15, 0, tzinfo=UTC),
]
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
AFTER = st.one_of(
    st.datetimes(datetime(2026, 1, 1), datetime(2027, 12, 31), timezones=st.just(UTC)),
    st.tuples(st.sampled_from(CHANGES), st.integers(-6 * 3600, 6 * 3600)).map(lambda t: t[0] + timedelta(seconds=t[1])),
)


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


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.sampled_from(list(JobKind)), st.sampled_from([*ZONES, "", None, "Nowhere/Else"]))
def test_no_schedule_text_makes_a_next_run_raise(text: str, kind: JobKind, zone: str | None) -> None:
    parse_cron(text)
    parse_calendar(text)
    when = next_run(
        Job(kind, text, elapse=None if kind is not JobKind.AT else at(UTC, 2026, 1, 1)), at(UTC, 2026, 6, 1), zone
    )
    assert when is None or when > at(UTC, 2026, 6, 1)
