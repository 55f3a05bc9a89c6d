"""Working hours, from the `costguard:schedule` tag. Pure: text in, times out.

Grammar: one or more windows separated by `;`, each `<days> <HH:MM>-<HH:MM> <IANA zone>`:

    weekdays 08:30-19:00 Europe/Berlin
    daily 01:00-05:00 UTC
    mon-fri 22:00-06:00 America/New_York        (overnight: the night that starts Monday to Friday)
    mon,wed 09:00-10:00 UTC; fri 14:00-15:00 UTC

Days: `daily`, `weekdays`, `weekends`, or day names (`mon` … `sun`) as a list (`mon,wed`) or a range
(`mon-fri`). Times are the zone's wall clock, so a window keeps its local hours across a change of
clocks; `24:00` ends a window at midnight. Inside a window a machine is never warned or stopped;
outside it the idle rule applies, and costguard starts it shortly before its next window opens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from costguard.core.errors import CostguardError

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
NAMED = {"daily": frozenset(range(7)), "weekdays": frozenset(range(5)), "weekends": frozenset({5, 6})}
_WINDOW = re.compile(r"^(\S+)\s+(\d{2}):(\d{2})-(\d{2}):(\d{2})(?:\s+(\S+))?$")
MAX_LENGTH = 256  # an EC2 tag value


class ScheduleError(CostguardError, ValueError):
    """A schedule tag costguard cannot read; the reason is told to the owner, and the machine kept."""


@dataclass(frozen=True)
class Window:
    days: frozenset[int]  # the weekdays a window starts on, Monday = 0
    start: int  # minutes after local midnight
    end: int  # minutes after local midnight; <= start: the window ends the next day
    zone: ZoneInfo

    @property
    def length(self) -> timedelta:
        minutes = self.end - self.start if self.end > self.start else 24 * 60 - self.start + self.end
        return timedelta(minutes=minutes)

    def closing(self, opened: datetime) -> datetime:
        """When the window that opened at `opened` closes: its end on the wall clock of the day it ends (an
        overnight window across a change of clocks is an hour longer or shorter)."""
        days, end = divmod(self.end, 24 * 60)  # 24:00 is the next day's 00:00
        day = opened.astimezone(self.zone).date() + timedelta(days=days + (1 if self.end <= self.start else 0))
        return datetime.combine(day, time(end // 60, end % 60), tzinfo=self.zone).astimezone(UTC)

    def opening(self, day: datetime) -> datetime:
        """When the window that starts on the local date of `day` opens, in UTC."""
        # Wall-clock arithmetic: the local start that day, whatever the zone's offset then.
        wall = datetime.combine(day.date(), time(self.start // 60, self.start % 60), tzinfo=self.zone)
        return wall.astimezone(UTC)


@dataclass(frozen=True)
class Schedule:
    windows: tuple[Window, ...]
    text: str

    def inside(self, moment: datetime) -> bool:
        return self.opened(moment) is not None

    def opened(self, moment: datetime) -> datetime | None:
        """When the window `moment` is inside opened (the latest, where windows overlap); None outside."""
        found = []
        for window in self.windows:
            local = moment.astimezone(window.zone)
            for back in (0, 1):  # a window that opened today, or an overnight one that opened yesterday
                day = local - timedelta(days=back)
                if day.weekday() in window.days:
                    opened = window.opening(day)
                    if opened <= moment < opened + window.length:
                        found.append(opened)
        return max(found, default=None)

    def closes(self, opened: datetime) -> datetime:
        """When the window that opened at `opened` closes, on the zone's wall clock (the latest, where windows
        open together)."""
        ends = [w.closing(opened) for w in self.windows if _opens_at(w, opened)]
        return max(ends, default=opened + min(w.length for w in self.windows))

    def next_start(self, moment: datetime) -> datetime:
        """The next time a window opens, strictly after `moment` (UTC)."""
        found: list[datetime] = []
        for window in self.windows:
            local = moment.astimezone(window.zone)
            for ahead in range(8):
                day = local + timedelta(days=ahead)
                if day.weekday() in window.days and (opened := window.opening(day)) > moment:
                    found.append(opened)
                    break
        return min(found)


def _opens_at(window: Window, moment: datetime) -> bool:
    day = moment.astimezone(window.zone)
    return day.weekday() in window.days and window.opening(day) == moment


def parse_schedule(text: str) -> Schedule:
    text = text.strip()
    if not text:
        raise ScheduleError("the schedule is empty")
    if len(text) > MAX_LENGTH:
        raise ScheduleError(f"the schedule is too long ({len(text)} characters)")
    return Schedule(tuple(_window(part.strip()) for part in text.split(";") if part.strip()), text)


def _window(part: str) -> Window:
    match = _WINDOW.match(part)
    if match is None:
        raise ScheduleError(f"{part!r} is not '<days> HH:MM-HH:MM <time zone>'")
    days, h1, m1, h2, m2, zone_name = match.groups()
    start, end = int(h1) * 60 + int(m1), int(h2) * 60 + int(m2)
    if int(h1) > 23 or int(m1) > 59 or int(h2) > 24 or int(m2) > 59 or end > 24 * 60:
        raise ScheduleError(f"{part!r}: times are HH:MM-HH:MM, 00:00 to 24:00")
    if start == end:
        raise ScheduleError(f"{part!r} is an empty window")
    if not zone_name:
        raise ScheduleError(f"{part!r} names no time zone (Europe/Berlin, UTC...)")
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long for a file's
        raise ScheduleError(f"{zone_name[:64]!r} is not an IANA time zone") from None
    return Window(_days(days), start, end % (24 * 60) if end == 24 * 60 and start > 0 else end, zone)


def _days(text: str) -> frozenset[int]:
    if text in NAMED:
        return NAMED[text]
    found: set[int] = set()
    for item in text.split(","):
        first, _, last = item.partition("-")
        if first not in DAYS or (last and last not in DAYS):
            raise ScheduleError(f"{text!r} is not days (daily, weekdays, weekends, mon-fri, mon,wed...)")
        a, b = DAYS.index(first), DAYS.index(last or first)
        found.update(range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)])
    return frozenset(found)
