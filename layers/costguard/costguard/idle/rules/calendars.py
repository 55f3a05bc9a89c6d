"""When a systemd timer's calendar (OnCalendar) runs next, strictly after a given time. Pure: text and times
in, times out.

Its common forms are read: the shorthands, and `[weekdays] [date] time [zone]` with `*`, lists, `..` ranges
and `/` repetitions; anything else (`~`, fractional seconds, two-digit years, monotonic timers) is unknown.
A calendar runs on the wall clock of its own zone where it names one, else of the zone it is given (the
machine's: `jobs.next_run` chooses). costguard's choice for a wall time a clock change skips: no run
(systemd does not run it either); for one that comes twice: the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time
from zoneinfo import ZoneInfo

from costguard.idle.rules.wall_clock import CLOCK_CHANGE, days_from, instants

CALENDAR_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
SHORTHANDS = {  # systemd.time(7)
    "minutely": "*-*-* *:*:00",
    "hourly": "*-*-* *:00:00",
    "daily": "*-*-* 00:00:00",
    "weekly": "Mon *-*-* 00:00:00",
    "monthly": "*-*-01 00:00:00",
    "yearly": "*-01-01 00:00:00",
    "annually": "*-01-01 00:00:00",
    "quarterly": "*-01,04,07,10-01 00:00:00",
    "semiannually": "*-01,07-01 00:00:00",
}
_NUMBER = re.compile(r"[0-9]{1,4}")
_ZONE = re.compile(r"UTC|GMT|[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)+")


@dataclass(frozen=True)
class CalendarSpec:
    weekdays: frozenset[int]  # Monday 0
    years: frozenset[int] | None  # None: any
    months: frozenset[int]
    days: frozenset[int]
    hours: tuple[int, ...]
    minutes: tuple[int, ...]
    seconds: tuple[int, ...]
    zone: str = ""  # its own zone, when it names one

    def runs_on(self, day: date) -> bool:
        if self.years is not None and day.year not in self.years:
            return False
        return day.month in self.months and day.day in self.days and day.weekday() in self.weekdays

    def next(self, after: datetime, zone: ZoneInfo) -> datetime | None:
        floor = after.astimezone(zone).replace(tzinfo=None) - CLOCK_CHANGE
        for day in days_from(after, zone):
            if not self.runs_on(day):
                continue
            for hour in self.hours:
                if datetime.combine(day, time(hour, 59, 59)) < floor:
                    continue
                for minute in self.minutes:
                    for second in self.seconds:
                        first, other = instants(datetime.combine(day, time(hour, minute, second)), zone)
                        if first <= other and first > after:  # not skipped by a change of clocks
                            return first
        return None


def parse_calendar(text: str) -> CalendarSpec | None:
    """One OnCalendar expression in its common forms; None for anything else."""
    words = text.split()
    zone = words.pop() if len(words) > 1 and _ZONE.fullmatch(words[-1]) else ""
    if len(words) == 1 and words[0].lower() in SHORTHANDS:
        words = SHORTHANDS[words[0].lower()].split()
    weekdays: frozenset[int] | None = frozenset(range(7))
    if words and re.fullmatch(r"[A-Za-z][A-Za-z.,-]*", words[0]):
        weekdays = _calendar_weekdays(words.pop(0))
    date_text = words.pop(0) if words and ":" not in words[0] else "*-*-*"
    time_text = words.pop(0) if words else "00:00:00"
    if words or weekdays is None:
        return None
    dated, timed = _calendar_date(date_text), _calendar_time(time_text)
    if dated is None or timed is None:
        return None
    years, months, days = dated
    hours, minutes, seconds = timed
    return CalendarSpec(weekdays, years, months, days, hours, minutes, seconds, zone)


def _calendar_date(text: str) -> tuple[frozenset[int] | None, frozenset[int], frozenset[int]] | None:
    parts = text.split("-")
    if len(parts) == 2:
        parts = ["*", *parts]
    if len(parts) != 3 or (parts[0] != "*" and not re.fullmatch(r"[0-9]{4}\S*", parts[0])):
        return None  # two-digit years and `~` (a month's last days) are not read
    years = None if parts[0] == "*" else _calendar_field(parts[0], 1970, 2199)
    months, days = _calendar_field(parts[1], 1, 12), _calendar_field(parts[2], 1, 31)
    if (parts[0] != "*" and years is None) or months is None or days is None:
        return None
    return years, months, days


def _calendar_time(text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    parts = text.split(":")
    if len(parts) == 2:
        parts.append("00")
    if len(parts) != 3:
        return None
    sets = [_calendar_field(p, 0, high) for p, high in zip(parts, (23, 59, 59), strict=True)]
    hours, minutes, seconds = sets
    if hours is None or minutes is None or seconds is None:
        return None
    return tuple(sorted(hours)), tuple(sorted(minutes)), tuple(sorted(seconds))


def _calendar_field(text: str, low: int, high: int) -> frozenset[int] | None:
    values: set[int] = set()
    for item in text.split(","):
        body, slash, step_text = item.partition("/")
        step = int(step_text) if slash and _NUMBER.fullmatch(step_text) else (1 if not slash else 0)
        if step < 1:
            return None
        if body == "*":
            first, last = low, high
        elif ".." in body:
            start, _, end = body.partition("..")
            first = int(start) if _NUMBER.fullmatch(start) else -1
            last = int(end) if _NUMBER.fullmatch(end) else -1
        elif _NUMBER.fullmatch(body):
            first = int(body)
            last = high if slash else first  # "0/15": the value, then every 15 after it
        else:
            return None
        if not low <= first <= last <= high:
            return None
        values.update(range(first, last + 1, step))
    return frozenset(values)


def _calendar_weekdays(text: str) -> frozenset[int] | None:
    days: set[int] = set()
    for item in text.split(","):
        start, dots, end = item.partition("..")
        if not dots:
            start, dots, end = item.partition("-")
        first, last = _calendar_weekday(start), _calendar_weekday(end) if dots else _calendar_weekday(start)
        if first is None or last is None or first > last:
            return None
        days.update(range(first, last + 1))
    return frozenset(days)


def _calendar_weekday(name: str) -> int | None:
    name = name.lower()
    return next((n for n, full in enumerate(CALENDAR_WEEKDAYS) if name in (full, full[:3])), None)
