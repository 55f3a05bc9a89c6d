"""A machine that cannot answer the activity check (no SSM agent online) and runs work of its own at night. Pure:
its quarter-hours, the starts people made, the policy and `now` in.

costguard cannot read such a machine's crontab or timers, so it reads its nights instead: GPU or CPU work that
began in the evening or at night (the team's clock, from EVENING to NIGHT_ENDS) on a machine that was already
running, idle, for the hour before, with no start by a person in that hour, is work the machine does by itself.
One such night makes it an automation machine, until QUIET_NIGHTS nights have passed without such work (a one-off
night training run does not hold the machine for ever); where such work was seen on two weekdays' nights or more,
only those weekdays' nights are counted (a pipeline of the working week rests every weekend, and runs again after it),
and where it was seen on one weekday's only, the weekend's nights are not counted either.

Its work may begin by waiting (a job that starts in the evening and waits for data shows nothing in the metrics
for hours), so such a machine is not warned or stopped from its evening until its night's work has run (work
seen tonight no sooner than the earliest its nights began, then the idle window), or until HOLD_AFTER past the
latest start of work seen on its nights; stopped during the day, it is started again before its evening, as
before a job.

A machine that answers the check can run by itself too: a box set up to run unattended (a crontab of its own
whose lines are all housekeeping, none of them its work: a health ping every few minutes, an hourly log rotation,
a mount at boot; nobody logged in, no notebook kernel), whose work an upstream system triggers at its owners'
evening. Its nights are read the same way, on its own clock (the zone its check reports: the one its owners set
it to, where "evening" is theirs, not the team's). Until costguard has watched it for a week (`SEEN_FOR`), such a
box whose nights showed no work yet is held the same way from every evening on its clock until its night is over
(`unseen_nights`), and stopped in the day with a start before its next evening: a box that runs by itself may
have weekday runs that a shorter watch has not seen (a deploy on a Sunday sees none).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import ActivityReport
from costguard.idle.rules.decision import Action, Decision, StartFor
from costguard.idle.rules.jobs import Job, JobKind, next_run, zone_named
from costguard.idle.rules.recurring import QUARTER, Quarter, work_starts

EVENING = time(18, 0)  # the team's clock: work that begins after it, on a machine left running, is its own
NIGHT_ENDS = time(6, 0)
QUIET_NIGHTS = 2  # nights without such work before the machine is judged as any other again (of its weekdays)
WEEKLY = 2  # weekdays whose nights had such work: a week's schedule, whose other nights are its rest, not quiet
SATURDAY = 5
RUNNING_BEFORE = timedelta(hours=1)  # up and idle this long before its work began: nobody started it for this
# Work begun within this of the hour (on their clock) at which a person began work of their day after starting the
# machine is theirs; work at another hour of their day may be a server's job on another clock (02:00 UTC is 07:30 in
# Kolkata), and stays the machine's own.
THEIR_HOUR = timedelta(hours=1)
HOLD_AFTER = timedelta(hours=2)  # past the latest start of work seen: a night whose work did not come
WATCHED = 0.75  # a weekday night watched: this share of its quarter-hours known (the machine running)
SEEN_FOR = timedelta(days=7)  # a box that runs by itself, watched this long: its weekdays' runs have all been seen
BLIND = "costguard cannot look inside it (no SSM agent answers its activity check)"
LET_IT_SEE = (
    "turn on Default Host Management (DefaultHostManagement=true) or give it an instance profile with "
    "AmazonSSMManagedInstanceCore"
)
CANNOT_SEE = f"{BLIND}: {LET_IT_SEE}"
# A person's first run of the day begins in their weekday morning, on their own clock. On a machine that cannot
# answer the check its first minutes are invisible: CloudWatch's newest minutes are not in yet when the stop is
# made, and a job that begins by loading or waiting shows nothing in them. So no stop of such a machine then.
MORNING_BEGINS, MORNING_ENDS = time(8, 0), time(13, 0)
MORNING = (
    "its owner's weekday morning (from 8 to 13 o'clock on their clock), when a person's run of the day begins, "
    "and costguard would not see it begin"
)
# Without GPU metrics too, judged by its CPU alone (its owner's word, or the account's), a person's job
# that waits (on a queue, for data) shows nothing at any hour of their day: such a machine is stopped only out of it.
WORKING_DAY = (
    "its owner's working day (from 8 to 18 o'clock on their clock): judged by its CPU alone, costguard would not "
    "see a job of theirs that waits"
)


@dataclass(frozen=True)
class NightWork:
    """The nights a machine ran work of its own, on the team's clock."""

    zone: str
    nights: tuple[date, ...]  # the dates of the evenings whose night had such work, oldest first
    earliest: timedelta  # after its evening's EVENING, the earliest start of such work seen
    latest: timedelta  # ... and the latest
    last_busy: datetime | None  # the last quarter-hour with work, of the data read (unseen nights: the last start)
    blind: bool = True  # it cannot answer the check (False: a box that runs by itself, answering)
    # its nights on its other clocks (a job on its owner's clock and another on the team's): each holds it too
    others: tuple[NightWork, ...] = ()

    @property
    def unseen(self) -> bool:
        """No night of its work seen yet: held through every night (`unseen_nights`)."""
        return not self.nights

    def evening(self, day: date) -> datetime:
        """That day's evening (UTC)."""
        return datetime.combine(day, EVENING, tzinfo=ZoneInfo(self.zone)).astimezone(UTC)

    def held_until(self, evening: datetime) -> datetime:
        return evening + self.latest + HOLD_AFTER

    def tonight(self, now: datetime) -> datetime | None:
        """The evening whose hold `now` is in, if any."""
        today = now.astimezone(ZoneInfo(self.zone)).date()
        for day in (today, today - timedelta(days=1)):
            evening = self.evening(day)
            if evening <= now < self.held_until(evening):
                return evening
        return None

    def next_evening(self, after: datetime) -> datetime:
        today = after.astimezone(ZoneInfo(self.zone)).date()
        return next(e for d in range(3) if (e := self.evening(today + timedelta(days=d))) > after)

    def describe(self) -> str:
        if self.unseen and self.blind:
            return f"may run work of its own on a weekday night costguard has not watched yet (evenings, {self.zone})"
        if self.unseen:
            clock = f"may work any evening on its clock ({self.zone})"
            return f"runs by itself (housekeeping crontab, nobody logged in) and {clock}"
        seen = len(self.nights)
        latest = (datetime.combine(date(2000, 1, 1), EVENING) + self.latest).time()
        nights = "last night" if seen == 1 else f"{seen} of the last nights"
        return f"runs GPU work of its own at night ({nights}, starting by {latest:%H:%M} {self.zone})"

    def cannot_see(self) -> str:
        """What costguard cannot see on it, and how to let it ("" for a box that answers the check)."""
        return f"; {CANNOT_SEE}" if self.blind else ""


