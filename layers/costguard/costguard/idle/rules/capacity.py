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
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from costguard.core import tags
from costguard.core.keeping import starts_declined
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision, KeptFor, StartFor
from costguard.idle.rules.schedule import Schedule, ScheduleError, parse_schedule

SCARCE = "not stopped in working hours: capacity is scarce"
UNREAD = "whether its type is short of capacity could not be read"
TEAM_HOURS = "weekdays 08:00-19:00"
READY = "might not start again when its owner's day begins"
BEFORE_OWNER = "left running for its run before its owner is back"
EARLIER = timedelta(minutes=45)  # a scarce machine's starts are made this much sooner, to have retries in hand


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


def ready_for_the_day(
    decision: Decision, scarcity: Scarcity | None, instance: Instance, policy: IdlePolicy, now: datetime
) -> Decision:
    """A scarce machine stopped outside its owner's hours: started again before its owner's next working hours
    open (its lead, and sooner), so that the day does not begin with a GPU EC2 has no room for; a learned
    start later than that is brought forward (the machine then runs through the day, and its run). Not where
    its owner turned learned starts off ("Don't start it"), nor where the deployment did: keeping a machine for
    its runs asks for starts before its runs, not for its owner's day."""
    if scarcity is None or decision.action not in (Action.WARN, Action.STOP):
        return decision
    if not decision.will_stop or not policy.learned_starts or starts_declined(instance.tags):
        return decision
    opens = owners_hours(instance, policy.team_timezone).next_start(now)
    start_at = opens - timedelta(minutes=policy.schedule_lead_minutes)
    if decision.start_at is not None and decision.start_at <= start_at:
        return decision  # its learned run comes first: started for it, and kept through the day
    evidence = scarcity.evidence(now)
    said = f"{READY} ({evidence})"
    return replace(decision, start_at=start_at, start_for=StartFor.OWNERS_DAY, next_work=said, scarce=evidence)


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
