"""When costguard starts a machine again, and whether AWS's own record proves what costguard did. Pure:
a machine's record, the times costguard decided at, and the policy in; a yes, a no or a reason out.

A machine costguard stopped starts again only when costguard promised it (its working hours, or a
learned start it announced as `costguard:start-at`), never when its owner stopped it since; what a dead
attempt did (a stop, a start) is proven from EC2's record, with clocks that differ by up to SKEW.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.recurring import LATE, learns
from costguard.idle.rules.schedule import ScheduleError, parse_schedule

# Clocks differ a little: AWS's time of a start or a stop is checked against costguard's time of its decision.
SKEW = timedelta(minutes=2)
# A person who starts a machine again this soon after costguard's stop undid it: they wanted it running (a
# start the next working day, 6 h or more on, is the day's work). Such a machine waits UNDONE_WAIT windows.
UNDONE_WITHIN = timedelta(hours=6)
UNDONE_WAIT = 2
# The minutes a person loses to a cold start: a GPU machine's boot (3 to 10 minutes) and the quarter-hour it
# takes to pick interrupted work up again (priced at `PersonHourUsd`).
COLD_START_MINUTES = 20
# costguard's own start (its start log's time) against EC2's launch time.
OWN_START = timedelta(minutes=10)
# EC2's reason for a stop someone asked for: "User initiated (2026-11-21 14:00:05 GMT)".
_STOPPED = re.compile(r"\((\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (?:GMT|UTC)\)")


def working_hours_start(
    instance: Instance, now: datetime, policy: IdlePolicy, *, sooner: timedelta = timedelta(0)
) -> datetime | None:
    """When the working hours this stopped machine is to be started for open, if it is to be started now:
    the opening is within the lead (`sooner` added for a scarce machine), and the machine was not started
    for it already (by costguard, or its owner, who may have stopped it since: once per window, a start its
    owner undid is not made again)."""
    lead = timedelta(minutes=policy.schedule_lead_minutes) + sooner
    try:
        opens = parse_schedule(instance.tags[tags.SCHEDULE]).next_start(now)
    except ScheduleError:
        return None
    if opens - now > lead or instance.launch_time >= opens - lead - SKEW:
        return None
    return opens


def window_to_retry(
    instance: Instance, now: datetime, policy: IdlePolicy, *, sooner: timedelta = timedelta(0)
) -> datetime | None:
    """The opening of the working hours this stopped machine is inside, if nobody has started it for them:
    a start then is a retry, made only where costguard's own start for them was refused."""
    lead = timedelta(minutes=policy.schedule_lead_minutes) + sooner
    try:
        opened = parse_schedule(instance.tags[tags.SCHEDULE]).opened(now)
    except ScheduleError:
        return None
    if opened is None or instance.launch_time >= opened - lead - SKEW:
        return None
    return opened


def window_close(instance: Instance, opens: datetime) -> datetime:
    """When the working-hours window that opens at `opens` closes (a schedule unread since: 8 hours on)."""
    try:
        return parse_schedule(instance.tags[tags.SCHEDULE]).closes(opens)
    except (KeyError, ScheduleError):
        return opens + timedelta(hours=8)


def costguards_stop(instance: Instance) -> datetime | None:
    """When costguard stopped this stopped machine, if its last stop was costguard's: its stopped-at is after
    its last start (a machine someone started and stopped again since carries costguard's old stopped-at)."""
    stopped_at = formatting.parse_time(instance.tags.get(tags.STOPPED_AT))
    return stopped_at if stopped_at is not None and stopped_at >= instance.launch_time else None


def last_try(start_at: datetime, policy: IdlePolicy, until: datetime | None = None) -> datetime:
    """The last time a start promised for `start_at` is still made: LATE past the run it is for, due its lead
    after `start_at`, or after `until` (the start of the run a start made before it is for), where later."""
    return max(start_at, until or start_at) + timedelta(minutes=policy.schedule_lead_minutes) + LATE


def made_for(
    instance: Instance,
    start_at: datetime,
    policy: IdlePolicy,
    *,
    sooner: timedelta = timedelta(0),
    until: datetime | None = None,
) -> bool:
    """The machine's last start is the learned start its start-at promised: after costguard's stop, and
    from the start time on (`sooner` for a scarce machine) while the run could still be met (`until`: the start
    of the run a start made before it is for, where that is later)."""
    stopped_at = formatting.parse_time(instance.tags.get(tags.STOPPED_AT))
    latest = last_try(start_at, policy, until) + SKEW
    return (
        stopped_at is not None
        and stopped_at < instance.launch_time
        and start_at - sooner - SKEW <= instance.launch_time <= latest
        and not for_working_hours(instance, policy, sooner=sooner)
    )


def for_working_hours(instance: Instance, policy: IdlePolicy, *, sooner: timedelta = timedelta(0)) -> bool:
    """The machine's last start fell in the lead of its working hours: the working-hours start (recorded as
    such), even where a learned start was due at the same time."""
    try:
        opens = parse_schedule(instance.tags.get(tags.SCHEDULE, "")).next_start(instance.launch_time - SKEW)
    except ScheduleError:
        return False
    return opens - instance.launch_time <= timedelta(minutes=policy.schedule_lead_minutes) + sooner + SKEW


