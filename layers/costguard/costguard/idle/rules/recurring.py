"""Recurring work, learned from a machine's own recent past. Pure: its activity in, a pattern out.

A nightly cron job, or a pipeline step that an upstream export triggers every weekday evening, leaves
its machine idle for hours between runs. Stopped there, it must be running again before the next run.
From two weeks of a machine's activity in quarter-hours (any GPU busy, or a core busy for half an hour:
the system's few minutes of apt are not work) and its starts (EC2's `running`), `learn` finds work that
starts at about the same time of day: on at least 3 of the last 7 days, within 30 minutes of the most
recent start, from idle or from a stop. It looks on UTC's clock (a cron on a UTC box) and on the team's
(a pipeline that follows the office across a change of clocks), and keeps the clock that explains more.
A machine may start work at more than one time a day (a person's notebook at 09:30 every weekday, and
again after a long meeting on some): each time that recurs is learned, the one on most days first, and a
stop is judged against the nearest of them.

The pattern's days are every weekday except those seen without the work both times in two weeks
(running through its time and idle) and never with work near its time: a weekday-only pipeline is not
started on Saturday; a day nobody saw, a holiday, a late run keep theirs. Its time is the earliest of
its recent starts. A start costguard made for a pattern that found no work counts against it; a pattern
that did so twice is broken and no longer used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from costguard.core.idleness import GPU_MEMORY_HELD_MB, is_work
from costguard.core.keeping import kept_for_runs, starts_declined
from costguard.core.records import Instance
from costguard.core.series import Point
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision, StartFor

QUARTER = timedelta(minutes=15)
DAYS = 7  # the days a pattern must recur in: 3 of the last 7
HISTORY_DAYS = 14  # the days looked at, for its weekdays and its broken starts
MIN_DAYS = 3
TOLERANCE = 30  # minutes: starts this close to the latest one's time of day are the same work
LATE = timedelta(minutes=60)  # a run may come this late and still be the expected one
EARLY = timedelta(minutes=TOLERANCE)
LOOSE = 90  # minutes: work this near a weekday's time keeps that weekday in the pattern
BROKEN_AFTER = 2  # learned starts that found no work
QUIET_BEFORE = 2  # quarter-hours without work before a start: a pause in a job is not a new start
# A job that begins by waiting on data holds its GPU memory at 0 % this long at most before it computes; memory held
# longer is a kernel left open, not a job waiting (`_waiting`).
MEMORY_WAIT = timedelta(hours=4)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class Quarter:
    """A quarter-hour of a machine: working, idle, or not running (no data)."""

    at: datetime  # UTC
    busy: bool | None
    gpu: bool | None = None  # busy on its GPUs (one at work, or its memory held); None: no GPU point for it


@dataclass(frozen=True)
class LearnedStart:
    """A start costguard made for a learned pattern: for work expected at `expected`."""

    expected: datetime
    outcome: str = ""  # "", "used" or "wasted"


@dataclass(frozen=True)
class Pattern:
    zone: str  # "UTC" or the team's zone
    minute: int  # of the day, on the zone's clock: the earliest recent start
    weekdays: frozenset[int]  # Monday = 0
    days: int  # of the last 7 with the work at that time
    key: str  # what a broken pattern is remembered by

    def occurrences(self, after: datetime, count: int = 2) -> list[datetime]:
        """The next `count` times the work is expected, from the day of `after` on (UTC). Times of day
        are the zone's wall clock, so a pattern keeps its local hour across a change of clocks. A time the
        spring change skips, or the autumn change repeats, is taken at its earlier reading: cron runs a
        skipped job as the clocks jump, and the first of two repeated hours comes first."""
        zone = ZoneInfo(self.zone)
        day = after.astimezone(zone).date() - timedelta(days=1)
        out: list[datetime] = []
        for ahead in range(9):
            current = day + timedelta(days=ahead)
            if current.weekday() in self.weekdays:
                wall = datetime.combine(current, time(self.minute // 60, self.minute % 60), tzinfo=zone)
                at = min(wall.astimezone(UTC), wall.replace(fold=1).astimezone(UTC))
                if at + LATE > after:
                    out.append(at)
            if len(out) >= count:
                break
        return out

    def next_start(self, after: datetime) -> datetime:
        """The next expected start strictly after `after`."""
        return next(t for t in self.occurrences(after, 3) if t > after)

    def pending(self, now: datetime) -> datetime | None:
        """A run expected around now that has not come yet: it may still (up to an hour late)."""
        return next((t for t in self.occurrences(now, 1) if t - EARLY <= now < t + LATE), None)

    def describe(self) -> str:
        clock = f"{self.minute // 60:02d}:{self.minute % 60:02d} {self.zone}"
        if len(self.weekdays) == 7:
            when = ""
        elif self.weekdays == frozenset(range(5)):
            when = " on weekdays"
        else:
            when = " on " + ", ".join(WEEKDAYS[d] for d in sorted(self.weekdays))
        return f"starts work at about {clock}{when} ({self.days} of the last {DAYS} days)"


@dataclass(frozen=True)
class Learned:
    pattern: Pattern | None  # the time work starts on most days
    reason: str  # why there is no pattern, or what it is
    outcomes: tuple[tuple[datetime, bool], ...] = ()  # learned starts now judged: (expected, found work)
    broken: str = ""  # the key of a pattern found broken now
    more: tuple[Pattern, ...] = ()  # other times of day work starts on the same machine, on fewer days

    @property
    def patterns(self) -> tuple[Pattern, ...]:
        return () if self.pattern is None else (self.pattern, *self.more)


def quarters_of(
    gpus: Sequence[Sequence[Point]],
    core: Sequence[Point],
    cpu: Sequence[Point],
    policy: IdlePolicy,
    vcpus: int,
    *,
    memory: Sequence[Sequence[Point]] = (),
) -> list[Quarter]:
    """Quarter-hours from two weeks of CloudWatch points at a 15-minute period: busy when any GPU's
    Maximum reached its threshold, or the CPU's Average (the busiest core's where published) stayed at its
    threshold for two quarters running, or (`memory`: its GPUs' memory used, for the nights of a machine that
    cannot answer) a GPU's memory was held: a job that begins by waiting holds it at 0 %; idle when there was
    data and neither; missing: not running."""
    gpu_busy: dict[datetime, bool] = {}
    for series in gpus:
        for t, v in series:
            gpu_busy[t] = gpu_busy.get(t, False) or v >= policy.gpu_idle_percent
    for t in _waiting(memory):
        gpu_busy[t] = True
    level = policy.busiest_core_percent if core else policy.cpu_threshold(vcpus, busiest_core_known=False)
    cpu_high = {t: v >= level for t, v in (core or cpu)}
    times = sorted(set(gpu_busy) | set(cpu_high) | {t for t, _ in cpu})
    out = []
    for t in times:
        sustained = cpu_high.get(t, False) and (cpu_high.get(t - QUARTER, False) or cpu_high.get(t + QUARTER, False))
        out.append(Quarter(t, gpu_busy.get(t, False) or sustained, gpu_busy.get(t)))
    return out


def _waiting(memory: Sequence[Sequence[Point]]) -> list[datetime]:
    """The quarter-hours a job may be waiting with its GPU memory held: the first MEMORY_WAIT of each span in which
    a GPU's memory was held. Memory held longer, at 0 %, is a kernel left open (a notebook's, held from the day
    into the night): counted as work through the night, it hid the start of the machine's own 02:00 job."""
    held = sorted({t for series in memory for t, v in series if is_work(v, GPU_MEMORY_HELD_MB)})
    out, since = [], None
    for k, t in enumerate(held):
        if k == 0 or t - held[k - 1] > QUARTER:
            since = t
        if since is not None and t - since < MEMORY_WAIT:
            out.append(t)
    return out


