"""Two weekly digests in a row claim each hour a stop kept a machine off once: a weekend stop still off on Monday
morning, started at 08:00, is claimed 12 h in all, not 12 h by one digest and its Monday morning again by the next.
The digests' weeks (midnight seven days before, to now) overlap by the hours of the run's day; the saving counts the
seven days to the run (collection.WEEK)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.digest.weekly.collection import WEEK
from costguard.digest.weekly.savings import LOOKBACK, saved_by_stops
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
    claimed = []
    for end in (first_run, first_run + timedelta(days=7)):
        week_start = (end - timedelta(days=7)).replace(hour=0)  # as collection.py reads the ledger
        read = [e for e in (sunday, morning) if week_start - LOOKBACK <= e.at < end]
        claimed.append(saved_by_stops(read, {"i-p": machine}, end, PriceBook(None), start=end - WEEK).hours)
    assert claimed == [12.0, 0.0]  # Sunday 20:00 to Monday 08:00, by the first digest alone
