"""What the machine's own scheduled jobs (its crontab, systemd timers, at queue: `jobs.py`) do to a warning or
a stop. Pure: the decision, the jobs its check reported, the policy and `now` in; a decision out.

The machine knows its schedule from the first day, where learning it from metrics takes three runs (and
never sees a job that begins by waiting for data). A job that ran inside the idle window just judged ran
while the machine was idle: its runs are not work a stop interrupts (a sync every five minutes, an hourly
report; a systemd timer that repeats within the window, `OnUnitActiveSec=5min`). Of the others, the
nearest run after the stop decides:

- nearer than ShortestStopMinutes after the stop: not stopped ("it runs `train.sh` at 02:00 UTC (its
  crontab), too soon after a stop at 01:00 UTC to pay");
- else stopped and started again ScheduleLeadMinutes before it, as a learned start (the `costguard:start-at`
  promise, the Don't start it button), unless a learned pattern already starts it sooner;
- where costguard may not start machines (`LearnedStarts=false`): not stopped within a day before a job
  that would find it stopped; a job further off than a day does not hold the stop;
- where its owner turned costguard's starts off for this machine (Don't start it, `learned-start=off`): the
  owner's word stands, stopped as any other and not started.

A machine its owner keeps for its runs (`costguard:keep-for-runs`, core/keeping.py) is one costguard may start
and whose starts are not declined, whatever the deployment's LearnedStarts and its `learned-start` say
(recurring.learns): held before a job too near, else stopped and started before it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta

from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision, KeptFor, StartFor
from costguard.idle.rules.jobs import Job, MachineJobs, Upcoming, next_run

WHERE = {"cron": "crontab", "timer": "systemd timer", "at": "at queue"}
HELD_FOR = timedelta(days=1)  # where costguard may not start machines: how far ahead a job holds a stop
SETTLE = timedelta(minutes=15)  # a run this recent may not show yet: not its process at the check, nor its metrics
# A monotonic timer's repetition as systemd normalises it: "OnUnitActiveUSec=5min", "OnBootUSec=1h 30min".
_MONOTONIC = re.compile(r"On(?:Unit(?:Active|Inactive)|Boot|Startup|Active)USec=([0-9a-z ]+)")
_SPAN = re.compile(r"([0-9]+)\s*(us|ms|s|min|h|d|w)")
_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def with_jobs(
    decision: Decision,
    jobs: MachineJobs | None,
    policy: IdlePolicy,
    now: datetime,
    *,
    may_start: bool,
    declined: bool = False,
) -> Decision:
    """A warning or a stop in the light of the machine's own scheduled jobs (None: not reported). `may_start`:
    costguard may start machines (learned starts on for the deployment); `declined`: its owner turned
    costguard's starts off for this machine."""
    if jobs is not None and decision.kept_for is KeptFor.ITS_HOOK and not decision.runs:
        # idle but for its keep-alive hook: its jobs are the runs a keep for them would hold it for (offers.py)
        due = next_due(jobs, now, now, judged_window(decision, policy, now))
        return replace(decision, runs=describe(due)) if due is not None else decision
    if jobs is None or declined or decision.action not in (Action.WARN, Action.STOP) or not decision.will_stop:
        return decision
    stop_at = decision.stop_time(now)
    due = next_due(jobs, stop_at, now, judged_window(decision, policy, now))
    if due is None:
        return decision
    said = describe(due)
    if due.when - stop_at < timedelta(minutes=policy.shortest_stop_minutes):
        why = f"it {said}, too soon after a stop at {stop_at:%H:%M} UTC to pay"
        return replace(decision, action=Action.NONE, reason=why, next_work=said)
    if not may_start:
        if due.when - stop_at > HELD_FOR:
            return replace(decision, runs=decision.runs or said)  # known: "Keep it for its runs" is offered
        why = f"it {said}, and costguard does not start machines again here (LearnedStarts is off)"
        return replace(decision, action=Action.NONE, reason=why, next_work=said)
    start_at = due.when - timedelta(minutes=policy.schedule_lead_minutes)
    if decision.start_at is not None and decision.start_at <= start_at:
        return decision  # a learned run comes first: started for it, and running for the job
    return replace(decision, next_work=said, start_at=start_at, start_for=StartFor.RUN, runs=said)


def judged_window(decision: Decision, policy: IdlePolicy, now: datetime) -> timedelta:
    """The idle span the decision judged: from the start of its data to `now` (a shorter one where certain
    idleness cut the wait), else the idle window."""
    since = decision.judgement.judged_from if decision.judgement is not None else None
    if since is None or since >= now:
        return timedelta(minutes=policy.window_minutes)
    return now - since


def next_due(jobs: MachineJobs, after: datetime, now: datetime, window: timedelta) -> Upcoming | None:
    """The nearest run after `after` of a job that is work: not one that ran inside the idle window that
    ends `now` (the machine stayed idle through it), nor a monotonic timer that repeats within it. A run that
    fired within SETTLE before `now` is due now: its work may not show yet (a job that starts by waiting)."""
    upcoming = []
    for job in jobs.jobs:
        if _repeats_within(job, window):
            continue
        ran = next_run(job, now - window, jobs.zone)
        if ran is not None and ran <= now - SETTLE:
            continue  # it ran while the machine was judged idle: not work a stop interrupts
        if ran is not None and ran <= now:
            again = next_run(job, ran, jobs.zone)
            if again is None or again - ran > window:  # not a job that runs in every idle window (a poll)
                upcoming.append(Upcoming(ran, job))
            continue
        first = next_run(job, after, jobs.zone)
        if first is not None:
            upcoming.append(Upcoming(first, job))
    return min(upcoming, key=lambda u: u.when, default=None)


def _repeats_within(job: Job, window: timedelta) -> bool:
    """A systemd timer whose monotonic repetition is shorter than `window` (its next elapse alone is known)."""
    for found in _MONOTONIC.finditer(job.schedule):
        seconds = sum(int(n) * _UNIT[unit] for n, unit in _SPAN.findall(found.group(1)))
        if 0 < seconds < window.total_seconds():
            return True
    return False


def describe(due: Upcoming) -> str:
    """'runs `nightly.sh` at 02:00 UTC (its crontab)': what follows "It" in a message (the program's name
    only, as the check reports it)."""
    job: Job = due.job
    what = f"`{job.command}`" if job.command else "a scheduled job"
    return f"runs {what} at {due.when:%H:%M} UTC (its {WHERE.get(job.kind.value, 'schedule')})"
