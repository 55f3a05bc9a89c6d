"""Wall times and the times hypothesis draws, for the tests of the machine's scheduled jobs (test_jobs,
test_cron, test_calendars): instants near the clock changes of zones that change by an hour, by half an
hour (Lord Howe), and never (UTC, Kolkata)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

NEW_YORK = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def at(zone: tzinfo | str, *fields: int, fold: int = 0) -> datetime:
    """A wall time in a zone, as the instant in UTC (aware times of two zones never compare equal in a
    repeated hour)."""
    zone = ZoneInfo(zone) if isinstance(zone, str) else zone
    return datetime(*fields, tzinfo=zone, fold=fold).astimezone(UTC)  # type: ignore[arg-type,misc]


ZONES = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"]
CHANGES = [  # instants near which clocks change in those zones
    datetime(2026, 3, 8, 7, 0, tzinfo=UTC),
    datetime(2026, 11, 1, 6, 0, tzinfo=UTC),
    datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
    datetime(2026, 10, 25, 1, 0, tzinfo=UTC),
    datetime(2026, 10, 3, 15, 30, tzinfo=UTC),
    datetime(2027, 4, 3, 15, 0, tzinfo=UTC),
]
AFTER = st.one_of(
    st.datetimes(datetime(2026, 1, 1), datetime(2027, 12, 31), timezones=st.just(UTC)),
    st.tuples(st.sampled_from(CHANGES), st.integers(-6 * 3600, 6 * 3600)).map(lambda t: t[0] + timedelta(seconds=t[1])),
)