def work_starts(quarters: Sequence[Quarter], running_at: Iterable[datetime] = ()) -> list[datetime]:
    """When work started: a busy quarter after QUIET_BEFORE quarters without work (idle, or no data: the
    machine stopped). A machine started (EC2's `running`) up to 30 minutes before is counted from then:
    its work needed it up by that time."""
    busy = {q.at for q in quarters if q.busy}
    ups = sorted(running_at)
    starts = []
    for at in sorted(busy):
        if any(at - k * QUARTER in busy for k in range(1, QUIET_BEFORE + 1)):
            continue
        began = at
        for up in ups:
            if at - timedelta(minutes=TOLERANCE) <= up <= at:
                began = up
                break
        starts.append(began)
    return starts


def learn(
    quarters: Sequence[Quarter],
    now: datetime,
    *,
    zones: Sequence[str] = ("UTC",),
    running_at: Iterable[datetime] = (),
    made: Sequence[LearnedStart] = (),
    broken: Sequence[str] = (),
) -> Learned:
    """The recurring work of one machine, if any, from its last two weeks of quarter-hours."""
    since = now - timedelta(days=HISTORY_DAYS)
    recent = [q for q in quarters if since <= q.at < now]
    starts = [s for s in work_starts(recent, running_at) if since <= s < now]
    outcomes = tuple(
        (m.expected, _found(recent, m.expected)) for m in made if not m.outcome and m.expected + LATE <= now
    )
    wasted = [m.expected for m in made if m.outcome == "wasted"] + [e for e, found in outcomes if not found]
    found: list[Pattern] = []
    for zone in dict.fromkeys(zones):
        these = _patterns(recent, starts, now, zone)
        if these and (not found or these[0].days > found[0].days):
            found = these
    if not found:
        return Learned(None, "no work starts at the same time on 3 of the last 7 days", outcomes)
    kept = [p for p in found if p.key not in broken and sum(1 for e in wasted if _near(p, e)) < BROKEN_AFTER]
    newly = next((p.key for p in found if p not in kept and p.key not in broken), "")
    if not kept:
        why = f"it {found[0].describe()}, but costguard's starts for it found no work twice: not used"
        return Learned(None, why, outcomes, broken=newly)
    return Learned(kept[0], kept[0].describe(), outcomes, broken=newly, more=tuple(kept[1:]))