def runs_by_itself(
    report: ActivityReport | None, now: datetime, window: timedelta, team_zone: str = "UTC"
) -> str | None:
    """The zone of its own clock, where its check says it is a box set up to run by itself: a crontab (or timers)
    of its own whose every job is housekeeping (`housekeeping`), nobody logged in and no notebook kernel. None
    otherwise: a job of its crontab that is work says when its work comes (machine_jobs.py starts it before).
    A check that names no zone: the machine's UTC; one that names a zone that cannot be read (an abbreviation
    such as "IST"): its clock is not UTC, and the team's zone is the nearer guess."""
    jobs = report.jobs if report is not None else None
    if report is None or jobs is None or not jobs.jobs or report.sessions or report.kernels:
        return None
    clock = zone_named(jobs.zone) if jobs.zone else ZoneInfo("UTC")
    zone = clock.key if clock is not None else team_zone  # not a zone the machine's clock could be read on
    return zone if all(housekeeping(job, now, window, zone) for job in jobs.jobs) else None


def housekeeping(job: Job, now: datetime, window: timedelta, zone: str | None) -> bool:
    """A job that keeps the box, not its work: one that runs at boot only (`@reboot`), or again and again within
    the idle window (a health ping every 10 minutes, an hourly log rotation: the machine stays idle through them).
    A job whose runs are unknown is not taken for housekeeping."""
    if job.kind is JobKind.CRON and job.schedule.strip().lower() == "@reboot":
        return True
    first = next_run(job, now, zone)
    second = next_run(job, first, zone) if first is not None else None
    return first is not None and second is not None and first - now <= window and second - first <= window


