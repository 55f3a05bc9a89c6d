"""The machine's own scheduled jobs, as its activity check reports them (`jobs`), and when each runs next.
Pure: text and times in, times out; no I/O, no clock.

The check lists the crontab lines (every user's crontab, /etc/crontab, /etc/cron.d), the active systemd
timers and the `at` queue, each with its schedule as written and its program's name only. The system's own
jobs it counts and leaves out, by the `SystemServices` parameter written into it (docs/rules.md, "The
machine's scheduled jobs"): every job listed here is someone's work, and counts.

When a job runs next, strictly after a given time:

- cron: five fields (`*`, lists, ranges, steps, month and weekday names, 0 and 7 for Sunday, and Vixie
  cron's rule that a day runs when either day field matches if both are restricted) or an @-word, on the
  wall clock of the job's zone (CRON_TZ, which the check reports only where the daemon honours it), else
  the machine's, else UTC. `@reboot` has no next run. Clock changes follow cron(8): a job at a fixed time
  (neither its minute nor its hour field starts with `*`) whose time is skipped runs at the change, and
  runs once, at the first, when its time comes twice; any other job skips the skipped minutes and runs at
  both passes of the repeated ones.
- systemd timers: the next elapse systemd itself computed at the check, while it is still ahead; past it,
  computed from OnCalendar for its common forms (the shorthands, and `[weekdays] [date] time [zone]`
  with `*`, lists, `..` ranges and `/` repetitions); anything else (`~`, fractional seconds, two-digit
  years, monotonic timers) is unknown. costguard's choice for a wall time a clock change skips: no run
  (systemd does not run it either); for one that comes twice: the first.
- at: its time, while ahead.

A job whose next run is unknown is kept, with no next run: never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

# A schedule that matches a day at all does within 8 years (Feb 29: 2096, then 2104); timers' years aside.
HORIZON_DAYS = 9 * 366
# No clock change moves a wall time by more (cron(8) handles larger jumps apart): walls further back than
# this before `after` cannot run after it.
CLOCK_CHANGE = timedelta(hours=3)
MAX_JOBS = 50  # the answer holds 2,500 characters: more entries than this are not a check's
MAX_TEXT = 120

MONTHS = {
    name: n
    for n, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}
CRON_WEEKDAYS = {name: n for n, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
CALENDAR_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
AT_WORDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
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


class JobKind(StrEnum):
    CRON = "cron"
    TIMER = "timer"
    AT = "at"


@dataclass(frozen=True)
class Job:
    kind: JobKind
    schedule: str = ""  # cron's five fields or @-word; a timer's OnCalendar (several: "; "); "" for at
    command: str = ""  # the program's name (a timer: the unit it starts), never its arguments
    user: str = ""
    zone: str = ""  # CRON_TZ where the cron daemon honours it; "": the machine's
    elapse: datetime | None = None  # a timer's next elapse as systemd computed it at the check; an at job's time


@dataclass(frozen=True)
class MachineJobs:
    """The `jobs` of one answer: the jobs that count, soonest first, and what the check left out."""

    jobs: tuple[Job, ...] = ()
    zone: str | None = None  # the machine's zone; None: not reported (UTC), "": the check could not tell
    found: int = 0  # jobs that count on the machine (more than `jobs` when the answer had to be cut)
    system: int = 0  # the system's own jobs, counted and left out
    skipped: int = 0  # entries of the answer that could not be read

    @property
    def cut(self) -> int:
        """Jobs that count which the answer had no room for."""
        return max(0, self.found - len(self.jobs))


class Upcoming(NamedTuple):
    when: datetime
    job: Job


# ---------------------------------------------------------------------------------------------- reading
def parse_jobs(value: Any) -> MachineJobs | None:
    """The answer's `jobs` field; None when it has none (an older check). Never raises: an entry that
    cannot be read is skipped and counted in `skipped`."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return MachineJobs(skipped=1)
    listed = value.get("list")
    entries = listed if isinstance(listed, list) else []
    skipped = 0 if listed is None or isinstance(listed, list) else 1
    jobs = []
    for raw in entries[:MAX_JOBS]:
        job = _job(raw)
        if job is None:
            skipped += 1
        else:
            jobs.append(job)
    zone = value.get("tz")
    return MachineJobs(
        jobs=tuple(jobs),
        zone=zone[:MAX_TEXT] if isinstance(zone, str) else None,
        found=max(_count(value.get("found")), len(jobs)),
        system=_count(value.get("sys")),
        skipped=skipped + max(0, len(entries) - MAX_JOBS),
    )


