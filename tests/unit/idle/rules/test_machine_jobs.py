"""What the machine's own scheduled jobs do to a warning or a stop: not stopped before a job too near to
pay, else started again before it; frequent jobs are not work; no start where costguard may not start."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.jobs import Job, JobKind, MachineJobs
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.rules.machine_jobs import with_jobs

POLICY = IdlePolicy()  # window 120 min, shortest stop 90 min, lead 15 min
EVENING = datetime(2026, 11, 23, 20, 0, tzinfo=UTC)  # a Monday


def crontab(*lines: tuple[str, str], zone: str | None = "UTC") -> MachineJobs:
    return MachineJobs(tuple(Job(JobKind.CRON, s, c, "ana") for s, c in lines), zone=zone, found=len(lines))


def stop(at: datetime = EVENING) -> Decision:
    return Decision("i-1", Action.STOP, "idle for 120 min", stop_after=at)


def test_a_nightly_cron_box_is_stopped_and_started_before_its_job_on_the_first_night() -> None:
    decided = with_jobs(stop(), crontab(("0 2 * * *", "nightly.sh")), POLICY, EVENING, may_start=True)
    assert decided.action is Action.STOP
    assert decided.start_at == datetime(2026, 11, 24, 1, 45, tzinfo=UTC)
    assert decided.next_work == "runs `nightly.sh` at 02:00 UTC (its crontab)"


def test_a_job_too_near_to_pay_for_a_stop_keeps_the_machine_up_and_says_why() -> None:
    at = datetime(2026, 11, 24, 1, 0, tzinfo=UTC)
    decided = with_jobs(stop(at), crontab(("0 2 * * *", "nightly.sh")), POLICY, at, may_start=True)
    assert decided.action is Action.NONE
    assert (
        decided.reason == "it runs `nightly.sh` at 02:00 UTC (its crontab), too soon after a stop at 01:00 UTC to pay"
    )


def test_a_warning_is_judged_at_the_time_it_would_stop() -> None:
    warn = Decision("i-1", Action.WARN, "idle", stop_after=datetime(2026, 11, 24, 0, 45, tzinfo=UTC))
    decided = with_jobs(warn, crontab(("0 2 * * *", "nightly.sh")), POLICY, EVENING, may_start=True)
    assert decided.action is Action.NONE  # 75 minutes from the stop to the job


def test_the_job_runs_on_the_machines_clock_and_a_pipeline_that_starts_by_waiting_is_started_before_it() -> None:
    # The pipeline's cron fires at 22:00 Paris time and its job waits for data: the start that matters.
    jobs = crontab(("0 22 * * 1-5", "pipeline"), zone="Europe/Paris")
    at = datetime(2026, 11, 23, 18, 0, tzinfo=UTC)
    decided = with_jobs(stop(at), jobs, POLICY, at, may_start=True)
    assert decided.start_at == datetime(2026, 11, 23, 20, 45, tzinfo=UTC)  # 21:45 in Paris


def test_a_job_more_frequent_than_the_idle_window_is_not_work_a_stop_interrupts() -> None:
    jobs = crontab(("*/5 * * * *", "sync"), ("@hourly", "report"), ("0 2 * * *", "nightly.sh"))
    decided = with_jobs(stop(), jobs, POLICY, EVENING, may_start=True)
    assert decided.action is Action.STOP
    assert decided.start_at == datetime(2026, 11, 24, 1, 45, tzinfo=UTC)  # the nightly job, not the sync


def test_a_learned_start_that_comes_first_is_kept() -> None:
    learned = Decision(
        "i-1", Action.STOP, "idle", stop_after=EVENING, start_at=datetime(2026, 11, 24, 0, 45, tzinfo=UTC),
        next_work="starts work at about 01:00 UTC (5 of the last 7 days)",
    )  # fmt: skip
    assert with_jobs(learned, crontab(("0 2 * * *", "nightly.sh")), POLICY, EVENING, may_start=True) == learned


def test_where_costguard_may_not_start_machines_it_is_not_stopped_within_a_day_before_a_job() -> None:
    decided = with_jobs(stop(), crontab(("0 2 * * *", "nightly.sh")), POLICY, EVENING, may_start=False)
    assert decided.action is Action.NONE
    assert "LearnedStarts is off" in decided.reason
    weekly = with_jobs(stop(), crontab(("0 3 * * 0", "weekly.sh")), POLICY, EVENING, may_start=False)
    # Sunday's job is days away: it does not hold the stop all week (its run is known: the warning names it)
    assert weekly == replace(stop(), runs="runs `weekly.sh` at 03:00 UTC (its crontab)")


def test_an_owner_who_turned_costguards_starts_off_for_the_machine_has_it_stopped_as_any_other() -> None:
    jobs = crontab(("0 2 * * *", "nightly.sh"))
    assert with_jobs(stop(), jobs, POLICY, EVENING, may_start=False, declined=True) == stop()


def test_jobs_in_bursts_or_at_two_close_times_still_start_the_machine_before_the_first() -> None:
    # Their next two runs are close together, but they did not run while the machine was judged idle.
    for jobs, first in (
        (crontab(("0 2,3 * * *", "burst.sh")), 2),
        (crontab(("*/10 1-3 * * *", "burst.sh")), 1),
        (MachineJobs((Job(JobKind.TIMER, "*-*-* 02:00:00; *-*-* 02:30:00", "etl.service"),), zone="UTC"), 2),
    ):
        decided = with_jobs(stop(), jobs, POLICY, EVENING, may_start=True)
        assert decided.start_at == datetime(2026, 11, 24, first - 1, 45, tzinfo=UTC), jobs


def test_a_job_every_two_hours_ran_in_a_two_hour_idle_window_and_does_not_hold_the_stop() -> None:
    decided = with_jobs(stop(), crontab(("0 */2 * * *", "poll.sh")), POLICY, EVENING, may_start=True)
    assert decided == stop()


def test_a_monotonic_timer_that_repeats_within_the_window_is_not_work() -> None:
    soon = EVENING + timedelta(minutes=3)
    timer = Job(JobKind.TIMER, "OnUnitActiveUSec=5min", "sync.service", elapse=soon)
    decided = with_jobs(stop(), MachineJobs((timer,), zone="UTC"), POLICY, EVENING, may_start=True)
    assert decided == stop()
    daily = Job(JobKind.TIMER, "OnUnitActiveUSec=1d", "backup.service", elapse=EVENING + timedelta(hours=6))
    kept = with_jobs(stop(), MachineJobs((daily,), zone="UTC"), POLICY, EVENING, may_start=True)
    assert kept.start_at == EVENING + timedelta(hours=5, minutes=45)


def test_no_jobs_reported_or_none_with_a_known_next_run_change_nothing() -> None:
    assert with_jobs(stop(), None, POLICY, EVENING, may_start=True) == stop()
    unknown = MachineJobs((Job(JobKind.TIMER, "weird~calendar", "x.service"), Job(JobKind.CRON, "@reboot", "up")))
    assert with_jobs(stop(), unknown, POLICY, EVENING, may_start=True) == stop()
    blind = Decision("i-1", Action.WARN, "idle", will_stop=False)
    assert with_jobs(blind, crontab(("0 2 * * *", "x")), POLICY, EVENING, may_start=True) == blind


def test_a_job_that_fired_moments_before_the_stop_holds_it_its_work_may_not_show_yet() -> None:
    # The nightly job fires at 00:30 and begins by waiting (nothing in the metrics, its process not yet up at the
    # check): a stop at 00:30 would stop it as it starts.
    at = datetime(2026, 11, 24, 0, 30, tzinfo=UTC)
    decided = with_jobs(stop(at), crontab(("30 0 * * *", "nightly.py")), POLICY, at, may_start=True)
    assert decided.action is Action.NONE
    assert (
        decided.reason == "it runs `nightly.py` at 00:30 UTC (its crontab), too soon after a stop at 00:30 UTC to pay"
    )
    later = at + timedelta(minutes=15)  # a sweep later its run had the time to show (the check saw nothing alive)
    assert with_jobs(stop(later), crontab(("30 0 * * *", "nightly.py")), POLICY, later, may_start=True) == stop(later)


def test_a_nightly_job_before_a_shorter_idle_window_is_not_taken_for_one_that_ran_while_the_machine_was_idle() -> None:
    # Certain idleness judged the 45 minutes after the 04:00 job's work: the job ran before them, not inside them,
    # so tomorrow's run is still work, and the stop carries its start.
    at = datetime(2026, 11, 24, 5, 30, tzinfo=UTC)
    judged = Judgement(Verdict.IDLE, "idle for 45 min", judged_from=at - timedelta(minutes=45))
    early = replace(stop(at), judgement=judged, early=True)
    decided = with_jobs(early, crontab(("0 4 * * *", "nightly.py")), POLICY, at, may_start=True)
    assert decided.action is Action.STOP
    assert decided.start_at == datetime(2026, 11, 25, 3, 45, tzinfo=UTC)
