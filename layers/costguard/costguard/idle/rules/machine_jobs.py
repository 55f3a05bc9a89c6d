"""What the machine's own scheduled jobs (its crontab, systemd timers, at queue: `jobs.py`) do to a warning or
a stop. Pure: the decision, the jobs its check reported, the policy and `now` in; a decision out.

The machine knows its schedule from the first day, where learning it from metrics takes three runs (and
never sees a job that begins by waiting for data). A job that runs more often than the idle window ran
while the machine was being judged idle: its runs are not work a stop interrupts (a sync every five
minutes, an hourly report). Of the others, the nearest run after the stop decides:

- nearer than ShortestStopMinutes after the stop: not stopped ("it runs `train.sh` at 02:00 UTC (its
  crontab), too soon after a stop at 01:00 UTC to pay");
- else stopped and started again ScheduleLeadMinutes before it, as a learned start (the `costguard:start-at`
  promise, the Don't start it button), unless a learned pattern already starts it sooner;
- where costguard may not start the machine (learned starts off for it, or for the deployment): not stopped
  before a job that would find it stopped.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.jobs import Job, MachineJobs, Upcoming, next_run

WHERE = {"cron": "crontab", "timer": "systemd timer", "at": "at queue"}


def with_jobs(
    decision: Decision, jobs: MachineJobs | None, policy: IdlePolicy, now: datetime, *, may_start: bool
) -> Decision:
    """A warning or a stop in the light of the machine's own scheduled jobs (None: not reported)."""
    if jobs is None or decision.action not in (Action.WARN, Action.STOP) or not decision.will_stop:
        return decision
    stop_at = decision.stop_after if decision.action is Action.WARN and decision.stop_after else now
    due = next_due(jobs, stop_at, timedelta(minutes=policy.window_minutes))
    if due is None:
        return decision
    said = describe(due)
    if due.when - stop_at < timedelta(minutes=policy.shortest_stop_minutes):
        why = f"it {said}, too soon after a stop at {stop_at:%H:%M} UTC to pay"
        return replace(decision, action=Action.NONE, reason=why, learned=said)
    if not may_start:
        why = f"it {said}, and costguard does not start it again (learned starts are off for it)"
        return replace(decision, action=Action.NONE, reason=why, learned=said)
    start_at = due.when - timedelta(minutes=policy.schedule_lead_minutes)
    if decision.start_at is not None and decision.start_at <= start_at:
        return decision  # a learned run comes first: started for it, and running for the job
    return replace(decision, learned=said, start_at=start_at)


def next_due(jobs: MachineJobs, after: datetime, window: timedelta) -> Upcoming | None:
    """The nearest run after `after` of a job that is work: not one that runs more often than `window`."""
    upcoming = []
    for job in jobs.jobs:
        first = next_run(job, after, jobs.zone)
        if first is None:
            continue
        second = next_run(job, first, jobs.zone)
        if second is not None and second - first < window:
            continue  # it ran while the machine was judged idle: not work a stop interrupts
        upcoming.append(Upcoming(first, job))
    return min(upcoming, key=lambda u: u.when, default=None)


def describe(due: Upcoming) -> str:
    """'runs `nightly.sh` at 02:00 UTC (its crontab)': what follows "It" in a message (the program's name
    only, as the check reports it)."""
    job: Job = due.job
    what = f"`{job.command}`" if job.command else "a scheduled job"
    return f"runs {what} at {due.when:%H:%M} UTC (its {WHERE.get(job.kind.value, 'schedule')})"