def learned_start_refused(
    instance: Instance, start_at: datetime | None, now: datetime, policy: IdlePolicy, *, until: datetime | None = None
) -> str:
    """Why a stopped machine's start-at is not honoured, or "": only costguard's own stop, not undone since,
    only while the run can be met (`until`: the start of the run a start made before it is for), and not on a
    machine whose owner turned learned starts off (unless they keep it for its runs) or tagged it exempt
    (costguard then leaves it alone, starts included)."""
    if start_at is None:
        return f"{tags.START_AT}={instance.tags.get(tags.START_AT, '')!r} is not a time"
    if not learns(instance, policy):
        return "learned starts are off for it"
    if tags.EXEMPT in instance.tags:
        return "exempt: costguard leaves it alone"
    stopped_at = costguards_stop(instance)
    if stopped_at is None:
        return "costguard did not make its last stop: someone started it since"
    if start_at <= stopped_at:
        return "the start time is from before its stop"
    if now > last_try(start_at, policy, until):
        return f"its run was due at {max(start_at, until or start_at):%H:%M} UTC: too late to start it for that"
    return ""


def still_refused(
    listed: Instance,
    current: Instance | None,
    start_at: datetime,
    now: datetime,
    policy: IdlePolicy,
    *,
    until: datetime | None = None,
) -> str:
    """Why the start the sweep's listing allowed is not made after all, as the machine is now, or ""."""
    if current is None:
        return "gone"
    if current.state != "stopped":
        return f"{current.state}: started by someone else"
    if current.tags.get(tags.START_AT) != listed.tags.get(tags.START_AT):
        return f"its {tags.START_AT} changed since the sweep listed it"
    return learned_start_refused(current, start_at, now, policy, until=until)


def started_after(instance: Instance | None, decided: datetime) -> bool:
    """AWS's record says the machine was started after a start decided then (EC2 gives a machine a new
    launch time at each start, and keeps it once stopped)."""
    return instance is not None and instance.launch_time >= decided - SKEW


def stopped_since(instance: Instance) -> datetime | None:
    """When the machine's last stop was asked for, from EC2's StateTransitionReason; None if it does not say."""
    found = _STOPPED.search(instance.state_reason)
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) if found else None


def proves_stop(instance: Instance | None, *, warned: datetime, decided: datetime, key: str) -> bool:
    """AWS's own record says that the stop decided at `decided`, for the warning of `warned`, happened (not
    another stop, and not none). `key`: the stop's time as costguard writes it in `costguard:stopped-at`."""
    if instance is None:
        return False  # gone: nothing left to tell about
    stopped_at = instance.tags.get(tags.STOPPED_AT, "")
    written = formatting.parse_time(stopped_at)
    if written is not None and written >= warned:  # a stop of this warning's, recorded on the machine
        return stopped_at == key
    if instance.state in ("stopping", "stopped"):
        since = stopped_since(instance)
        return since is None or since >= decided - SKEW
    # Running again: started after the stop was decided (EC2 gives a machine a new launch time at each
    # start), so the stop happened and someone started it since.
    return instance.state in ("pending", "running") and instance.launch_time > decided


def undone_stop(instance: Instance, ours: Iterable[datetime], policy: IdlePolicy) -> datetime | None:
    """When costguard's stop was, if this running machine's person undid it: started again within UNDONE_WITHIN
    of costguard's stop (its stopped-at), by someone else than costguard (not a start its start log holds,
    `ours`, nor its working hours' opening)."""
    stopped_at = formatting.parse_time(instance.tags.get(tags.STOPPED_AT))
    launched = instance.launch_time
    if stopped_at is None or not stopped_at < launched <= stopped_at + UNDONE_WITHIN:
        return None
    if any(abs(launched - t) <= OWN_START for t in ours) or for_working_hours(instance, policy):
        return None
    return stopped_at


def cold_start_usd(policy: IdlePolicy) -> float:
    """What a person's cold start costs: COLD_START_MINUTES of their time (a data scientist costs more than the
    machine)."""
    return COLD_START_MINUTES / 60 * policy.person_hour_usd


def held_after_undo(
    decision: Decision,
    instance: Instance,
    stopped_at: datetime | None,
    policy: IdlePolicy,
    now: datetime,
    *,
    usd_per_hour: float | None = None,
) -> Decision:
    """A warning (or a stop on one) of a machine whose person undid costguard's stop waits until the machine has
    run UNDONE_WAIT windows since: the person who keeps starting it again is not stopped again at once (each
    boot a person waits for costs more than the machine's idle hour). A machine whose hour (`usd_per_hour`, its
    list price) costs less waits longer: until its hours since their start have cost what their cold start cost.
    This is the ski rental's rule: whether the person comes back is not known; waiting for the break-even costs at
    most one cold start more than the choice hindsight would make, and where they do come back, at most twice it."""
    if stopped_at is None or decision.action not in (Action.WARN, Action.STOP):
        return decision
    window = UNDONE_WAIT * timedelta(minutes=policy.window_minutes)
    cold = cold_start_usd(policy)
    pays = timedelta(hours=cold / usd_per_hour) if usd_per_hour and cold > 0 else timedelta(0)
    until = instance.launch_time + max(window, pays)
    if now >= until:
        return decision
    after = formatting.duration(int((instance.launch_time - stopped_at).total_seconds() // 60))
    if pays > window:
        hours = formatting.duration(math.ceil(pays / timedelta(minutes=1)))
        price = f"${cold:,.0f} at ${usd_per_hour:,.2f}/h: {hours}"
        held = f"not warned before its idle hours pay for their cold start ({price})"
    else:
        held = f"not warned in its first {formatting.duration(UNDONE_WAIT * policy.window_minutes)}"
    why = f"its owner started it again {after} after costguard stopped it: {held}"
    return replace(decision, action=Action.NONE, reason=f"{why} (until {until:%H:%M} UTC)")