def _patterns(quarters: Sequence[Quarter], starts: Sequence[datetime], now: datetime, zone_name: str) -> list[Pattern]:
    """Each time of day work starts at on 3 of the last 7 days, on this clock, taken from the most recent start
    back (a start within the tolerance of a pattern taken is that pattern's work): the one on most days
    first."""
    zone = ZoneInfo(zone_name)
    week = now - timedelta(days=DAYS)
    local = sorted((s.astimezone(zone) for s in starts), reverse=True)
    out: list[Pattern] = []
    covered: list[datetime] = []  # the starts of the patterns taken: a start is one work's, never two
    for anchor in (s for s in local if s >= week.astimezone(zone)):  # the most recent first: a drift is followed
        minute = anchor.hour * 60 + anchor.minute
        if anchor in covered or any(_gap(minute, p.minute) <= 2 * TOLERANCE for p in out):
            continue
        near = [s for s in local if s not in covered and _gap(s.hour * 60 + s.minute, minute) <= TOLERANCE]
        days = {s.date() for s in near if s >= week.astimezone(zone)}
        if len(days) < MIN_DAYS:
            continue
        this_week = [s for s in near if s >= week.astimezone(zone)]
        covered += near
        earliest = min(this_week, key=lambda s: _offset(s.hour * 60 + s.minute, minute))
        start_minute = earliest.hour * 60 + earliest.minute
        weekdays = _weekdays(quarters, starts, zone, start_minute, now)
        key = f"{zone_name} {start_minute // 60:02d}:{start_minute % 60:02d}"
        out.append(Pattern(zone_name, start_minute, weekdays, len(days), key))
    return sorted(out, key=lambda p: -p.days)  # stable: the most recent of equals first


def _weekdays(
    quarters: Sequence[Quarter], starts: Sequence[datetime], zone: ZoneInfo, minute: int, now: datetime
) -> frozenset[int]:
    """Every weekday but those seen without the work every time in two weeks (running from 30 minutes
    before its time to an hour after, and idle), never with work within 90 minutes of its time: a
    holiday, or a late run, is no reason to let a run find its machine stopped."""
    by_time = {q.at: q.busy for q in quarters}
    without: dict[int, int] = {}
    near_enough: set[int] = set()
    for start in starts:
        local = start.astimezone(zone)
        if _gap(local.hour * 60 + local.minute, minute) <= LOOSE:
            near_enough.add(local.weekday())
    day = (now - timedelta(days=HISTORY_DAYS)).astimezone(zone).date()
    while day <= now.astimezone(zone).date():
        expected = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=zone).astimezone(UTC)
        if expected + LATE <= now and expected - EARLY >= now - timedelta(days=HISTORY_DAYS):
            states = [by_time.get(t) for t in _quarters(expected - EARLY, expected + LATE)]
            if all(state is False for state in states):
                without[day.weekday()] = without.get(day.weekday(), 0) + 1
        day += timedelta(days=1)
    return frozenset(d for d in range(7) if d in near_enough or without.get(d, 0) < 2)


