"""Scarce capacity in the idle stopper's decisions. Pure.

A machine of a type EC2 lately refused to start in its zone (`core/scarcity.py`) may not start again once
stopped, and a person who cannot get their GPU back loses more than its idle hours cost. So, inside its
owner's working hours, such a machine is not stopped on the idle rule: its owner hears once a day why, with
the evidence, and may stop it. Outside them it is warned and stopped as any other, and promised a start
before its owner's next working hours. Its starts (working hours, learned, that one) are made earlier, and
a start refused for capacity is tried again at each sweep until the machine runs or the work it was for
has passed.

An owner's working hours are the machine's `costguard:schedule` when it has one (inside it nothing is
stopped anyway), else the team's: weekdays 08:00-19:00 in the team's time zone. Nor is it stopped when its
automated run (a crontab's, or learned work) comes before its owner's next working hours: nobody would be
there to start it again if EC2 refused.

Its person's weekdays (`workdays`: the last two weeks, on its owner's clock) shape the readying. A machine whose
person began work on it no sooner than a time inside its owner's hours on each of them is readied EARLY before
that time (`for_its_person`), not at its owner's opening. One nobody works on in its owner's hours, with a run
of its own after them, is not readied for a day nobody works on it: its start for that run is made BEFORE_CLOSE
before its owner's day ends, and tried again until the run (`for_its_night`). And a machine costguard readied
that nobody has used, LATE past the latest time its person began work on it on any weekday looked at, is not
spared for the rest of that day (`day_off`): they are not coming, and it is warned and stopped as outside
working hours, readied again for the next day. Readying is never priced against the days its person does not
come: a person who comes on a day they seldom do, and finds EC2 refusing their start, has work that cannot
begin, which the product ranks with a stopped run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from costguard.core import tags
from costguard.core.keeping import starts_declined
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import ActivityCheck
from costguard.idle.rules.arrival import MIN_DAYS, weekdays_looked_at
from costguard.idle.rules.decision import Action, Decision, KeptFor, StartFor
from costguard.idle.rules.recurring import QUARTER, Quarter, work_starts
from costguard.idle.rules.schedule import Schedule, ScheduleError, parse_schedule

SCARCE = "not stopped in working hours: capacity is scarce"
UNREAD = "whether its type is short of capacity could not be read"
TEAM_HOURS = "weekdays 08:00-19:00"
READY = "might not start again when its owner's day begins"
READY_FOR_WORK = "might not start again when its person's work on it begins"
BEFORE_OWNER = "left running for its run before its owner is back"
EARLIER = timedelta(minutes=45)  # a scarce machine's starts are made this much sooner, to have retries in hand
LATE = timedelta(hours=1)  # past the latest time its person began work on it: they are not coming today
EARLY = timedelta(hours=1)  # before the earliest time its person began work on it: readied by then
# weekdays that must agree before a scarce machine's readying moves from its owner's opening: up in its owner's
# hours with no work in them (a machine for its night's runs), or worked on from later in the day (its person's hour)
AGREE_DAYS = 5
BEFORE_CLOSE = timedelta(hours=2)  # a night run's start, made this long before its owner's day ends
NIGHTS_ONLY = "is put to work only by its runs"
AT_NIGHT = "might not start again at night"
NOT_TODAY = "has not been used since costguard started it for its owner's day"
BOOT = timedelta(minutes=30)  # after costguard's start: the machine's own boot-time work, not its person's


@dataclass(frozen=True)
class Workdays:
    """What the last weekdays (`arrival.weekdays_looked_at`, on its owner's clock) say of the work on a machine."""

    began: int  # the weekdays looked at that a start of work on it was seen on, inside its owner's hours
    latest: int | None  # the latest minute of the day (its owner's clock) a day's work on it began, None: none began
    readied_idle: bool  # running since a start costguard's own call made today, and idle since
    zone: str = "UTC"  # the clock its days are counted on: its owner's hours' (its own schedule's, else the team's)
    earliest: int | None = None  # the earliest minute of the day a day's work on it began, None: none began
    seen: int = 0  # weekdays looked at that it was up in its owner's hours, at least for a while
    by_day: int = 0  # the weekdays looked at that it did work inside its owner's hours (its boot-time work aside)


def workdays(
    quarters: Sequence[Quarter],
    now: datetime,
    hours: Schedule,
    *,
    running_at: Iterable[datetime],
    ours: Iterable[datetime],
    booted: Iterable[datetime],
    launched: datetime,
) -> Workdays:
    """The work on a machine over its weekdays, from its last two weeks of quarter-hours on the clock of its
    owner's `hours` (`running_at`: the starts people made; `ours`: the starts costguard's own call made for its
    owner's day; `booted`: every start made for its owner's day, costguard's call or found made; `launched`: its
    last start). Only what falls inside its owner's hours counts: a day's work begins there (its runs at night
    are not its person's day), and a day is looked at only where the machine was up in them (a day it was
    stopped through them says nothing of whether its person would have come). Work in the first BOOT after a
    start for its owner's day is the machine's own (an @reboot warm-up), not its person's: it neither begins their
    day nor uses the machine."""
    zone = str(hours.windows[0].zone)
    clock = ZoneInfo(zone)
    boots = list(booted)
    days = set(weekdays_looked_at(now, clock))
    seen = {q.at.astimezone(clock).date() for q in quarters if q.busy is not None and hours.inside(q.at)} & days
    busy = [q.at for q in quarters if q.busy and not _booting(q.at, boots)]
    by_day = {at.astimezone(clock).date() for at in busy if hours.inside(at)} & days
    began: dict[object, int] = {}
    for start in work_starts(quarters, running_at):
        local = start.astimezone(clock)
        if local.date() in days and hours.inside(start) and not _booting(start, boots):
            began[local.date()] = min(began.get(local.date(), 24 * 60), local.hour * 60 + local.minute)
    today = now.astimezone(clock).date()
    ours_today = any(
        at <= launched <= at + timedelta(minutes=10) and at.astimezone(clock).date() == today for at in ours
    )
    idle_since = not any(q.busy for q in quarters if q.at + QUARTER > launched and not _booting(q.at, boots))
    latest, earliest = max(began.values(), default=None), min(began.values(), default=None)
    return Workdays(len(began), latest, ours_today and idle_since, zone, earliest, len(seen), len(by_day))


def _booting(at: datetime, booted: Sequence[datetime]) -> bool:
    """Whether `at` (a quarter-hour's start, or a start of work) falls in the first BOOT after a start made for
    its owner's day (a quarter is labelled by its start: the one the start falls in counts)."""
    return any(start - QUARTER < at < start + BOOT for start in booted)


def someone_came(check: ActivityCheck | None) -> bool:
    """Whether the machine's own check saw a person on it: a session, or a notebook kernel (one started since
    costguard's start means they came, whatever the metrics show)."""
    report = check.report if check is not None else None
    return report is not None and bool(report.sessions or report.kernels or report.kernel_processes)


def day_off(days: Workdays | None, now: datetime) -> str:
    """Why its person is not coming today, or "": costguard readied it today and nobody has used it since, LATE
    past the latest time work on it began on any weekday looked at (a start of work seen on at least MIN_DAYS of
    them), on its owner's clock."""
    if days is None or days.latest is None or not days.readied_idle or days.began < MIN_DAYS:
        return ""
    local = now.astimezone(ZoneInfo(days.zone))
    if local.weekday() >= 5 or local.hour * 60 + local.minute < days.latest + LATE / timedelta(minutes=1):
        return ""
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    began = (midnight + timedelta(minutes=days.latest)).astimezone(UTC)  # said in UTC: each reader sees their own
    return (
        f"{NOT_TODAY}, and work on it began by {began:%H:%M} UTC on each of the {days.began} weekdays it was worked on"
    )


def owners_hours(instance: Instance, team_timezone: str) -> Schedule:
    """Its owner's working hours: the machine's own, or the team's."""
    try:
        return parse_schedule(instance.tags[tags.SCHEDULE])
    except (KeyError, ScheduleError):
        pass
    try:
        return parse_schedule(f"{TEAM_HOURS} {team_timezone}")
    except ScheduleError:
        return parse_schedule(f"{TEAM_HOURS} UTC")


def working_now(instance: Instance, now: datetime, team_timezone: str) -> bool:
    """Whether its owner is at work now: inside the machine's own working hours, or the team's."""
    return owners_hours(instance, team_timezone).inside(now)


def ready_for_the_day(  # noqa: PLR0917
    decision: Decision,
    scarcity: Scarcity | None,
    instance: Instance,
    policy: IdlePolicy,
    now: datetime,
    days: Workdays | None = None,
) -> Decision:
    """A scarce machine stopped outside its owner's hours: started again before its owner's next working hours
    open (its lead, and sooner), so that the day does not begin with a GPU EC2 has no room for; a learned
    start later than that is brought forward (the machine then runs through the day, and its run). Where its
    person began work on it no sooner than a time inside those hours on each of the weekdays looked at (on at
    least AGREE_DAYS of them), it is started EARLY before that time instead (`for_its_person`); where nobody
    works on it in those hours, with a run of its own due the night after them, for that run (`for_its_night`).
    Not where its owner turned learned starts off ("Don't start it"), nor where the deployment did: keeping a
    machine for its runs asks for starts before its runs, not for its owner's day."""
    if scarcity is None or decision.action not in (Action.WARN, Action.STOP):
        return decision
    if not decision.will_stop or not policy.learned_starts or starts_declined(instance.tags):
        return decision
    hours = owners_hours(instance, policy.team_timezone)
    opens = hours.next_start(now)
    closes = hours.closes(opens)
    if days is not None and nights_only(days) and decision.start_for is StartFor.RUN and decision.start_at:
        night = for_its_night(decision, scarcity, days, hours, opens, now)
        if night.start_for is StartFor.NIGHTS_RUN or decision.start_at < closes:
            return night  # started for its night's run, or its run comes first
    arrives = for_its_person(days, opens, closes)
    start_at = (arrives or opens) - timedelta(minutes=policy.schedule_lead_minutes)
    if decision.start_at is not None and decision.start_at <= start_at:
        return decision  # its learned run comes first: started for it, and kept through the day
    evidence = scarcity.evidence(now)
    said = f"{READY} ({evidence})"
    if arrives is not None and days is not None:
        said = f"{READY_FOR_WORK} (by {arrives + EARLY:%H:%M} UTC on each of the {days.began} weekdays it was "
        said += f"worked on; {evidence})"
    return replace(decision, start_at=start_at, start_for=StartFor.OWNERS_DAY, next_work=said, scarce=evidence)


def nights_only(days: Workdays) -> bool:
    """Whether nobody works on the machine in its owner's hours: up in them on at least AGREE_DAYS of the last
    weekdays looked at, it did no work in them on any."""
    return days.seen >= AGREE_DAYS and days.by_day == 0


def for_its_night(  # noqa: PLR0917
    decision: Decision, scarcity: Scarcity, days: Workdays, hours: Schedule, opens: datetime, now: datetime
) -> Decision:
    """A scarce machine nobody works on in its owner's `hours`, stopped outside them, with a run of its own to
    come: not readied for a day nobody works on it. A run due before their next working hours (opening at `opens`)
    close keeps its own start (one due before they open is left running for, `for_its_run`; one inside them is
    started while its owner is at work). One due after they close, before they open again, is started
    BEFORE_CLOSE before they close (not before they open), so that a start EC2 refuses is told while someone can
    act on it, with the hours to the run to try again. One due later than that (a weekly run) is left as it is:
    the machine is then readied for its owner's day, as any is."""
    closes = hours.closes(opens)
    if decision.start_at is None or decision.start_at < closes or decision.start_at >= hours.next_start(closes):
        return decision
    start_at = max(opens, closes - BEFORE_CLOSE)
    if start_at <= now:
        return decision
    evidence = scarcity.evidence(now)
    said = (
        f"{NIGHTS_ONLY} ({decision.next_work}), none of it in its owner's hours on the last {days.seen} weekdays, and "
        f"{AT_NIGHT} ({evidence})"
    )
    run_at = decision.start_at
    return replace(
        decision, start_at=start_at, start_for=StartFor.NIGHTS_RUN, run_at=run_at, next_work=said, scarce=evidence
    )


def for_its_person(days: Workdays | None, opens: datetime, closes: datetime) -> datetime | None:
    """When its person's working day on it begins, EARLY before the earliest time their work on it began on the
    weekdays looked at, on the day its owner's hours open at `opens`; None where that is not known (fewer than
    AGREE_DAYS days), not after `opens`, or not before `closes` (their day is its owner's hours then)."""
    if days is None or days.earliest is None or days.began < AGREE_DAYS:
        return None
    day = opens.astimezone(ZoneInfo(days.zone)).replace(hour=0, minute=0, second=0, microsecond=0)
    arrives = day + timedelta(minutes=days.earliest) - EARLY
    return arrives.astimezone(UTC) if opens < arrives < closes else None


def for_its_run(
    decision: Decision, scarcity: Scarcity | None, instance: Instance, policy: IdlePolicy, now: datetime
) -> Decision:
    """A scarce machine whose automated run (its crontab's, or its learned work) is due before its owner's next
    working hours: not stopped. A start EC2 refused in the night would leave the run without its machine, with
    nobody there to start it again; a run is what scarce capacity idles for. Its owner hears why once a day,
    and may stop it, its run's start kept (a person's Stop anyway keeps the promise). (The starts costguard makes
    for its owner's day, or its person's, are not such runs.)"""
    if scarcity is None or decision.start_at is None or decision.action not in (Action.WARN, Action.STOP):
        return decision
    if not decision.will_stop or decision.start_for is not StartFor.RUN:
        return decision
    opens = owners_hours(instance, policy.team_timezone).next_start(now)
    if decision.start_at >= opens - timedelta(minutes=policy.schedule_lead_minutes):
        return decision
    evidence = scarcity.evidence(now)
    why = f"{BEFORE_OWNER}: {decision.next_work} ({evidence})"
    return replace(left_running(decision, why, evidence), kept_for=KeptFor.RUN_BEFORE_OWNER)


def held_for_run(decision: Decision) -> str:
    """The run a scarce machine is left running for (as the messages say it), or "" when it is not."""
    return decision.next_work if decision.kept_for is KeptFor.RUN_BEFORE_OWNER else ""


def spared(decision: Decision, scarcity: Scarcity | None, *, working: bool, now: datetime) -> Decision:
    """The decision, unless it would warn of or make a stop of a scarce machine while its owner works: then
    none, or, where it was warned, its warning cleared; with the evidence to tell."""
    if decision.action not in (Action.WARN, Action.WAIT, Action.STOP) or not decision.will_stop:
        return decision
    if scarcity is None or not working:
        return decision
    evidence = scarcity.evidence(now)
    return left_running(decision, f"{SCARCE} ({evidence})", evidence)


def left_running(decision: Decision, why: str, evidence: str) -> Decision:
    """A scarce machine not stopped after all: none, or, where it was warned, its warning cleared; with the
    evidence to tell its owner."""
    warned = decision.action is not Action.WARN or decision.told
    return replace(
        decision,
        action=Action.CLEAR_WARNING if warned else Action.NONE,
        reason=why,
        scarce=evidence,
        will_stop=False,
        stop_after=None,
    )


def unread(decision: Decision) -> Decision:
    """A stop while its owner works, when whether its type is scarce could not be read: not in this sweep
    (missing evidence is never a reason to stop a machine that might not start again)."""
    if decision.action is not Action.STOP:
        return decision
    return replace(decision, action=Action.NONE, reason=f"not stopped in this sweep: {UNREAD}")


def too_soon(decision: Decision, scarcity: Scarcity | None, shortest_stop: timedelta, now: datetime) -> Decision:
    """A scarce machine's stop between runs of its learned work: its start made sooner, the stop must still
    be worth it (ShortestStopMinutes between the stop and the start)."""
    if scarcity is None or decision.start_at is None or decision.action not in (Action.WARN, Action.STOP):
        return decision
    stop_at = decision.stop_time(now)
    start = decision.start_at - EARLIER
    if start - stop_at >= shortest_stop:
        return decision
    why = f"its next run needs it started at {start:%H:%M} UTC ({scarcity.evidence(now)}): too soon after a stop"
    return replace(decision, action=Action.NONE, reason=f"{decision.next_work}; {why}")


def tells_scarce(decision: Decision) -> bool:
    """An idle machine left running because it might not start again: said to its owner once a day."""
    return bool(decision.scarce) and decision.action in (Action.NONE, Action.CLEAR_WARNING)


def sooner(scarce: bool) -> timedelta:
    """How much sooner than its lead a machine's start is made."""
    return EARLIER if scarce else timedelta(0)
