"""A machine its owner keeps for its runs (`costguard:keep-for-runs`): stopped when idle, never just before a
known run, and started before it, even where costguard's starts are otherwise off (for the deployment, or by
its owner's `costguard:learned-start=off`). Its runs unknown, it is stopped as any other. Pure rules."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from costguard.core import formatting, tags
from costguard.core.keeping import starts_declined
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.jobs import Job, JobKind, MachineJobs
from costguard.idle.rules.machine_jobs import with_jobs
from costguard.idle.rules.recurring import Learned, Pattern, learns, unpromised, with_pattern
from costguard.idle.rules.restarts import learned_start_refused

AFTERNOON = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)  # a Monday
NIGHTLY = MachineJobs((Job(JobKind.CRON, "0 2 * * *", "nightly.sh", "ana"),), zone="UTC", found=1)
WITHOUT_STARTS = IdlePolicy(learned_starts=False)  # LearnedStarts=false: costguard starts no machine for its runs
KEPT = {tags.KEEP_FOR_RUNS: tags.ON}
DECLINED = {tags.LEARNED_START: tags.OFF}


def machine(tagged: dict[str, str], state: str = "running", launched: datetime = AFTERNOON) -> Instance:
    return Instance("i-0123456789abcdef0", "eu-west-1", "g5.xlarge", state, launched - timedelta(days=1), tags=tagged)


def stop(at: datetime = AFTERNOON) -> Decision:
    return Decision("i-0123456789abcdef0", Action.STOP, "idle for 120 min", stop_after=at)


def scheduled(instance: Instance, policy: IdlePolicy, at: datetime = AFTERNOON) -> Decision:
    """What the sweep's consultation decides of a stop with the machine's jobs (idle/reads/plan.py)."""
    may_start, declined = learns(instance, policy), starts_declined(instance.tags)
    return with_jobs(stop(at), NIGHTLY, policy, at, may_start=may_start, declined=declined)


@pytest.mark.parametrize(
    ("policy", "tagged"),
    [(WITHOUT_STARTS, KEPT), (IdlePolicy(), KEPT | DECLINED), (WITHOUT_STARTS, KEPT | DECLINED)],
    ids=["learned starts off for the deployment", "learned starts off by its owner", "both"],
)
def test_a_machine_kept_for_its_runs_is_stopped_in_the_afternoon_and_started_before_its_nightly_job(
    policy: IdlePolicy, tagged: dict[str, str]
) -> None:
    decided = scheduled(machine(tagged), policy)
    assert decided.action is Action.STOP
    assert decided.start_at == datetime(2026, 11, 24, 1, 45, tzinfo=UTC)  # ScheduleLeadMinutes before 02:00
    assert decided.runs == decided.next_work == "runs `nightly.sh` at 02:00 UTC (its crontab)"


def test_without_the_tag_the_same_machines_are_not_started_for_their_job() -> None:
    # LearnedStarts off: held within a day of the job (no stop at 15:00 before a 02:00 job); owner's off: stopped
    assert scheduled(machine({}), WITHOUT_STARTS).action is Action.NONE
    declined = scheduled(machine(DECLINED), IdlePolicy())
    assert (declined.action, declined.start_at) == (Action.STOP, None)


def test_a_machine_kept_for_its_runs_is_not_stopped_within_the_hold_before_its_job() -> None:
    at = datetime(2026, 11, 24, 0, 45, tzinfo=UTC)  # 75 minutes before 02:00: under ShortestStopMinutes (90)
    decided = scheduled(machine(KEPT), WITHOUT_STARTS, at)
    assert decided.action is Action.NONE
    assert decided.reason == (
        "it runs `nightly.sh` at 02:00 UTC (its crontab), too soon after a stop at 00:45 UTC to pay"
    )


def test_a_machine_kept_for_its_runs_has_its_recurring_work_looked_for_and_its_start_made() -> None:
    stopped = machine(KEPT | DECLINED | {tags.STOPPED_AT: formatting.format_time(AFTERNOON)}, state="stopped")
    start_at = datetime(2026, 11, 24, 1, 45, tzinfo=UTC)
    assert learns(stopped, WITHOUT_STARTS)
    assert learned_start_refused(stopped, start_at, start_at, WITHOUT_STARTS) == ""
    plain = replace(stopped, tags={tags.STOPPED_AT: formatting.format_time(AFTERNOON)})
    assert not learns(plain, WITHOUT_STARTS)
    assert learned_start_refused(plain, start_at, start_at, WITHOUT_STARTS) == "learned starts are off for it"


def test_keep_for_runs_off_is_no_keep_and_exempt_still_outranks_it() -> None:
    assert not learns(machine({tags.KEEP_FOR_RUNS: "off"} | DECLINED), IdlePolicy())
    exempt = machine(KEPT | {tags.EXEMPT: "rig", tags.STOPPED_AT: formatting.format_time(AFTERNOON)}, "stopped")
    start_at = datetime(2026, 11, 24, 1, 45, tzinfo=UTC)
    assert learned_start_refused(exempt, start_at, start_at, IdlePolicy()) == "exempt: costguard leaves it alone"


def test_the_runs_of_a_machine_are_known_where_costguard_does_not_start_it_for_them() -> None:
    # A weekly job, days away, where costguard may not start machines: stopped, and its run named (the warning
    # then offers "Keep it for its runs"); a start it will not make is not promised.
    weekly = MachineJobs((Job(JobKind.CRON, "0 3 * * 0", "weekly.sh", "ana"),), zone="UTC", found=1)
    decided = with_jobs(stop(), weekly, WITHOUT_STARTS, AFTERNOON, may_start=False)
    assert (decided.action, decided.start_at, decided.next_work) == (Action.STOP, None, "")
    assert decided.runs == "runs `weekly.sh` at 03:00 UTC (its crontab)"


def test_learned_recurring_work_is_a_known_run_and_stays_one_when_its_start_cannot_be_promised() -> None:
    pattern = Pattern("UTC", 2 * 60, frozenset(range(7)), 5, "UTC 02:00")
    learned = Learned(pattern, pattern.describe())
    warned = with_pattern(Decision("i-1", Action.WARN, "idle", stop_after=AFTERNOON), learned, IdlePolicy(), AFTERNOON)
    assert warned.runs == "starts work at about 02:00 UTC (5 of the last 7 days)"
    assert unpromised(warned).runs == warned.runs  # no start promised, the run still known
    assert unpromised(warned).start_at is None


def test_a_machine_kept_for_its_runs_with_none_known_is_stopped_as_any_other() -> None:
    decided = with_jobs(stop(), MachineJobs((), zone="UTC", found=0), WITHOUT_STARTS, AFTERNOON, may_start=True)
    assert decided == stop()
    assert with_jobs(stop(), None, WITHOUT_STARTS, AFTERNOON, may_start=True) == stop()
