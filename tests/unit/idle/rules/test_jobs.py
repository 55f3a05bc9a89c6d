"""The machine's scheduled jobs, read from the activity check's answer, and when each runs next whatever its
kind: at's time, a timer's or a cron line's (their schedules: test_cron, test_calendars), a machine's
nearest job; then properties hypothesis checks over any JSON and any schedule text."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.idle.rules.activity import parse_report
from costguard.idle.rules.calendars import parse_calendar
from costguard.idle.rules.cron import parse_cron
from costguard.idle.rules.jobs import Job, JobKind, MachineJobs, Upcoming, next_run, parse_jobs
from testing.jobs import cut, next_job
from tests.unit.idle.rules.schedule_times import BERLIN, ZONES, at


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
    assert cut(read) == 1  # one job that counts had no room in the answer


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


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.sampled_from(list(JobKind)), st.sampled_from([*ZONES, "", None, "Nowhere/Else"]))
def test_no_schedule_text_makes_a_next_run_raise(text: str, kind: JobKind, zone: str | None) -> None:
    parse_cron(text)
    parse_calendar(text)
    when = next_run(
        Job(kind, text, elapse=None if kind is not JobKind.AT else at(UTC, 2026, 1, 1)), at(UTC, 2026, 6, 1), zone
    )
    assert when is None or when > at(UTC, 2026, 6, 1)
