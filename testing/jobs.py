"""The machine's scheduled jobs seen whole, as the tests of the activity check read them: the nearest run of
any job, and how many jobs the answer had no room for. The library asks only when each job runs next
(costguard.idle.rules.jobs.next_run)."""

from __future__ import annotations

from datetime import datetime

from costguard.idle.rules.jobs import MachineJobs, Upcoming, next_run


def next_job(jobs: MachineJobs, after: datetime) -> Upcoming | None:
    """The nearest run of a job that counts, strictly after `after` (an aware time), and its job; None when
    no job's next run is known. Of two at the same time, the one the check listed first."""
    upcoming = []
    for job in jobs.jobs:
        when = next_run(job, after, jobs.zone)
        if when is not None:
            upcoming.append(Upcoming(when, job))
    return min(upcoming, key=lambda u: u.when, default=None)


def cut(jobs: MachineJobs) -> int:
    """Jobs that count which the answer had no room for."""
    return max(0, jobs.found - len(jobs.jobs))