def unseen_nights(quarters: Sequence[Quarter], now: datetime, zone: str) -> NightWork | None:
    """A box that runs by itself, watched for less than SEEN_FOR: held from each evening on its clock until its
    night ends (its work may start at any hour of it, and by waiting), stopped in the day, started before its
    evening. None once a week of its quarter-hours is known."""
    known = [q.at for q in quarters if q.busy is not None]
    if known and min(known) <= now - SEEN_FOR:
        return None
    whole_night = datetime.combine(date(2000, 1, 2), NIGHT_ENDS) - datetime.combine(date(2000, 1, 1), EVENING)
    # Its night's work has run once work *began* after its evening: a day's job running on into the evening is
    # not its night's (its night may still bring work of its own).
    began = work_starts(quarters)
    return NightWork(zone, (), timedelta(0), whole_night - HOLD_AFTER, max(began, default=None), blind=False)


def unwatched_nights(quarters: Sequence[Quarter], now: datetime, zone: str) -> NightWork | None:
    """A machine that cannot answer the check, none of whose weekday nights costguard has watched yet, and whose
    data shows no work begun in its person's day on its GPUs (`on_its_gpus`: the CPU alone may be the system's own
    timers): it may be a box whose work comes on weekday nights (an evening export, a nightly job) that a short
    watch (a deploy on a Sunday) has not seen. Held from each evening on its
    owner's clock (`zone`) until its night ends, never into its person's day (where a stop may meet work they
    start); stopped in the day and started before its evening. None once a weekday night of it was watched (its
    nights are then `night_work`'s) or its person's day work was seen (a person's machine: its work comes with
    its person)."""
    clock = ZoneInfo(zone)
    began = work_starts(quarters)
    if any(NIGHT_ENDS <= b.astimezone(clock).time() < EVENING for b in on_its_gpus(began, quarters)):
        return None
    known = {q.at for q in quarters if q.busy is not None}
    if not known:
        return None
    first = min(known)
    day = first.astimezone(clock).date()
    while (ends := datetime.combine(day + timedelta(days=1), NIGHT_ENDS, tzinfo=clock)) <= now:
        evening = datetime.combine(day, EVENING, tzinfo=clock)
        if day.weekday() < 5 and evening >= first:
            quarters_in = int((ends - evening) / QUARTER)
            seen = sum(1 for k in range(quarters_in) if (evening + k * QUARTER).astimezone(UTC) in known)
            if seen >= WATCHED * quarters_in:
                return None
        day += timedelta(days=1)
    whole_night = datetime.combine(date(2000, 1, 2), NIGHT_ENDS) - datetime.combine(date(2000, 1, 1), EVENING)
    return NightWork(zone, (), timedelta(0), whole_night - HOLD_AFTER, max(began, default=None))


def on_its_gpus(began: Sequence[datetime], quarters: Sequence[Quarter], *, cpu_alone: bool = False) -> list[datetime]:
    """The starts of work (`began`, quarter-hours) whose work reached its GPUs before it paused: one busy, or its
    memory held. A person's day on a GPU machine does; the system's own timers never do (apt, snapd: a core for
    minutes a few times a day, at times a cluster of them half an hour long, which the CPU alone calls work). A
    machine without GPU metrics shows none (`cpu_alone`: every start, its CPU being all it has to show). (Work whose
    CPU part pauses before its GPUs start is not counted: a hold kept, never one ended.)"""
    if cpu_alone and all(q.gpu is None for q in quarters):
        return list(began)
    by_time = {q.at: q for q in quarters}
    out = []
    for start in began:
        at = start
        while (quarter := by_time.get(at)) is not None and quarter.busy:
            if quarter.gpu:
                out.append(start)
                break
            at += QUARTER
    return out