def _job(raw: Any) -> Job | None:
    if not isinstance(raw, Mapping) or raw.get("k") not in tuple(JobKind):
        return None
    kind = JobKind(raw["k"])
    schedule, elapse = _text(raw.get("s")), _epoch(raw.get("n"))
    if (kind is JobKind.CRON and not schedule) or (kind is JobKind.AT and elapse is None):
        return None  # a cron line without its schedule, an at job without its time: nothing to read
    return Job(kind, schedule, _text(raw.get("c")), _text(raw.get("u")), _text(raw.get("z")), elapse)


def _text(value: Any) -> str:
    return value.strip()[:MAX_TEXT] if isinstance(value, str) else ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 2**33:
        return None
    return datetime.fromtimestamp(int(value), UTC)


# ------------------------------------------------------------------------------------------ next runs
def next_job(jobs: MachineJobs, after: datetime) -> Upcoming | None:
    """The nearest run of a job that counts, strictly after `after` (an aware time), and its job; None when
    no job's next run is known. Of two at the same time, the one the check listed first."""
    upcoming = []
    for job in jobs.jobs:
        when = next_run(job, after, jobs.zone)
        if when is not None:
            upcoming.append(Upcoming(when, job))
    return min(upcoming, key=lambda u: u.when, default=None)


def next_run(job: Job, after: datetime, machine_zone: str | None = None) -> datetime | None:
    """When `job` runs next, strictly after `after` (an aware time), in UTC; None when it will not, or
    when that is unknown. `machine_zone` is the answer's `tz` (None: not reported, taken as UTC)."""
    if after.tzinfo is None:
        raise ValueError("after must be an aware datetime")
    if job.elapse is not None and job.elapse > after:
        return job.elapse  # systemd's own figure, or at's time, while it is ahead
    if job.kind is JobKind.AT:
        return None  # its time has come: atd runs it now, not later
    if job.kind is JobKind.CRON:
        spec = parse_cron(job.schedule)
        zone = _zone(job.zone) if job.zone else _machine_zone(machine_zone)
        return spec.next(after, zone) if spec is not None and zone is not None else None
    calendars = [parse_calendar(part) for part in job.schedule.split(";")] if job.schedule.strip() else []
    runs = []
    for calendar in calendars:
        zone = _zone(calendar.zone) if calendar and calendar.zone else _machine_zone(machine_zone)
        if calendar is None or zone is None:
            return None  # one calendar unknown: the timer's next run is unknown
        runs.append(calendar.next(after, zone))
    return min((r for r in runs if r is not None), default=None)


def _machine_zone(name: str | None) -> ZoneInfo | None:
    return ZoneInfo("UTC") if name is None else _zone(name)


def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError, OSError):  # not a zone (ZoneInfoNotFoundError is a KeyError), or a path
        return None


def _days(after: datetime, zone: ZoneInfo) -> Iterator[date]:
    first = after.astimezone(zone).date()
    return (first + timedelta(days=n) for n in range(HORIZON_DAYS))


def _instants(wall: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The wall time's instant on the earlier offset and on the later one (equal but near a clock change)."""
    first, second = (wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    return first, second


def _clock_change(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
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


# -------------------------------------------------------------------------------------------------- cron
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
        for day in _days(after, zone):
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
                first, second = _instants(wall, zone)
                if first == second:
                    if first > after:  # every later wall time runs later than an ordinary one
                        return min([*found, first])
                elif first < second:  # the clock went back: this wall time came twice
                    found += [r for r in ((first,) if self.fixed else (first, second)) if r > after]
                elif self.fixed:  # the clock went forward over it: cron runs it at the change
                    change = _clock_change(second, first, zone)
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


# ------------------------------------------------------------------------------------ systemd calendars
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
        for day in _days(after, zone):
            if not self.runs_on(day):
                continue
            for hour in self.hours:
                if datetime.combine(day, time(hour, 59, 59)) < floor:
                    continue
                for minute in self.minutes:
                    for second in self.seconds:
                        first, other = _instants(datetime.combine(day, time(hour, minute, second)), zone)
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
