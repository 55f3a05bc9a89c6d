"""Two weekly digests in a row claim each hour a stop kept a machine off once: a weekend stop still off on Monday
morning, started at 08:00, is claimed 12 h in all, not 12 h by one digest and its Monday morning again by the next.
The digests' weeks (midnight seven days before, to now) overlap by the hours of the run's day; the saving counts the
hours from where the digest before ended (savings.claimed_since): across a clock change and after a run retried
late too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.digest.weekly.savings import LOOKBACK, claimed_since, saved_by_stops
from costguard.state.entries import Entry, EntryKind


def test_a_weekend_stop_is_claimed_by_one_digest_hour_by_hour_never_by_two() -> None:
    first_run = datetime(2026, 11, 23, 9, tzinfo=UTC)  # a Monday, 09:00: the template's default
    sunday = Entry(
        datetime(2026, 11, 22, 20, tzinfo=UTC),
        EntryKind.STOP,
        "i-p",
        "us-east-1",
        "enforce",
        instance_type="p4d.24xlarge",
        hourly_saving=10.0,
    )
    morning = Entry(datetime(2026, 11, 23, 8, tzinfo=UTC), EntryKind.MORNING_START, "i-p", "us-east-1", "enforce")
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "running", morning.at)
    assert claims((first_run, first_run + timedelta(days=7)), (sunday, morning), machine) == [12.0, 0.0]


def claims(runs: tuple[datetime, ...], entries: tuple[Entry, ...], machine: Instance) -> list[float]:
    """The hours each digest run at `runs` claims, each counting from where the one before it ended."""
    claimed, before = [], None
    for end in runs:
        week_start = (end - timedelta(days=7)).replace(hour=0)  # as collection.py reads the ledger
        read = [e for e in entries if week_start - LOOKBACK <= e.at < end]
        since = claimed_since(end, before)
        claimed.append(saved_by_stops(read, {machine.instance_id: machine}, end, PriceBook(None), start=since).hours)
        before = end
    return claimed


def off_throughout(at: datetime) -> tuple[Entry, Instance]:
    """A p4d stopped at `at` and still off."""
    stop = Entry(at, EntryKind.STOP, "i-p", "eu-central-1", "enforce", instance_type="p4d.24xlarge", hourly_saving=10.0)
    return stop, Instance("i-p", "eu-central-1", "p4d.24xlarge", "stopped", at - timedelta(days=20))


def test_across_the_spring_clock_change_a_machine_off_throughout_is_claimed_each_hour_once() -> None:
    # The digest runs at 09:00 in its team's zone: across Berlin's spring change, 167 h after the one before.
    berlin = ZoneInfo("Europe/Berlin")
    runs = tuple(datetime(2026, 3, day, 9, tzinfo=berlin).astimezone(UTC) for day in (23, 30))
    stop, machine = off_throughout(datetime(2026, 3, 22, 20, tzinfo=UTC))
    assert sum(claims(runs, (stop,), machine)) == (runs[-1] - stop.at).total_seconds() / 3600  # 179 h, not 180


def test_after_a_run_retried_two_hours_late_the_next_digest_claims_from_where_it_ended() -> None:
    runs = (datetime(2026, 11, 16, 11, tzinfo=UTC), datetime(2026, 11, 23, 9, tzinfo=UTC))  # the first retried
    stop, machine = off_throughout(datetime(2026, 11, 15, 20, tzinfo=UTC))
    assert claims(runs, (stop,), machine) == [15.0, 166.0]  # 181 h off in all, not 183


def test_a_digest_before_it_ran_by_hand_midweek_or_weeks_ago_is_not_where_its_saving_starts() -> None:
    end = datetime(2026, 11, 23, 9, tzinfo=UTC)
    assert claimed_since(end, None) == end - timedelta(days=7)
    assert claimed_since(end, end - timedelta(days=3)) == end - timedelta(days=7)  # by hand, midweek
    assert claimed_since(end, end - timedelta(days=14)) == end - timedelta(days=7)  # a week missed
    assert claimed_since(end, end - timedelta(days=7, hours=-5)) == end - timedelta(days=7, hours=-5)
