"""The machine's own scheduled jobs, as its activity check reports them (`jobs`), and when each runs next.
Pure: text and times in, times out; no I/O, no clock.

The check lists the crontab lines (every user's crontab, /etc/crontab, /etc/cron.d), the active systemd
timers and the `at` queue, each with its schedule as written and its program's name only. The system's own
jobs it counts and leaves out, by the `SystemServices` parameter written into it (docs/rules.md, "The
machine's scheduled jobs"): every job listed here is someone's work, and counts.

When a job runs next, strictly after a given time:

- cron: on the wall clock of the job's zone (CRON_TZ, which the check reports only where the daemon honours
  it), else the machine's, else UTC; its fields, @-words and clock changes: cron.py.
- systemd timers: the next elapse systemd itself computed at the check, while it is still ahead; past it,
  computed from OnCalendar (calendars.py), on the calendar's own zone, else the machine's.
- at: its time, while ahead.

A job whose next run is unknown is kept, with no next run: never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

from costguard.idle.rules.calendars import parse_calendar
from costguard.idle.rules.cron import parse_cron

MAX_JOBS = 50  # the answer holds 2,500 characters: more entries than this are not a check's
MAX_TEXT = 120


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


class Upcoming(NamedTuple):
    when: datetime
    job: Job


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
        zone = zone_named(job.zone) if job.zone else _machine_zone(machine_zone)
        return spec.next(after, zone) if spec is not None and zone is not None else None
    calendars = [parse_calendar(part) for part in job.schedule.split(";")] if job.schedule.strip() else []
    runs = []
    for calendar in calendars:
        zone = zone_named(calendar.zone) if calendar and calendar.zone else _machine_zone(machine_zone)
        if calendar is None or zone is None:
            return None  # one calendar unknown: the timer's next run is unknown
        runs.append(calendar.next(after, zone))
    return min((r for r in runs if r is not None), default=None)


def _machine_zone(name: str | None) -> ZoneInfo | None:
    return ZoneInfo("UTC") if name is None else zone_named(name)


def zone_named(name: str) -> ZoneInfo | None:
    """The zone of that name, or None where it is none (an abbreviation such as "IST", "", a path)."""
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError, OSError):  # not a zone (ZoneInfoNotFoundError is a KeyError), or a path
        return None