def night_work(
    quarters: Sequence[Quarter],
    people: Sequence[datetime],
    now: datetime,
    zone: str,
    *,
    ours: Sequence[datetime] = (),
    blind: bool = True,
    theirs: str | None = None,
    their_hours: Sequence[timedelta] = (),
) -> NightWork | None:
    """Its night work, if any night of the data had such work and fewer than QUIET_NIGHTS nights have passed
    since (`people`: the starts people made; `ours`: costguard's own, before its evening, which leave it
    running for its night as surely as nobody stopping it would; `theirs`: the clock of a person whose work
    comes in their day on it (`persons_day_work`): work begun in their day at about the hours they began theirs
    (`their_hours`, since midnight on their clock) is theirs, not the machine's own)."""
    clock = ZoneInfo(zone)
    known = {q.at: q.busy for q in quarters}
    found: dict[date, list[timedelta]] = {}
    for began in work_starts(quarters):
        local = began.astimezone(clock)
        day = local.date() if local.time() >= EVENING else local.date() - timedelta(days=1)
        evening = datetime.combine(day, EVENING, tzinfo=clock)
        if local.time() < EVENING and local.time() >= NIGHT_ENDS:
            continue  # the day's work: its person's
        if theirs is not None and in_the_day(began, theirs) and _at_their_hour(began, theirs, their_hours):
            continue  # its person's day on their clock, at their hour: their work, whatever this clock calls it
        before = [began - k * QUARTER for k in range(1, int(RUNNING_BEFORE / QUARTER) + 1)]
        brought = any(evening.astimezone(UTC) - 2 * RUNNING_BEFORE <= o <= began for o in ours)
        if not brought and any(known.get(t) is not False for t in before):
            continue  # not running, idle, for the hour before: started for this work
        if any(began - RUNNING_BEFORE <= p <= began for p in people):
            continue  # a person started it
        found.setdefault(day, []).append(local - evening)
    if not found or quiet_since(found, now, clock) >= QUIET_NIGHTS:
        return None
    busy = [q.at for q in quarters if q.busy]
    starts = [after for night in found.values() for after in night]
    return NightWork(zone, tuple(sorted(found)), min(starts), max(starts), max(busy, default=None), blind=blind)


def quiet_since(found: Collection[date], now: datetime, clock: ZoneInfo) -> int:
    """The nights over since the last night of `found` (their evenings' dates), up to QUIET_NIGHTS. Where work was
    seen on the nights of two weekdays or more, only the nights of those weekdays count: a pipeline of the working
    week rests every weekend (Saturday's and Sunday's evenings; a job at 02:00 from Monday to Friday, Friday's and
    Saturday's) and comes back after it. Seen on one weekday's nights alone (a first week's Friday), the weekend's
    nights do not count, unless that weekday is itself a weekend's: its work may be a working week's."""
    worked = {day.weekday() for day in found}
    day, quiet = max(found), 0
    while quiet < QUIET_NIGHTS:
        day += timedelta(days=1)
        if datetime.combine(day + timedelta(days=1), NIGHT_ENDS, tzinfo=clock) > now:
            break
        quiet += _may_be_quiet(day.weekday(), worked)
    return quiet


def _may_be_quiet(weekday: int, worked: set[int]) -> bool:
    """Whether a night of this weekday without work counts as quiet, the weekdays of the nights with work given."""
    if len(worked) >= WEEKLY:
        return weekday in worked
    return weekday < SATURDAY or any(day >= SATURDAY for day in worked)


