"""A zone's wall clock, as cron and systemd read their schedules on it: the days to search from a time on, a
wall time's instants on either side of a change of clocks, and the moment the clocks changed. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

# A schedule that matches a day at all does within 8 years (Feb 29: 2096, then 2104); timers' years aside.
HORIZON_DAYS = 9 * 366
# No clock change moves a wall time by more (cron(8) handles larger jumps apart): walls further back than
# this before `after` cannot run after it.
CLOCK_CHANGE = timedelta(hours=3)


def days_from(after: datetime, zone: ZoneInfo) -> Iterator[date]:
    first = after.astimezone(zone).date()
    return (first + timedelta(days=n) for n in range(HORIZON_DAYS))


def instants(wall: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The wall time's instant on the earlier offset and on the later one (equal but near a clock change)."""
    first, second = (wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    return first, second


def clock_change(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The first instant on the new offset, between an instant before a change of clocks and one after it."""
    offset = after.astimezone(zone).utcoffset()
    low, high = int(before.timestamp()), int(after.timestamp())
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == offset:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)
