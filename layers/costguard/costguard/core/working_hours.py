"""The working hours a machine keeps, suggested from the hours it worked: one rule, for the weekly
digest's advice (its hours of work, read from its utilization) and the idle warning's offer (its hours
running, read from its starts and stops). Pure: hours in, a `costguard:schedule` value out.

A machine keeps working hours when it worked on at least 5 days and 80 % of its working hours fall
inside one window of at most 16 hours: from the median day's first working hour to the hour after the
median day's last (UTC). `weekdays` when every day it worked was a weekday, else `daily`; the value is
one idle/rules/schedule.py reads. Inside its window a machine is never warned or stopped, so the window is
the hours of the work itself and no wider: an hour more is an hour costguard may never stop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

MIN_DAYS = 5
SHARE = 0.8
MAX_HOURS = 16
HISTORY_DAYS = 14  # the starts and stops the idle warning looks back on
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class WorkingHours:
    opens: int  # the hour (UTC) the window opens
    closes: int  # the hour (UTC) it closes, after `opens`
    weekdays: bool  # every day it worked was a weekday
    days: int  # the days it worked
    inside: int  # its working hours inside the window
    worked: int  # its working hours in all

    def holds(self, at: datetime) -> bool:
        return self.opens <= at.hour < self.closes

    @property
    def tag(self) -> str:
        """The `costguard:schedule` value that says so."""
        return f"{'weekdays' if self.weekdays else 'daily'} {self.opens:02d}:00-{self.closes:02d}:00 UTC"


def working_hours(worked: Iterable[datetime]) -> WorkingHours | None:
    """The window the hours (UTC) a machine worked keep to, or None when they keep to none."""
    hours = list(worked)
    by_day: dict[int, list[int]] = {}
    for at in hours:
        by_day.setdefault(at.toordinal(), []).append(at.hour)
    if len(by_day) < MIN_DAYS:
        return None
    opens = sorted(min(v) for v in by_day.values())[len(by_day) // 2]
    closes = sorted(max(v) for v in by_day.values())[len(by_day) // 2] + 1
    if not 0 < closes - opens <= MAX_HOURS:
        return None
    inside = sum(1 for at in hours if opens <= at.hour < closes)
    if inside < SHARE * len(hours):
        return None
    weekdays = all(date.fromordinal(d).weekday() < 5 for d in by_day)
    return WorkingHours(opens, closes, weekdays, len(by_day), inside, len(hours))


def running_hours(changes: Iterable[tuple[datetime, str]], now: datetime) -> list[datetime]:
    """The hours (each run's first hour to the hour of its stop) a machine ran in the last HISTORY_DAYS,
    from EC2's `running` and `stopped` state changes; a run still going is not counted (its end is not
    known yet)."""
    since = now - timedelta(days=HISTORY_DAYS)
    out: list[datetime] = []
    started: datetime | None = None
    for at, state in sorted(changes):
        if not since <= at <= now:
            continue
        if state == "running" and started is None:
            started = at
        elif state == "stopped" and started is not None:
            hour = started.replace(minute=0, second=0, microsecond=0)
            while hour <= at:
                out.append(hour)
                hour += HOUR
            started = None
    return out


def suggest_from_changes(changes: Iterable[tuple[datetime, str]], now: datetime) -> str | None:
    """For the idle warning: the working hours a machine's starts and stops of the last two weeks keep to."""
    found = working_hours(running_hours(changes, now))
    return found.tag if found is not None else None