def _found(quarters: Sequence[Quarter], expected: datetime) -> bool:
    """Work in the expected run's time: from 30 minutes before to an hour after."""
    span = set(_quarters(expected - EARLY, expected + LATE))
    return any(q.busy for q in quarters if q.at in span)


def _near(pattern: Pattern, expected: datetime) -> bool:
    local = expected.astimezone(ZoneInfo(pattern.zone))
    return _gap(local.hour * 60 + local.minute, pattern.minute) <= TOLERANCE


def _quarters(start: datetime, end: datetime) -> list[datetime]:
    first = datetime.fromtimestamp(int(start.timestamp()) // 900 * 900, UTC)
    out = []
    while first < end:
        out.append(first)
        first += QUARTER
    return out


def _gap(a: int, b: int) -> int:
    """Minutes between two times of day, around midnight."""
    return min(abs(a - b), 24 * 60 - abs(a - b))


def _offset(a: int, anchor: int) -> int:
    """Signed minutes from `anchor` to `a`, around midnight (-720 to 720)."""
    return (a - anchor + 720) % 1440 - 720


def with_pattern(decision: Decision, learned: Learned, policy: IdlePolicy, now: datetime) -> Decision:
    """A warning or a stop, in the light of the machine's recurring work: not now when its next run (or a
    run due and late) is nearer than ShortestStopMinutes after the stop; else, with when costguard starts
    it again, ScheduleLeadMinutes before that run."""
    if not learned.patterns or decision.action not in (Action.WARN, Action.STOP) or not decision.will_stop:
        return decision
    stop_at = decision.stop_time(now)
    due = [(p, at) for p in learned.patterns if (at := p.pending(now)) is not None]
    pattern, upcoming = min(((p, p.next_start(stop_at)) for p in learned.patterns), key=lambda item: item[1])
    late = due[0][1] if due else None
    if due:
        pattern = due[0][0]
    if late is not None or upcoming - stop_at < timedelta(minutes=policy.shortest_stop_minutes):
        if late is not None:
            why = f"a run due at {late:%H:%M} UTC has not come yet"
        else:
            why = f"its next run, at about {upcoming:%H:%M} UTC, is too soon after a stop at {stop_at:%H:%M} to pay"
        return replace(
            decision, action=Action.NONE, reason=f"{pattern.describe()}; {why}", next_work=pattern.describe()
        )
    start_at = upcoming - timedelta(minutes=policy.schedule_lead_minutes)
    said = pattern.describe()
    return replace(decision, next_work=said, start_at=start_at, start_for=StartFor.RUN, runs=said)


def learns(instance: Instance, policy: IdlePolicy) -> bool:
    """Whether recurring work is looked for on this machine, and costguard may start it for its runs: on for the
    deployment and not off for it, or kept for its runs by its owner (`costguard:keep-for-runs` outranks both)."""
    if kept_for_runs(instance.tags):
        return True
    return policy.learned_starts and not starts_declined(instance.tags)


def adjusted(
    decision: Decision, learned: Learned | None, *, unread: bool, policy: IdlePolicy, now: datetime
) -> Decision:
    """A warning or a stop in the light of what was learned of the machine's recurring work. A stop whose
    machine's fortnight could not be read in full waits for a sweep that can (missing data is never a
    reason to stop: the run it would miss is what is not known)."""
    if unread and decision.action is Action.STOP:
        why = "its last two weeks could not be read, to see whether work recurs on it: not stopped in this sweep"
        return replace(decision, action=Action.NONE, reason=why)
    return with_pattern(decision, learned, policy, now) if learned else decision


def unpromised(decision: Decision) -> Decision:
    """A warning or a stop whose learned start could not be kept among the times costguard promised (a
    start-at it did not promise, it does not honour): the stop waits for a sweep that can keep it; the
    warning goes out without the promise."""
    if decision.action is Action.STOP:
        why = "its learned start could not be recorded, to be honoured later: not stopped in this sweep"
        return replace(decision, action=Action.NONE, reason=why)
    return replace(decision, next_work="", start_at=None, start_for=StartFor.RUN)
