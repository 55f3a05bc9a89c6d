"""When a cron line runs next, strictly after a given time. Pure: text and times in, times out.

Five fields (`*`, lists, ranges, steps, month and weekday names, 0 and 7 for Sunday, and Vixie cron's rule
that a day runs when either day field matches if both are restricted) or an @-word, on the wall clock of the
zone it is given (the job's CRON_TZ, else the machine's, else UTC: `jobs.next_run` chooses). `@reboot` has
no next run. Clock changes follow cron(8): a job at a fixed time (neither its minute nor its hour field
starts with `*`) whose time is skipped runs at the change, and runs once, at the first, when its time comes
twice; any other job skips the skipped minutes and runs at both passes of the repeated ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from zoneinfo import ZoneInfo

from costguard.idle.rules.wall_clock import CLOCK_CHANGE, clock_change, days_from, instants

MONTHS = {
    name: n
    for n, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}
CRON_WEEKDAYS = {name: n for n, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
AT_WORDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_NUMBER = re.compile(r"[0-9]{1,4}")


@dataclass(frozen=True)
class CronSpec:
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # Sunday 0
    either_day: bool  # both day fields restricted: a day runs when either matches (Vixie cron)
    fixed: bool  # neither the minute nor the hour field starts with `*`: cron(8)'s fixed-time job

    def runs_on(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        by_date, by_weekday = day.day in self.days, day.isoweekday() % 7 in self.weekdays
        return (by_date or by_weekday) if self.either_day else (by_date and by_weekday)

    def next(self, after: datetime, zone: ZoneInfo) -> datetime | None:
        floor = after.astimezone(zone).replace(tzinfo=None) - CLOCK_CHANGE
        for day in days_from(after, zone):
            if self.runs_on(day):
                found = self._first_on(day, after, zone, floor)
                if found is not None:
                    return found
        return None

    def _first_on(self, day: date, after: datetime, zone: ZoneInfo, floor: datetime) -> datetime | None:
        found: list[datetime] = []
        for hour in self.hours:
            for minute in self.minutes:
                wall = datetime.combine(day, time(hour, minute))
                if wall < floor:
                    continue
                first, second = instants(wall, zone)
                if first == second:
                    if first > after:  # every later wall time runs later than an ordinary one
                        return min([*found, first])
                elif first < second:  # the clock went back: this wall time came twice
                    found += [r for r in ((first,) if self.fixed else (first, second)) if r > after]
                elif self.fixed:  # the clock went forward over it: cron runs it at the change
                    change = clock_change(second, first, zone)
                    found += [change] if change > after else []
        return min(found, default=None)


def parse_cron(text: str) -> CronSpec | None:
    """Cron's five fields or an @-word; None for `@reboot` and for anything cron would refuse."""
    fields = AT_WORDS.get(text.strip().lower(), text).split()
    if len(fields) != 5:
        return None
    limits: tuple[tuple[int, int, Mapping[str, int]], ...] = (
        (0, 59, {}),
        (0, 23, {}),
        (1, 31, {}),
        (1, 12, MONTHS),
        (0, 7, CRON_WEEKDAYS),
    )
    sets = [_cron_field(f, low, high, names) for f, (low, high, names) in zip(fields, limits, strict=True)]
    minutes, hours, days, months, weekdays = sets
    if minutes is None or hours is None or days is None or months is None or weekdays is None:
        return None
    return CronSpec(
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        days=days,
        months=months,
        weekdays=frozenset(d % 7 for d in weekdays),  # 7 is Sunday too
        either_day=not fields[2].startswith("*") and not fields[4].startswith("*"),
        fixed=not fields[0].startswith("*") and not fields[1].startswith("*"),
    )


def _cron_field(text: str, low: int, high: int, names: Mapping[str, int]) -> frozenset[int] | None:
    values: set[int] = set()
    for item in text.split(","):
        body, slash, step_text = item.partition("/")
        step = _cron_number(step_text, {}) if slash else 1
        if step is None or step < 1:
            return None
        first: int | None = low
        last: int | None = high
        if body != "*":
            start, dash, end = body.partition("-")
            if slash and not dash:
                return None  # "5/15": Vixie cron refuses a step after a single value
            first, last = _cron_number(start, names), _cron_number(end if dash else start, names)
        if first is None or last is None or not low <= first <= last <= high:
            return None
        values.update(range(first, last + 1, step))
    return frozenset(values)


def _cron_number(text: str, names: Mapping[str, int]) -> int | None:
    if _NUMBER.fullmatch(text):
        return int(text)
    return names.get(text.lower())