def on_its_clocks(
    quarters: Sequence[Quarter],
    people: Sequence[datetime],
    now: datetime,
    zones: Sequence[str],
    *,
    ours: Sequence[datetime] = (),
    for_runs: bool = False,
    nothing_unseen: bool = False,
) -> NightWork | None:
    """A machine that cannot answer: its nights read on each clock its jobs may follow (its owner's first, then the
    team's: a box's clock is its owners' or a server's). The clock on which more nights had such work first (the
    first on a tie), and every other clock on which such work was seen with it (`others`): a job on its owner's
    clock and another on the team's each hold it. While no weekday night of it was watched, `unwatched_nights` on
    its owner's clock, or where work of their day was seen there, on the next clock on which that work was not of
    the day (work begun at 13:00 in New York is a Berlin team's evening, and may be its job). A machine a person
    started for work in their day (`persons_day_work`) is theirs: work begun in their day is not read as another
    clock's night work, and its unwatched nights are read on their clock alone; unless its owner keeps it for its
    runs (`for_runs`: their word that it has runs of its own, which their start after a failed one does not undo).
    Its owner's word that nothing runs on it unless a person starts it (`nothing_unseen`) ends the holds of nights
    not yet watched, and its nights are read on its owner's clock alone (no server's job on another clock runs on
    it: work begun at 10:00 in Kolkata is its person's, not 04:30 UTC's); night work its data shows there still
    holds it."""
    if nothing_unseen:
        zones = zones[:1]
    hours = persons_day_work(quarters, people, zones[0]) if zones and not for_runs else ()
    theirs = zones[0] if hours else None
    found = [
        n
        for z in zones
        if (
            n := night_work(
                quarters, people, now, z, ours=ours, theirs=None if z == theirs else theirs, their_hours=hours
            )
        )
        is not None
    ]
    read = zones[:1] if theirs is not None else zones  # a person's machine: their clock's nights alone
    unwatched = None
    if not nothing_unseen:
        unwatched = next((n for z in read if (n := unwatched_nights(quarters, now, z)) is not None), None)
    if not found:
        return unwatched
    first = max(found, key=lambda n: len(n.nights))  # max keeps the first of equals
    # Work seen on a night no weekday night was watched beside (a Sunday's) says nothing of the weekday nights' own:
    # their whole-night hold stays with it (its hold, ending two hours past that work's start, was shorter).
    held = (*(n for n in found if n is not first), *((unwatched,) if unwatched is not None else ()))
    return replace(first, others=held)


def in_the_day(at: datetime, zone: str) -> bool:
    """Whether `at` falls in the day (NIGHT_ENDS to EVENING) on the clock of `zone`."""
    return NIGHT_ENDS <= at.astimezone(ZoneInfo(zone)).time() < EVENING


def persons_day_work(quarters: Sequence[Quarter], people: Sequence[datetime], zone: str) -> tuple[timedelta, ...]:
    """The hours (since midnight on their clock, `zone`) at which a person began work of their day on the machine
    they started for it: work began within RUNNING_BEFORE after a start people made, between NIGHT_ENDS and
    EVENING there; none where they did not. Such a machine's work comes with its person (their Monday's run,
    started at their desk): work begun at about that hour of their day on a later morning, on the machine
    costguard started for the night, is theirs too, and not work of its own on another clock's night (10:00 in
    Kolkata is 04:30 UTC). Work at another hour stays the machine's own: one start at their desk does not make a
    server's 02:00 UTC job theirs (it was stopped into it the next night). Work on its GPUs (`on_its_gpus`; its CPU
    where it sends no GPU metric): a start's own timers (apt's at boot) are not a person's day."""
    clock = ZoneInfo(zone)
    # A quarter-hour is stamped with its beginning: work in the quarter of 05:15 may follow a start at 05:20.
    return tuple(
        _since_midnight(began.astimezone(clock))
        for began in on_its_gpus(work_starts(quarters), quarters, cpu_alone=True)
        if in_the_day(began, zone) and any(began - RUNNING_BEFORE <= p < began + QUARTER for p in people)
    )


def _since_midnight(local: datetime) -> timedelta:
    return timedelta(hours=local.hour, minutes=local.minute)


def _at_their_hour(began: datetime, zone: str, hours: Sequence[timedelta]) -> bool:
    at = _since_midnight(began.astimezone(ZoneInfo(zone)))
    return any(abs(at - hour) <= THEIR_HOUR for hour in hours)


def with_night_work(
    decision: Decision, found: NightWork | None, policy: IdlePolicy, now: datetime, *, may_start: bool
) -> Decision:
    """A warning or a stop of a machine that runs work of its own at night: held from its evening until its
    night's work has run; stopped in the day (or after its night's work), started again before its next evening.
    Where costguard may not start machines, such a machine is not stopped: its evening is never a day away.
    Its nights on other clocks (`others`) are kept as well: held if any holds it, started before the earliest."""
    if found is not None and found.others:
        for night in (replace(found, others=()), *found.others):
            decision = with_night_work(decision, night, policy, now, may_start=may_start)
        return decision
    if found is None or decision.action not in (Action.WARN, Action.STOP) or not decision.will_stop:
        return decision
    said = found.describe()
    decision = replace(decision, unwatched=decision.unwatched or (found.unseen and found.blind))
    stop_at = decision.stop_time(now)
    evening = found.tonight(stop_at)  # the night its stop would fall in
    if evening is not None and (found.last_busy is None or found.last_busy < evening + found.earliest):
        until = found.held_until(evening)
        why = f"it {said}: held until its night's work has run (until {until:%H:%M} UTC at the latest)"
        why += found.cannot_see()
        return replace(decision, action=Action.NONE, reason=why, next_work=said)
    # In the day, or tonight's work has come and the machine idled since for the window: stopped, and started
    # again before its next evening.
    next_evening = found.next_evening(stop_at if evening is None else found.held_until(evening))
    if not may_start:
        why = f"it {said}, and costguard does not start machines again here (LearnedStarts is off){found.cannot_see()}"
        return replace(decision, action=Action.NONE, reason=why, next_work=said)
    start_at = next_evening - timedelta(minutes=policy.schedule_lead_minutes)
    if start_at - stop_at < timedelta(minutes=policy.shortest_stop_minutes):
        why = f"it {said}: its evening, at {next_evening:%H:%M} UTC, is too soon after a stop to pay"
        why += found.cannot_see()
        return replace(decision, action=Action.NONE, reason=why, next_work=said)
    if decision.start_at is not None and decision.start_at <= start_at:
        return decision  # a learned run comes first: started for it, and running for its evening
    return replace(decision, next_work=said, start_at=start_at, start_for=StartFor.RUN, runs=decision.runs or said)


def spared_in_the_morning(decision: Decision, zone: str, now: datetime, team_zone: str = "UTC") -> Decision:
    """A warning or a stop of a machine that cannot answer the check whose stop would fall in its owner's weekday
    morning (MORNING_BEGINS to MORNING_ENDS on `zone`, their clock as Slack says it, else the team's; to EVENING
    for one judged by its CPU alone, `cpu_only`): it waits
    (a warning given stands, promising its stop no sooner than it comes; none is given until the morning is over),
    and is stopped after the morning if still idle. (Two simulated people started their runs at 10:00 in Kolkata
    and 11:10 in Paris, five minutes before such a stop, and lost them.)"""
    if decision.action not in (Action.WARN, Action.STOP) or not decision.will_stop:
        return decision
    clock = zone_named(zone) or zone_named(team_zone) or ZoneInfo("UTC")
    stop_at = decision.stop_time(now)
    local = stop_at.astimezone(clock)
    ends, said = (EVENING, WORKING_DAY) if decision.cpu_only else (MORNING_ENDS, MORNING)
    if local.weekday() >= 5 or not MORNING_BEGINS <= local.time() < ends:
        return decision
    why = f"not stopped in {said} ({clock.key}); {CANNOT_SEE}"
    return replace(decision, action=Action.WAIT, reason=why)
